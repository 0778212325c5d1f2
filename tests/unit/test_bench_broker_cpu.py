"""The benchmark suite's reading of the brokers' CPU time over a client's measured interval."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from measure import Clock, cpu_seconds, process_cpu_seconds
from suite import Row, broker_pids, medians

TICK = 1 / os.sysconf("SC_CLK_TCK")

# Spins until it has used the CPU time it is given, says so, then waits for its standard input to close.
SPINNER = """
import sys, time
while time.process_time() < float(sys.argv[1]):
    pass
print("spun", flush=True)
sys.stdin.read()
"""


def test_a_process_cpu_time_is_what_it_reports_itself() -> None:
    before = cpu_seconds()
    read = process_cpu_seconds([os.getpid()])
    after = cpu_seconds()
    assert read is not None
    assert before - 2 * TICK <= read <= after + 2 * TICK


def test_the_clock_measures_the_named_processes_over_its_interval() -> None:
    spinner = subprocess.Popen(
        [sys.executable, "-c", SPINNER, "0.4"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        clock = Clock(_brokers=[spinner.pid])
        clock.start()
        assert spinner.stdout is not None
        assert spinner.stdout.readline() == "spun\n"
        clock.stop()
    finally:
        spinner.communicate("")
    assert clock.broker_cpu_used is not None
    # The interpreter's start-up may fall before the clock started, the spinning itself cannot.
    assert 0.4 - 0.05 <= clock.broker_cpu_used <= 0.4 + 1.0


def test_without_named_processes_the_clock_reports_no_broker_time() -> None:
    clock = Clock(_brokers=[])
    clock.start()
    clock.stop()
    assert clock.broker_cpu_used is None


def test_a_process_that_is_gone_gives_no_reading() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert process_cpu_seconds([os.getpid(), gone.pid]) is None


def test_broker_pids_are_read_from_the_status_of_the_brokers() -> None:
    status = {
        "kafka": "kafka://127.0.0.1:9092",
        "state_dir": "/tmp/x",
        "brokers": {"kafka": {"pids": {"kafka": 41}}, "tubemq": {"pids": {"master": 52, "broker": 51}}},
    }
    assert broker_pids(status) == {"kafka": [41], "tubemq": [51, 52]}


def test_rows_and_medians_give_the_brokers_cpu_per_record_and_the_cores_kept_busy() -> None:
    rows = [
        Row("kafka", 100, 1, "kafkawire", "consume", 1000, 1.0, 0.5, 40.0, broker_cpu_seconds=broker)
        for broker in (0.7, 0.9, 1.1)
    ]
    assert rows[0].broker_cpu_us == pytest.approx(700.0)
    assert rows[0].cores_busy == pytest.approx(1.2)
    (median,) = medians(rows)
    assert median.broker_cpu_us == pytest.approx(900.0)
    assert median.cores_busy == pytest.approx(1.4)
    without = Row("kafka", 100, 1, "kafka-java-perf", "produce", 1000, 1.0, 0.5, 40.0)
    assert without.broker_cpu_us is None and without.cores_busy is None
