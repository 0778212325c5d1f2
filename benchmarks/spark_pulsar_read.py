"""Records per second reading one Pulsar topic: the ``pulsarwire`` Spark source against the plain pulsarwire
client reading the same topic in one process.

A partitioned topic (``--partitions``) of ``--records`` records of ``--size`` bytes is made with the launcher
and filled once with pulsarwire; then, alternately, ``--repeat`` times each: the Spark source reads it whole
in a local SparkSession (one task per topic partition; the query counts the rows and sums the value lengths,
so every row is read), and one pulsarwire reader (non-durable, as the source's tasks read) receives every
record with ``getmany``. The report is the median of the runs, after one run of each not counted (Spark's
Python workers start then).

    python benchmarks/spark_pulsar_read.py --state-dir /tmp/shared-brokers --records 200000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid

from spark_versus_client import brokers, compare, launcher, spark_count, spark_session

import pulsarwire


async def fill(url: str, topic: str, records: int, size: int) -> None:
    value = b"p" * size
    async with (
        pulsarwire.connect(url) as client,
        client.producer(topic, batching_max_messages=1000, max_pending_messages=10_000) as producer,
    ):
        futures = [await producer.enqueue(value) for _ in range(records)]
        await producer.flush()
        for future in futures:
            future.result()


async def client_read(url: str, topic: str, records: int, size: int) -> None:
    """Every record of the topic with one pulsarwire reader, as a one-process application reads it."""
    seen = total = 0
    async with pulsarwire.connect(url) as client, client.reader(topic, start="earliest") as reader:
        while seen < records:
            batch = await reader.getmany(timeout=30)
            if not batch:
                raise SystemExit(f"the plain client stopped after {seen} of {records} records")
            seen += len(batch)
            total += sum(len(m.value) for m in batch)
    if seen != records or total != records * size:
        raise SystemExit(f"the plain client read {seen} records / {total} bytes, expected {records}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--state-dir", help="the launcher's state dir of a running Pulsar (default: start one)")
    parser.add_argument("--master", default="local[*]", help="Spark master")
    parser.add_argument("--topic", help="read this topic of --records records instead of filling a new one")
    args = parser.parse_args()
    with brokers("pulsar", args.state_dir) as (state_dir, urls):
        url = urls["pulsar"]
        topic = args.topic
        if topic is None:
            topic = f"persistent://public/default/spark-bench-{uuid.uuid4().hex[:8]}"
            launcher(state_dir, "create-topic", "pulsar", topic, "--partitions", str(args.partitions))
            asyncio.run(fill(url, topic, args.records, args.size))
        spark = spark_session(args.master)
        try:
            compare(
                {
                    "pulsarwire source": lambda: spark_count(
                        lambda: spark.read.format("pulsarwire").option("url", url).option("subscribe", topic),
                        args.records,
                        args.size,
                    ),
                    "pulsarwire client": lambda: asyncio.run(client_read(url, topic, args.records, args.size)),
                },
                args.records,
                args.repeat,
            )
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
