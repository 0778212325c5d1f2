"""``MQWIRE_PURE_PYTHON=1`` really runs the Python code: with it set, no compiled speedup is loaded and every
module that chooses one uses its Python function; without it, each takes its compiled one. A run of the suite
with the variable set (the runtime matrix's pure-Python step) would otherwise prove nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# Which implementation each choosing module took, and which extension modules were imported.
PROBE = """
import json, sys
from kafkawire import delivery, partitioner
from kafkawire.protocol import records
from pulsarwire.protocol import batch
from mqwire.common import blocking_enqueue, blocking_future
import pulsarwire, tubemqwire
print(json.dumps({
    "records": [records.COMPILED, records._decode_records is records.decode_records_py,
                records._append_records is records.append_records_py],
    "partitioner": [partitioner.COMPILED, partitioner.partition_for_key is partitioner.partition_for_key_py],
    "batch": [batch.COMPILED, batch.encode_entry_fast is batch.encode_entry_fields],
    "delivery": [hasattr(delivery.RecordFuture, "_result_slow"), "_result_slow" not in vars(delivery.RecordFuture)],
    "blocking_future": blocking_future.COMPILED,
    "blocking_enqueue": blocking_enqueue.COMPILED,
    "loaded": sorted(name for name in sys.modules if name.endswith("_speedups")),
}))
"""
SPEEDUPS = [
    "kafkawire._delivery_speedups",
    "kafkawire._partitioner_speedups",
    "kafkawire.protocol._records_speedups",
    "mqwire.common._enqueue_speedups",
    "mqwire.common._gc_speedups",
    "pulsarwire.protocol._batch_speedups",
]


def probe(pure: bool) -> dict[str, Any]:
    env = {name: value for name, value in os.environ.items() if name != "MQWIRE_PURE_PYTHON"}
    if pure:
        env["MQWIRE_PURE_PYTHON"] = "1"
    answer = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert answer.returncode == 0, answer.stderr
    result: dict[str, Any] = json.loads(answer.stdout)
    return result


def test_the_variable_loads_no_speedup_and_uses_the_python_code() -> None:
    report = probe(pure=True)
    assert report["loaded"] == []
    assert report["records"] == [False, True, True]
    assert report["partitioner"] == [False, True]
    assert report["batch"] == [False, True]
    assert report["delivery"] == [False, True]
    assert report["blocking_future"] is False
    assert report["blocking_enqueue"] is False


def test_without_it_every_built_speedup_is_taken() -> None:
    # The speedups are built wherever the suite runs (make's venv, the matrix's environments): without the
    # variable, the comparison above would otherwise hold for an install that has none.
    report = probe(pure=False)
    assert report["loaded"] == SPEEDUPS
    assert report["records"] == [True, False, False]
    assert report["partitioner"] == [True, False]
    assert report["batch"] == [True, False]
    assert report["delivery"] == [True, False]
    assert report["blocking_future"] is True
    assert report["blocking_enqueue"] is True
