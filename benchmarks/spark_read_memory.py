"""Peak memory of one Spark task reading a large Kafka partition with the ``kafkawire`` source.

A one-partition topic of ``--records`` records of ``--size`` bytes is produced with kafkawire; then a fresh
Python process does what a Spark Python worker does for one input partition of the source (the reader's
``read()`` over the whole partition, each Arrow batch handed on and dropped as Spark's worker does once it
has sent it) and reports its peak resident set size (``ru_maxrss``) and the size of the batches. With
``--materialise`` the same process keeps every batch, as the reader did before it handed batches over
while fetching: the difference is what a task no longer holds. Not a timed test: a figure for the docs.

    python benchmarks/spark_read_memory.py --url kafka://127.0.0.1:9092 --records 2000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import uuid
from contextlib import ExitStack

from harness import local_broker

import kafkawire


async def fill(url: str, topic: str, records: int, size: int) -> None:
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        async with client.producer(topic, linger_ms=5, batch_size=262144) as producer:
            for i in range(records):
                await producer.enqueue(os.urandom(8) + b"%08d" % i + b"x" * max(size - 16, 0))
            await producer.flush()


def measure(url: str, topic: str, materialise: bool) -> dict[str, float]:
    """In this process: read the whole partition as the Spark task would, return peak RSS and batch sizes."""
    from sparkwire.kafka import KafkaBatchReader

    reader = KafkaBatchReader({"url": url, "subscribe": topic})
    (part,) = reader.partitions()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows, largest, kept = 0, 0, []
    for batch in reader.read(part):
        rows += batch.num_rows
        largest = max(largest, batch.nbytes)
        if materialise:
            kept.append(batch)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": rows, "rss_before_mib": before, "peak_rss_mib": peak, "largest_batch_mib": largest / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a Kafka broker (default: one started for this run)")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--topic", help="read this existing one-partition topic instead of filling a new one")
    parser.add_argument("--materialise", action="store_true", help="also measure keeping every batch")
    parser.add_argument("--child", nargs=3, metavar=("URL", "TOPIC", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, topic, mode = args.child
        print(json.dumps(measure(url, topic, mode == "keep")))
        return 0
    with ExitStack() as stack:
        url = args.url or stack.enter_context(local_broker("kafka", None))["kafka"]
        topic = args.topic
        if topic is None:
            topic = f"mem-{uuid.uuid4().hex[:8]}"
            asyncio.run(fill(url, topic, args.records, args.size))
        for mode in ("stream", "keep") if args.materialise else ("stream",):
            done = subprocess.run(
                [sys.executable, __file__, "--child", url, topic, mode], check=True, capture_output=True, text=True
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            label = "every batch kept" if mode == "keep" else "batches handed over"
            print(
                f"{label}: {result['rows']:,} rows, RSS {result['rss_before_mib']:.0f} MiB before reading, "
                f"peak {result['peak_rss_mib']:.0f} MiB; largest batch {result['largest_batch_mib']:.1f} MiB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
