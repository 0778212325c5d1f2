"""Rows per second reading one Kafka topic through Spark: the ``kafkawire`` source against Spark's own.

The topic (``--records`` of ``--size`` bytes over ``--partitions`` partitions) is produced once with
kafkawire; then each source reads it whole in the same local SparkSession, alternately, ``--repeat``
times. The query sums the value lengths, so every row is read and nothing is pruned away. Spark's own
source is ``spark-sql-kafka-0-10`` from Maven Central (4.2.0, the newest published there).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid

from harness import local_broker

import kafkawire

SPARK_KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


async def fill(url: str, topic: str, records: int, size: int, partitions: int) -> None:
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=partitions)
        value = os.urandom(size)
        async with client.producer(topic, linger_ms=5, batch_size=262144) as producer:
            for _ in range(records):
                await producer.enqueue(value)
            await producer.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    parser.add_argument("--master", default="local[*]", help="Spark master (spark_cluster_kafka_read.py gives its own)")
    parser.add_argument("--topic", help="read this topic of --records records instead of filling a new one")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import sparkwire

    with local_broker("kafka", args.url) as urls:
        url = urls["kafka"]
        topic = args.topic
        if topic is None:
            topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
            asyncio.run(fill(url, topic, args.records, args.size, args.partitions))
        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.ui.enabled", "false")
            .config("spark.jars.packages", SPARK_KAFKA_PACKAGE)
            .getOrCreate()
        )
        sparkwire.register(spark)
        readers = {
            "kafkawire": lambda: spark.read.format("kafkawire").option("url", url).option("subscribe", topic),
            "spark-kafka": lambda: (
                spark.read.format("kafka")
                .option("kafka.bootstrap.servers", url.removeprefix("kafka://"))
                .option("subscribe", topic)
            ),
        }
        best: dict[str, float] = {}
        try:
            for run in range(args.repeat):
                for name, reader in readers.items():
                    started = time.perf_counter()
                    (rows, total) = reader().load().selectExpr("count(*)", "sum(length(value))").first()
                    seconds = time.perf_counter() - started
                    if rows != args.records or total != args.records * args.size:
                        raise SystemExit(f"{name} read {rows} rows / {total} bytes, expected {args.records}")
                    rate = rows / seconds
                    best[name] = max(best.get(name, 0.0), rate)
                    print(f"run {run + 1}: {name:<12} {rows:,} rows in {seconds:6.2f} s = {rate:12,.0f} rows/s")
        finally:
            spark.stop()
    print(
        f"\nbest of {args.repeat}: kafkawire {best['kafkawire']:,.0f} rows/s, Spark's Kafka source "
        f"{best['spark-kafka']:,.0f} rows/s: ratio {best['kafkawire'] / best['spark-kafka']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
