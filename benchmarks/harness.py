"""A broker for a benchmark script to run on: the given URL, or one started for the run."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_broker(name: str, url: str | None) -> Iterator[dict[str, str]]:
    """The URLs of a broker: the given one, or one started with the project's launcher for this run."""
    if url is not None:
        yield {name: url}
        return
    state_dir = tempfile.mkdtemp(prefix="mqwire-bench-")
    started = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "start", name],
        check=True, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield json.loads(started.stdout)
    finally:
        subprocess.run([sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "stop"], check=False)
