"""What statistics and tracing cost the Kafka producer (part of ``make bench``).

One process produces the same records with four set-ups, taking turns for several rounds against one broker:

- ``bare``: kafkawire with the statistics' per-batch work stubbed out (the reference);
- ``stats``: kafkawire as shipped (statistics always on);
- ``trace 0``: plus ``mqwire.otel`` tracing, with a sampler that samples nothing (``TraceIdRatioBased(0)``:
  the wrappers then pass calls straight through);
- ``trace pb0``: the same sampler under ``ParentBased`` (the SDK's usual set-up): a sampled parent would be
  followed, so every send looks whether a context is current (none is here) before going straight through;
- ``trace 1``: plus tracing that samples everything, into a batch span processor with an exporter that drops.

Reported per set-up: the median over the rounds of records/s and of CPU microseconds per record, and the
overhead against ``bare`` (the goals: statistics < 3 % of throughput, tracing at sampler 0 < 5 %). CPU per
record is the steadier figure on a shared machine: the producer is bound by its own CPU.

    .venv/bin/python benchmarks/overhead.py [--kafka-url kafka://127.0.0.1:9092] [--records 200000] [--rounds 5]

Without ``--kafka-url`` (or ``MQWIRE_KAFKA_URL``), a Kafka broker is started for the run and stopped after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kafkawire  # noqa: E402
from mqwire.common.stats import ProducerCounters  # noqa: E402

PAYLOAD = b"x" * 100


class _NoStats(ProducerCounters):
    """The counters with the per-batch work removed: the reference without statistics."""

    def acknowledged(self, records: int, size: int, seconds: float) -> None:
        pass


def _tracing(sample: float, parent_based: bool = False) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    from mqwire.otel import Telemetry

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    ratio = TraceIdRatioBased(sample)
    provider = TracerProvider(sampler=ParentBased(ratio) if parent_based else ratio)
    provider.add_span_processor(BatchSpanProcessor(Dropping(), max_queue_size=100_000))
    return Telemetry(tracer_provider=provider, span_queue_size=100_000)


async def produce(url: str, records: int, setup: str, telemetry: Any) -> tuple[float, float]:
    """Records/s and CPU µs per record for one run on a fresh topic."""
    topic = f"overhead_{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        raw = client.producer(topic, linger_ms=5)
        async with raw:
            if setup == "bare":
                raw._sender.counters = _NoStats()
            producer = telemetry.producer(raw) if telemetry is not None else raw
            await producer.send(PAYLOAD)  # connection and metadata ready before the clock starts
            started, cpu = time.perf_counter(), time.process_time()
            enqueue = producer.enqueue
            for _ in range(records):
                await enqueue(PAYLOAD)
            await raw.flush()
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return records / wall, cpu / records * 1e6


async def run(url: str, records: int, rounds: int) -> dict[str, dict[str, float]]:
    setups: dict[str, Callable[[], Any]] = {
        "bare": lambda: None,
        "stats": lambda: None,
        "trace 0": lambda: _tracing(0.0),
        "trace pb0": lambda: _tracing(0.0, parent_based=True),
        "trace 1": lambda: _tracing(1.0),
    }
    telemetry = {name: make() for name, make in setups.items()}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    order = list(setups)
    for round_ in range(rounds):
        # The order rotates so that no set-up always runs first or last.
        for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
            results[name].append(await produce(url, records, name, telemetry[name]))
    out: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        out[name] = {
            "records_per_s": statistics.median(r for r, _ in runs),
            "cpu_us_per_record": statistics.median(c for _, c in runs),
        }
    base = out["bare"]
    for row in out.values():
        row["throughput_overhead_pct"] = (1 - row["records_per_s"] / base["records_per_s"]) * 100
        row["cpu_overhead_pct"] = (row["cpu_us_per_record"] / base["cpu_us_per_record"] - 1) * 100
    return out


def print_table(rows: dict[str, dict[str, float]], records: int, rounds: int) -> None:
    print(f"kafkawire produce, {records:,} records of {len(PAYLOAD)} B, median of {rounds} rounds")
    print(f"{'set-up':<10} {'records/s':>12} {'overhead':>9} {'CPU us/rec':>11} {'overhead':>9}")
    for name, row in rows.items():
        print(
            f"{name:<10} {row['records_per_s']:>12,.0f} {row['throughput_overhead_pct']:>8.1f}% "
            f"{row['cpu_us_per_record']:>11.2f} {row['cpu_overhead_pct']:>8.1f}%"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kafka-url", default=os.environ.get("MQWIRE_KAFKA_URL"))
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.records < 1 or args.rounds < 1:
        parser.error("--records and --rounds must be at least 1")
    state_dir = None
    url = args.kafka_url
    try:
        if url is None:
            state_dir = tempfile.mkdtemp(prefix="mqwire-overhead-")
            started = subprocess.run(
                [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "start", "kafka"],
                check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            )
            url = json.loads(started.stdout)["kafka"]
        rows = asyncio.run(run(url, args.records, args.rounds))
    finally:
        if state_dir is not None:
            stop = [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "stop"]
            subprocess.run(stop, check=False, cwd=ROOT)
    print_table(rows, args.records, args.rounds)
    out = ROOT / "build" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"overhead-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"records": args.records, "rounds": args.rounds, "results": rows}, indent=2))
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
