"""Ctrl-C for tests that check how blocking calls take it."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread while this lasts, whatever the process was started
    with: a runner that starts the tests in the background (``nohup``, ``&``, a pool of workers) hands them
    SIGINT ignored, and a test that sends one would then wait for it forever."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
