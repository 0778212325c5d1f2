"""Records per second reading one TubeMQ topic: the ``tubemqwire`` Spark source against the plain tubemqwire
client reading the same topic in one process.

A topic of ``--partitions`` partitions is made with the launcher and, once the broker takes sends to it,
filled with ``--records`` records of ``--size`` bytes by tubemqwire; then, alternately, ``--repeat`` times
each: the Spark source reads it whole in a local SparkSession (one task per partition; the query counts the
rows and sums the value lengths, so every row is read), and one tubemqwire consumer of a group of its own
reads it from the start with ``getmany``, acknowledging every message as applications do. The report is
the median of the runs, after one run of each not counted (Spark's Python workers start then).

    python benchmarks/spark_tubemq_read.py --state-dir /tmp/shared-brokers --records 200000
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid

from clients import tubemq_in_flight
from spark_versus_client import client_count, run

import tubemqwire

TOPIC_READY_SECONDS = 90.0  # a new topic takes up to ~30 s to reach the broker; a loaded machine takes longer


async def fill(url: str, topic: str, records: int, size: int) -> None:
    """``records`` values on ``topic``, every send checked; the first one retried until the topic is served."""
    value = b"t" * size
    async with tubemqwire.connect(url) as client:
        deadline = time.monotonic() + TOPIC_READY_SECONDS
        async with client.producer(topic, max_in_flight=tubemq_in_flight(size)) as producer:
            while True:
                try:
                    await producer.send(value)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(2)
            futures = [await producer.enqueue(value) for _ in range(records - 1)]
            await producer.flush()
            for future in futures:
                future.result()


async def client_read(url: str, topic: str, records: int, size: int) -> None:
    """Every record of the topic with one tubemqwire consumer, as a one-process application reads it."""
    async with tubemqwire.connect(url) as client, client.consumer(topic, start="earliest") as consumer:
        await client_count(consumer.getmany, records, size, consumer.ack)


if __name__ == "__main__":
    sys.exit(run("tubemq", __doc__ or "", lambda: f"sparkbench{uuid.uuid4().hex[:8]}", fill, client_read))
