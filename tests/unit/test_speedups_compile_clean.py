"""Every C extension compiles without a warning under -Wall -Wextra, with the compiler that builds the package.

A warning there is often the first sign of undefined behaviour (a signed/unsigned mix-up, a missed field),
so it fails here rather than scroll past in a pip log. ``make fuzz`` compiles the same files with clang and
the same flags for its sanitizer run.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    "kafkawire/protocol/_records_speedups.c",
    "kafkawire/_delivery_speedups.c",
    "kafkawire/_partitioner_speedups.c",
    "pulsarwire/protocol/_batch_speedups.c",
    "common/_gc_speedups.c",
    "common/_enqueue_speedups.c",
]


def test_every_extension_is_listed_here() -> None:
    found = sorted(
        str(path.relative_to(ROOT))
        for top in ("kafkawire", "pulsarwire", "tubemqwire", "common")
        for path in (ROOT / top).rglob("*.c")
    )
    assert found == sorted(SOURCES)


@pytest.mark.parametrize("source", SOURCES)
def test_compiles_without_warnings(source: str, tmp_path: Path) -> None:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    assert shutil.which(compiler[0]), f"no C compiler {compiler[0]!r}: the extensions cannot be built either"
    include = sysconfig.get_paths()["include"]
    command = [*compiler, "-c", "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror", f"-I{include}"]
    command += [str(ROOT / source), "-o", str(tmp_path / "speedups.o")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
