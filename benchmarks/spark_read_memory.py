"""Peak memory of one Spark task reading a large partition with the ``kafkawire``, ``pulsarwire`` or
``tubemqwire`` source (``--system``).

A one-partition topic of ``--records`` records of ``--size`` bytes is produced with the system's client
(Pulsar: a topic without partitions; TubeMQ: a topic of one partition made with the launcher in
``--state-dir``, or on a TubeMQ started for the run); then a fresh
Python process does what a Spark Python worker does for one input partition of the source (the reader's
``read()`` over the whole partition, each Arrow batch handed on and dropped as Spark's worker does once it
has sent it) and reports its peak resident set size (``VmHWM``) and the size of the batches. With
``--materialise`` the same process keeps every batch, as the reader did before it handed batches over
while fetching: the difference is what a task no longer holds. Not a timed test: a figure for the docs.

    python benchmarks/spark_read_memory.py --url kafka://127.0.0.1:9092 --records 2000000
    python benchmarks/spark_read_memory.py --system pulsar --state-dir /tmp/shared-brokers --records 500000
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
from typing import Any

from harness import local_broker
from spark_pulsar_read import fill as pulsar_fill
from spark_tubemq_read import fill as tubemq_fill
from spark_versus_client import brokers, launcher

import kafkawire


async def fill(url: str, topic: str, records: int, size: int) -> None:
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        async with client.producer(topic, linger_ms=5, batch_size=262144) as producer:
            for i in range(records):
                await producer.enqueue(os.urandom(8) + b"%08d" % i + b"x" * max(size - 16, 0))
            await producer.flush()


def batch_reader(system: str, url: str, topic: str) -> Any:
    """The source's batch reader of ``topic``, as Spark makes it on the driver."""
    options = {"url": url, "subscribe": topic}
    if system == "pulsar":
        from sparkwire.pulsar_read import PulsarBatchReader

        return PulsarBatchReader(options)
    if system == "tubemq":
        from sparkwire.tubemq_read import TubeMQBatchReader

        return TubeMQBatchReader(options)
    from sparkwire.kafka import KafkaBatchReader

    return KafkaBatchReader(options)


def peak_rss_mib() -> float:
    """This process's peak resident set size. Linux's ``VmHWM`` is that of this program alone: ``ru_maxrss``
    carries over the peak of the process that forked it (here the one that filled the topic) through exec."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(system: str, url: str, topic: str, materialise: bool) -> dict[str, float]:
    """In this process: read the whole partition as the Spark task would, return peak RSS and batch sizes."""
    reader = batch_reader(system, url, topic)
    (part,) = reader.partitions()
    before = peak_rss_mib()
    rows, largest, kept = 0, 0, []
    for batch in reader.read(part):
        rows += batch.num_rows
        largest = max(largest, batch.nbytes)
        if materialise:
            kept.append(batch)
    peak = peak_rss_mib()
    return {"rows": rows, "rss_before_mib": before, "peak_rss_mib": peak, "largest_batch_mib": largest / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("kafka", "pulsar", "tubemq"), default="kafka")
    parser.add_argument("--url", help="Kafka: a broker (default: one started for this run)")
    parser.add_argument(
        "--state-dir", help="Pulsar, TubeMQ: the launcher's state dir of a running broker (default: start one)"
    )
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--topic", help="read this existing one-partition topic instead of filling a new one")
    parser.add_argument("--materialise", action="store_true", help="also measure keeping every batch")
    parser.add_argument("--child", nargs=4, metavar=("SYSTEM", "URL", "TOPIC", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        system, url, topic, mode = args.child
        print(json.dumps(measure(system, url, topic, mode == "keep")))
        return 0
    with ExitStack() as stack:
        topic = args.topic
        if args.system == "kafka":
            url = args.url or stack.enter_context(local_broker("kafka", None))["kafka"]
            if topic is None:
                topic = f"mem-{uuid.uuid4().hex[:8]}"
                asyncio.run(fill(url, topic, args.records, args.size))
        else:
            state_dir, urls = stack.enter_context(brokers(args.system, args.state_dir))
            url = urls[args.system]
            if topic is None and args.system == "pulsar":
                topic = f"persistent://public/default/mem-{uuid.uuid4().hex[:8]}"
                launcher(state_dir, "create-topic", "pulsar", topic, "--partitions", "0")
                asyncio.run(pulsar_fill(url, topic, args.records, args.size))
            elif topic is None:
                topic = f"mem{uuid.uuid4().hex[:8]}"
                launcher(state_dir, "create-topic", "tubemq", topic, "--partitions", "1")
                asyncio.run(tubemq_fill(url, topic, args.records, args.size))
        for mode in ("stream", "keep") if args.materialise else ("stream",):
            done = subprocess.run(
                [sys.executable, __file__, "--child", args.system, url, topic, mode],
                check=True,
                capture_output=True,
                text=True,
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
