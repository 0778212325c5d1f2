"""The decoders' tests against the C extensions built with AddressSanitizer and UndefinedBehaviorSanitizer.

``make fuzz`` compiles each extension with clang into a directory of its own (the package's own builds are
left alone) and runs this under the ASan runtime (``LD_PRELOAD``: the interpreter itself is not
instrumented). Each instrumented extension is loaded under its module's name before anything imports the
package, so every test below runs it; the build is compiled with ``-fno-sanitize-recover=all``, so a
sanitizer report aborts the process and fails the run::

    python tests/fuzz/run_sanitized.py BUILD_DIR [pytest arguments]
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import pytest

# File name in the build directory (the C source's stem) -> the module it is imported as.
EXTENSIONS = {
    "_records_speedups": "kafkawire.protocol._records_speedups",
    "_delivery_speedups": "kafkawire._delivery_speedups",
    "_partitioner_speedups": "kafkawire._partitioner_speedups",
    "_batch_speedups": "pulsarwire.protocol._batch_speedups",
    "_gc_speedups": "mqwire.common._gc_speedups",
    "_enqueue_speedups": "mqwire.common._enqueue_speedups",
}

# Every test that runs a compiled loop: the property tests comparing it with Python, and the fuzzers.
ROOT = Path(__file__).resolve().parents[2]
TESTS = [
    "tests/fuzz/test_fuzz_decoders.py",
    "tests/unit/test_kafka_records_speedups.py",
    "tests/unit/test_kafka_records_int64_limits.py",
    "tests/unit/test_kafka_protocol_records.py",
    "tests/unit/test_kafka_delivery.py",
    "tests/unit/test_kafka_client_partitioner.py",
    "tests/unit/test_pulsar_batch_speedups.py",
    "tests/unit/test_pulsar_batch.py",
    "tests/unit/test_blocking_future.py",
    "tests/unit/test_blocking_enqueue_put_value.py",
    "tests/unit/test_blocking_bytes_enqueue.py",
    "tests/unit/test_kafka_sync_slices.py",
    "tests/unit/test_kafka_batch_buffer_reuse.py",
]


def load_instrumented(build_dir: Path) -> None:
    """Put each instrumented extension in ``sys.modules`` under its module's name; fails if one is missing."""
    for stem, name in EXTENSIONS.items():
        if name in sys.modules:
            raise SystemExit(f"{name} was imported before the instrumented build could replace it")
        path = build_dir / f"{stem}.so"
        if not path.is_file():
            raise SystemExit(f"no instrumented build of {name} at {path}")
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)


def check_in_use(build_dir: Path) -> None:
    """The package's modules picked the instrumented builds (not their own, nor the Python fallbacks)."""
    from kafkawire import delivery, partitioner
    from kafkawire.protocol import records
    from pulsarwire.protocol import batch

    for module in (records._speedups, partitioner._speedups, batch._speedups):
        if module is None or Path(module.__file__ or "").parent.resolve() != build_dir.resolve():
            raise SystemExit(f"the instrumented build is not in use: {module!r}")
    from mqwire.common import blocking_future

    gc_speedups = sys.modules["mqwire.common._gc_speedups"]
    if blocking_future._untrack is not gc_speedups.untrack:
        raise SystemExit("the instrumented collector switches are not in use")
    from mqwire.common import blocking_enqueue

    if blocking_enqueue._speedups is not sys.modules["mqwire.common._enqueue_speedups"]:
        raise SystemExit("the instrumented enqueue step is not in use")
    if delivery.RecordFuture.__flags__ & (1 << 14):  # Py_TPFLAGS_HAVE_GC: the Python class, not the compiled type
        raise SystemExit("the instrumented record futures are not in use")


def main(argv: list[str]) -> int:
    """Load the instrumented extensions from ``argv[0]``, then run the tests with the rest as pytest arguments."""
    if not argv:
        raise SystemExit(__doc__)
    build_dir = Path(argv[0])
    load_instrumented(build_dir)
    check_in_use(build_dir)
    # Python-level capture only: a sanitizer writes its report to file descriptor 2 and then aborts, which
    # would lose a report captured at the descriptor level with the test's output.
    return int(pytest.main(["--capture=sys", *(str(ROOT / test) for test in TESTS), *argv[1:]]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
