"""Rows per second writing a DataFrame to Kafka through Spark: the ``kafkawire`` sink against Spark's own Kafka
sink (``spark-sql-kafka-0-10``, its Java producer with its defaults), alternately in the same session.

A DataFrame of ``--records`` rows with a ``--size``-byte value each (unique per row: the row number padded)
is cached in memory and counted first, so the runs measure the write and not the rows' making. Each run
writes it to a fresh topic of ``--partitions`` partitions in ``--partitions`` Spark tasks; the write returns
once every record is acknowledged, and the topic's end offsets are then checked to add up to the rows
written. A first, untimed run of each starts Spark's Python workers and loads the Java producer; the median
of the ``--repeat`` runs after it is quoted. ``--records`` may list several sizes (``500000,2000000``): each
is measured in turn in the same session, the first one after the untimed runs.

``--task`` measures, without Spark, what one writer task costs in its own process (wall and CPU time per
row, same records, the paths alternated ``--repeat`` times): the one-``enqueue``-per-row sender given Rows,
and the ``enqueue_many`` sender given Rows (the stream writer) and Arrow batches (the batch writer). On a
loaded machine this says more than the Spark runs, whose times swing with what else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from harness import local_broker
from spark_kafka_read import SPARK_KAFKA_PACKAGE

import kafkawire


async def create_topic(url: str, topic: str, partitions: int) -> None:
    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=partitions)


async def records_in(url: str, topic: str, partitions: int) -> int:
    async with kafkawire.connect(url) as client, client.admin() as admin:
        ends = await admin.list_offsets({kafkawire.TopicPartition(topic, p): "latest" for p in range(partitions)})
    return sum(int(end.offset) for end in ends.values())


def task_costs(url: str, records: int, size: int, partitions: int, repeat: int) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import Row

    from sparkwire.kafka import WRITE_ROWS
    from sparkwire.writing import RowsSender

    values = [str(i).rjust(size, "x").encode() for i in range(records)]
    make = Row("value")
    inputs: dict[str, tuple[RowsSender, Callable[[], Iterator[Any]]]] = {
        "enqueue per row, Rows": (RowsSender(kafkawire.connect), lambda: iter([make(v) for v in values])),
        "enqueue_many, Rows": (WRITE_ROWS, lambda: iter([make(v) for v in values])),
        "enqueue_many, Arrow": (
            WRITE_ROWS,
            lambda: iter(pa.table({"value": pa.array(values, pa.binary())}).to_batches(max_chunksize=10_000)),
        ),
    }
    costs: dict[str, list[tuple[float, float]]] = {name: [] for name in inputs}
    for _ in range(repeat):
        for name, (sender, given) in inputs.items():
            topic = f"spark-write-bench-{uuid.uuid4().hex[:8]}"
            asyncio.run(create_topic(url, topic, partitions))
            rows = given()
            wall, cpu = time.perf_counter(), time.process_time()
            written = asyncio.run(sender(url, topic, rows, {}))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if written != records or asyncio.run(records_in(url, topic, partitions)) != records:
                raise SystemExit(f"{name}: {written} acknowledged, expected {records}")
            costs[name].append((wall, cpu))
            print(f"{name:<22} {records / wall:10,.0f} rows/s  {cpu / records * 1e6:5.2f} µs CPU/row")
    print(f"\nmedian of {repeat}, one task of {records:,} rows of {size} B:")
    for name, runs in costs.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:<22} {records / wall:10,.0f} rows/s  {cpu / records * 1e6:5.2f} µs CPU/row")


def measure(spark: Any, url: str, records: int, args: argparse.Namespace, warm_up: bool) -> dict[str, list[float]]:
    """Rows per second of each sink writing ``records`` rows, ``args.repeat`` times alternately (after an untimed
    run of each if ``warm_up``); every run's topic is checked to hold exactly ``records`` records."""
    columns = [f"CAST(lpad(CAST(id AS STRING), {args.size}, 'x') AS BINARY) AS value"]
    if args.keys:
        columns.append("CAST(CAST(id AS STRING) AS BINARY) AS key")
    df = spark.range(records, numPartitions=args.partitions).selectExpr(*columns).cache()
    df.count()
    writers: dict[str, Callable[[str], Any]] = {
        "kafkawire": lambda topic: df.write.format("kafkawire").option("url", url).option("topic", topic),
        "spark-kafka": lambda topic: (
            df.write.format("kafka")
            .option("kafka.bootstrap.servers", url.removeprefix("kafka://"))
            .option("topic", topic)
        ),
    }
    rates: dict[str, list[float]] = {name: [] for name in writers}
    for run in range(-1 if warm_up else 0, args.repeat):
        for name, writer in writers.items():
            topic = f"spark-write-bench-{uuid.uuid4().hex[:8]}"
            asyncio.run(create_topic(url, topic, args.partitions))
            started = time.perf_counter()
            writer(topic).mode("append").save()
            seconds = time.perf_counter() - started
            written = asyncio.run(records_in(url, topic, args.partitions))
            if written != records:
                raise SystemExit(f"{name}: topic {topic} holds {written} records, expected {records}")
            if run < 0:
                print(f"warm-up: {name:<12} {records:,} rows in {seconds:6.2f} s", flush=True)
                continue
            rate = records / seconds
            rates[name].append(rate)
            print(f"run {run + 1}: {name:<12} {records:,} rows in {seconds:6.2f} s = {rate:12,.0f} rows/s", flush=True)
    df.unpersist()
    return rates


def record_counts(text: str) -> list[int]:
    """``--records``: one row count, or several separated by commas."""
    try:
        counts = [int(part.replace("_", "")) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a row count or a list of them: {text!r}") from None
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"row counts must be positive: {text!r}")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=record_counts, default=[500_000], help="rows, or rows,rows,...")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keys", action="store_true", help="give each row a key (its row number)")
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--task", action="store_true", help="one writer task's cost per path, without Spark")
    args = parser.parse_args()
    if args.task:
        with local_broker("kafka", args.url) as urls:
            for records in args.records:
                task_costs(urls["kafka"], records, args.size, args.partitions, args.repeat)
        return 0
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import sparkwire

    with local_broker("kafka", args.url) as urls:
        url = urls["kafka"]
        builder = SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
        builder = builder.config("spark.jars.packages", SPARK_KAFKA_PACKAGE)
        spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
        sparkwire.register(spark)
        medians: list[tuple[int, float, float]] = []
        try:
            for index, records in enumerate(args.records):
                rates = measure(spark, url, records, args, warm_up=index == 0)
                medians.append(
                    (records, statistics.median(rates["kafkawire"]), statistics.median(rates["spark-kafka"]))
                )
        finally:
            spark.stop()
    print(f"\nmedians of {args.repeat}, {args.partitions} tasks, {args.size} B values:")
    for records, ours, theirs in medians:
        print(
            f"{records:>11,} rows: kafkawire {ours:12,.0f} rows/s, Spark's Kafka sink {theirs:12,.0f} rows/s: "
            f"ratio {ours / theirs:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
