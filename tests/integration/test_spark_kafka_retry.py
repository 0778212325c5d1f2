"""A Spark write through the kafkawire sink whose task fails partway through its first attempt: Spark tries the
task again, the job succeeds, and every row is in the topic at least once (as with Spark's own Kafka sink).

The session is ``local[2,2]``: two threads, and a task may fail once and run again (plain ``local[2]`` fails the
job at a task's first failure), so the retry is Spark's own and costs no cluster."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from tests.integration.spark_session import local_session
from tests.integration.test_spark_kafka import SPARK_KAFKA_PACKAGE, _consume, _create

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROWS, TASKS = 80_000, 4
FAILING_TASK = 1
# The failing attempt hands this many of its rows on to the sink, waits until the sink has some of them in the
# topic (so the attempt dies with records written and others still in flight), then raises.
HANDED_ON = 12_000
WRITTEN_BEFORE_FAILING = 2_000
BATCH = 1_000  # rows per Arrow batch to the sink, which so gets its rows in many batches while the task runs


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session(
        "sparkwire-retry-tests",
        **{
            "spark.master": "local[2,2]",
            "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH),
            # Only read if this module's session is the first one of the run (it starts the JVM).
            "spark.jars.packages": SPARK_KAFKA_PACKAGE,
        },
    )


async def _records_in(url: str, topic: str, partitions: int) -> int:
    async with kafkawire.connect(url) as client, client.admin() as admin:
        ends = await admin.list_offsets({kafkawire.TopicPartition(topic, p): "latest" for p in range(partitions)})
    return sum(int(end.offset) for end in ends.values())


async def _read_all(url: str, topic: str, partitions: int) -> list[bytes]:
    """Every record of the topic, up to its end offsets as they are now."""
    total = await _records_in(url, topic, partitions)
    got = [bytes(m.value) for m in await _consume(url, topic, partitions, total)]
    assert len(got) == total
    return got


def fail_first_attempt(url: str, watched: str, marker: Path) -> Any:
    """The function of the rows' ``mapPartitions``: rows pass unchanged, except that the first attempt of task
    ``FAILING_TASK`` raises after handing ``HANDED_ON`` rows on, once topic ``watched`` (where that task's rows
    go) holds ``WRITTEN_BEFORE_FAILING`` records; ``marker`` then gets how many it held. Self-contained (it
    names no function of this module), since Spark's Python workers cannot import the tests."""
    failing_task, handed_on_limit, wanted = FAILING_TASK, HANDED_ON, WRITTEN_BEFORE_FAILING

    def run(rows: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        import kafkawire

        async def written() -> int:
            async with kafkawire.connect(url) as client, client.admin() as admin:
                ends = await admin.list_offsets({kafkawire.TopicPartition(watched, 0): "latest"})
            return sum(int(end.offset) for end in ends.values())

        context = TaskContext.get()
        assert context is not None
        failing = context.partitionId() == failing_task and context.attemptNumber() == 0
        for handed_on, row in enumerate(rows):
            if failing and handed_on >= handed_on_limit:
                # Bounded: the attempt fails either way, and the test then finds too few written.
                deadline = time.monotonic() + 60
                while asyncio.run(written()) < wanted and time.monotonic() < deadline:
                    time.sleep(0.05)
                marker.write_text(str(asyncio.run(written())))
                raise RuntimeError("the first attempt of this task fails partway")
            yield row

    return run


def value(i: int) -> bytes:
    return str(i).rjust(100, "x").encode()


def test_a_task_failed_partway_is_retried_and_every_row_is_written_at_least_once(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    # The failing task's rows go to a topic of their own (the sink's topic column), so that the test sees what
    # that task wrote: its first attempt dies with records in the topic and more handed to the sink.
    url = kafka_broker.url
    others, failing = asyncio.run(_create(url, TASKS)), asyncio.run(_create(url, 1))
    low, high = ROWS // TASKS * FAILING_TASK, ROWS // TASKS * (FAILING_TASK + 1)
    df = spark.range(ROWS, numPartitions=TASKS).selectExpr(
        "CAST(lpad(CAST(id AS STRING), 100, 'x') AS BINARY) AS value",
        f"IF(id >= {low} AND id < {high}, '{failing}', '{others}') AS topic",
    )
    marker = tmp_path / "failed-attempt"
    # Through the RDD API, in the same stage as the write: mapInArrow would need pandas.
    rows = spark.createDataFrame(df.rdd.mapPartitions(fail_first_attempt(url, failing, marker)), df.schema)
    rows.write.format("kafkawire").option("url", url).mode("append").save()

    assert marker.exists(), "no task failed"
    written_by_failed_attempt = int(marker.read_text())
    assert written_by_failed_attempt >= WRITTEN_BEFORE_FAILING
    # The tasks that did not fail wrote their rows once.
    assert Counter(asyncio.run(_read_all(url, others, TASKS))) == Counter(
        value(i) for i in range(ROWS) if not low <= i < high
    )
    # The retried task wrote every row of its own at least once; twice only the rows its first attempt handed to
    # the sink, of which at least those the topic held when it failed.
    counts = Counter(asyncio.run(_read_all(url, failing, 1)))
    assert set(counts) == {value(i) for i in range(low, high)}
    twice = {v for v, n in counts.items() if n > 1}
    assert all(n <= 2 for n in counts.values())
    assert twice <= {value(i) for i in range(low, low + HANDED_ON)}
    assert len(twice) >= written_by_failed_attempt
