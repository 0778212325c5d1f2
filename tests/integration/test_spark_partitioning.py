"""The kafkawire source's minPartitions and subscribePattern against a real broker, and a stream that refuses
the checkpoint of a query on another topic."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.functions import spark_partition_id

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from tests.integration.spark_session import local_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session("sparkwire-partitioning-tests")


async def fill(url: str, topics: dict[str, int], records: int) -> None:
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            for name, partitions in topics.items():
                await admin.create_topic(name, partitions=partitions)
        for name in topics:
            async with client.producer(name) as producer:
                for i in range(records):
                    await producer.enqueue(b"%s-%d" % (name.encode(), i))
                await producer.flush()


def test_min_partitions_splits_one_topic_partition(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = f"sw-split-{uuid.uuid4().hex[:8]}"
    asyncio.run(fill(kafka_broker.url, {topic: 1}, 1000))
    df = (
        spark.read.format("kafkawire")
        .option("url", kafka_broker.url)
        .option("subscribe", topic)
        .option("minPartitions", "4")
        .load()
    )
    assert df.rdd.getNumPartitions() == 4
    assert df.select(spark_partition_id()).distinct().count() == 4
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(1000))


def test_subscribe_pattern_reads_every_matching_topic(spark: Any, kafka_broker: KafkaBroker) -> None:
    run = uuid.uuid4().hex[:8]
    topics = {f"sw-pat-{run}-a": 2, f"sw-pat-{run}-b": 1, f"sw-other-{run}": 1}
    asyncio.run(fill(kafka_broker.url, topics, 100))
    df = (
        spark.read.format("kafkawire")
        .option("url", kafka_broker.url)
        .option("subscribePattern", f"sw-pat-{run}-.*")
        .load()
    )
    rows = df.select("topic", "value").collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(
        b"%s-%d" % (name.encode(), i) for name in list(topics)[:2] for i in range(100)
    )


def test_a_stream_refuses_the_checkpoint_of_another_topic(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    first, second = f"sw-chk-{run}-a", f"sw-chk-{run}-b"
    asyncio.run(fill(kafka_broker.url, {first: 1, second: 1}, 10))
    checkpoint, out = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    def run_query(topic: str) -> None:
        stream = (
            spark.readStream.format("kafkawire")
            .option("url", kafka_broker.url)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("CAST(value AS STRING) AS value")
        )
        query = stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
        query.trigger(availableNow=True).start().awaitTermination()

    run_query(first)
    assert spark.read.parquet(out).count() == 10
    with pytest.raises(Exception, match=f"topic '{first}', which this query does not subscribe to"):
        run_query(second)
