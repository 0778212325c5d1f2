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

import sys
import uuid

from spark_versus_client import client_count, run

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
    async with pulsarwire.connect(url) as client, client.reader(topic, start="earliest") as reader:
        await client_count(reader.getmany, records, size)


if __name__ == "__main__":
    sys.exit(
        run(
            "pulsar",
            __doc__ or "",
            lambda: f"persistent://public/default/spark-bench-{uuid.uuid4().hex[:8]}",
            fill,
            client_read,
        )
    )
