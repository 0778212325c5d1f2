"""What the Pulsar and TubeMQ Spark read benchmarks share: brokers (running ones, or started for the run),
topics made with the launcher, and the timed runs (the Spark source and the plain client alternately, the
median of the runs reported)."""

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
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def launcher(state_dir: str, *args: str) -> str:
    """Run ``python -m mqwire.testing --state-dir state_dir ARGS`` and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, *args],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return done.stdout


@contextmanager
def brokers(system: str, state_dir: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(state dir, URLs)`` of the brokers running in ``state_dir``, or of one started for the run (stopped
    at the end)."""
    if state_dir is not None:
        yield state_dir, json.loads(launcher(state_dir, "status"))
        return
    own = tempfile.mkdtemp(prefix="mqwire-bench-")
    try:
        yield own, json.loads(launcher(own, "start", system))
    finally:
        subprocess.run([sys.executable, "-m", "mqwire.testing", "--state-dir", own, "stop"], check=False)


def spark_session(master: str) -> Any:
    """A Spark session with the data sources registered (Python workers run this interpreter)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import sparkwire

    spark = SparkSession.builder.master(master).config("spark.ui.enabled", "false").getOrCreate()
    sparkwire.register(spark)
    return spark


def spark_count(reader: Callable[[], Any], records: int, size: int) -> None:
    """Read the whole topic with the source (counting rows and summing value lengths, so every row is read
    and nothing is pruned) and check it is all there."""
    rows, total = reader().load().selectExpr("count(*)", "sum(length(value))").first()
    if rows != records or total != records * size:
        raise SystemExit(f"the Spark source read {rows} rows / {total} bytes, expected {records} / {records * size}")


async def client_count(
    getmany: Callable[..., Awaitable[Sequence[Any]]],
    records: int,
    size: int,
    ack: Callable[[Any], Awaitable[None]] | None = None,
) -> None:
    """Receive the whole topic with the plain client's ``getmany`` (acknowledging each message with ``ack``
    when given, as applications do) and check it is all there."""
    seen = total = 0
    while seen < records:
        batch = await getmany(timeout=30)
        if not batch:
            raise SystemExit(f"the plain client stopped after {seen} of {records} records")
        for message in batch:
            total += len(message.value)
            if ack is not None:
                await ack(message)
        seen += len(batch)
    if seen != records or total != records * size:
        raise SystemExit(f"the plain client read {seen} records / {total} bytes, expected {records}")


def compare(runs: dict[str, Callable[[], None]], records: int, repeat: int) -> dict[str, float]:
    """Each of ``runs`` (a full read of ``records`` records) ``repeat`` times, alternately, after one run of
    each not counted (Spark starts its Python workers and they import the project on the first read); the
    median records/s of each, printed as it goes."""
    for read in runs.values():
        read()
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for run in range(repeat):
        for name, read in runs.items():
            started = time.perf_counter()
            read()
            seconds = time.perf_counter() - started
            rates[name].append(records / seconds)
            print(f"run {run + 1}: {name:<18} {records:,} records in {seconds:6.2f} s = {records / seconds:10,.0f}/s")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    first, second = list(medians)
    print(
        f"\nmedian of {repeat}: {first} {medians[first]:,.0f} records/s, {second} {medians[second]:,.0f} "
        f"records/s: ratio {medians[first] / medians[second]:.2f}x"
    )
    return medians


Fill = Callable[[str, str, int, int], Coroutine[Any, Any, None]]


def run(system: str, description: str, topic_name: Callable[[], str], fill: Fill, client_read: Fill) -> int:
    """A benchmark's command line: make and fill a topic of ``system`` (``topic_name()``, ``fill(url, topic,
    records, size)``) unless given one, then compare its Spark source with ``client_read`` on it."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--state-dir", help=f"the launcher's state dir of a running {system} (default: start one)")
    parser.add_argument("--master", default="local[*]", help="Spark master")
    parser.add_argument("--topic", help="read this topic of --records records instead of filling a new one")
    args = parser.parse_args()
    source = f"{system}wire"
    with brokers(system, args.state_dir) as (state_dir, urls):
        url = urls[system]
        topic = args.topic
        if topic is None:
            topic = topic_name()
            launcher(state_dir, "create-topic", system, topic, "--partitions", str(args.partitions))
            asyncio.run(fill(url, topic, args.records, args.size))
        spark = spark_session(args.master)
        try:
            compare(
                {
                    f"{source} source": lambda: spark_count(
                        lambda: spark.read.format(source).option("url", url).option("subscribe", topic),
                        args.records,
                        args.size,
                    ),
                    f"{source} client": lambda: asyncio.run(client_read(url, topic, args.records, args.size)),
                },
                args.records,
                args.repeat,
            )
        finally:
            spark.stop()
    return 0
