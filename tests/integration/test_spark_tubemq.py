"""The tubemqwire Spark data source against a real TubeMQ master and broker."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

import tubemqwire
from mqwire.testing.endpoints import TubeMQBroker
from mqwire.testing.tubemq_spares import FreshTopics
from tests.integration.spark_session import local_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = {"read": 3, "from": 2, "empty": 1, "write": 2, "stream": 2, "stream_in": 2, "stream_out": 1}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session("sparkwire-tubemq-tests")


@pytest.fixture(scope="module")
def topics(tubemq_fresh_topics: FreshTopics) -> dict[str, str]:
    """Fresh topics for this module."""
    return tubemq_fresh_topics.take(PARTITIONS)


async def produce(url: str, topic: str, count: int, prefix: str = "value") -> list[tubemqwire.Receipt]:
    async with tubemqwire.connect(url) as client, client.producer(topic) as producer:
        futures = [
            await producer.enqueue(b"%s-%d" % (prefix.encode(), i), headers={"i": str(i)}, msg_type=f"t{i % 3}")
            for i in range(count)
        ]
        await producer.flush()
        return [await future for future in futures]


def test_batch_read_counts_and_contents(spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str]) -> None:
    topic = topics["read"]
    receipts = asyncio.run(produce(tubemq_broker.url, topic, 3000))

    rows = spark.read.format("tubemqwire").option("url", tubemq_broker.url).option("subscribe", topic).load().collect()

    assert len(rows) == 3000
    got = sorted((bytes(r.value), r.msg_type, {k: bytes(v) for k, v in r.headers.items()}) for r in rows)
    want = sorted((b"value-%d" % i, f"t{i % 3}", {"i": str(i).encode()}) for i in range(3000))
    assert got == want
    assert {(r.partition_key, r.message_id) for r in rows} == {(x.partition_key, x.message_id) for x in receipts}
    assert {r.topic for r in rows} == {topic} and all(r.key is None for r in rows)
    # Within a partition, rows come in the order they were written.
    for key in {x.partition_key for x in receipts}:
        written = [x.message_id for x in receipts if x.partition_key == key]
        assert [r.message_id for r in rows if r.partition_key == key] == written


def test_batch_read_from_an_offset(spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str]) -> None:
    topic = topics["from"]
    receipts = asyncio.run(produce(tubemq_broker.url, topic, 40))
    key = receipts[0].partition_key
    in_key = [(x.append_offset, i) for i, x in enumerate(receipts) if x.partition_key == key]
    start = in_key[5][0]
    df = (
        spark.read.format("tubemqwire")
        .option("url", tubemq_broker.url)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {key: start}}))
        .load()
    )
    rows = df.collect()
    from_key = sorted(int(bytes(r.value).split(b"-")[1]) for r in rows if r.partition_key == key)
    assert from_key == [i for _, i in in_key[5:]]
    # The other partition has no start given: it is read from its beginning.
    assert len(rows) == 40 - 5


def test_empty_topic_reads_no_rows(spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str]) -> None:
    df = spark.read.format("tubemqwire").option("url", tubemq_broker.url).option("subscribe", topics["empty"]).load()
    assert df.count() == 0


def test_batch_write_read_back_with_the_client(
    spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str]
) -> None:
    topic = topics["write"]
    data = [(b"payload-%d" % i, {"n": str(i).encode()}, f"type{i % 2}") for i in range(2000)]
    df = spark.createDataFrame(data, "value binary, headers map<string, binary>, msg_type string").repartition(4)
    df.write.format("tubemqwire").option("url", tubemq_broker.url).option("topic", topic).mode("append").save()

    async def read_back() -> list[tuple[bytes, dict[str, bytes], str | None]]:
        got: list[tuple[bytes, dict[str, bytes], str | None]] = []
        async with (
            tubemqwire.connect(tubemq_broker.url) as client,
            client.consumer(topic, group=f"readback_{secrets.token_hex(4)}", start="earliest") as consumer,
        ):
            while len(got) < len(data):
                message = await consumer.getone(timeout=60)
                got.append((message.value, message.headers, message.msg_type))
                await consumer.ack(message)
        return got

    assert sorted(asyncio.run(read_back())) == sorted(data)


def run_stream(spark: Any, url: str, topic: str, out: str, checkpoint: str) -> None:
    stream = (
        spark.readStream.format("tubemqwire")
        .option("url", url)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition_key")
    )
    query = stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
    running = query.trigger(processingTime="100 milliseconds").start()
    try:
        running.processAllAvailable()
    finally:
        running.stop()


def test_stream_restart_from_checkpoint_exactly_once(
    spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str], tmp_path: Any
) -> None:
    topic = topics["stream"]
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    asyncio.run(produce(tubemq_broker.url, topic, 1500))
    run_stream(spark, tubemq_broker.url, topic, out, checkpoint)
    assert spark.read.parquet(out).count() == 1500
    asyncio.run(produce(tubemq_broker.url, topic, 1200, prefix="second"))
    run_stream(spark, tubemq_broker.url, topic, out, checkpoint)
    values = sorted(r.value for r in spark.read.parquet(out).collect())
    expected = sorted([f"value-{i}" for i in range(1500)] + [f"second-{i}" for i in range(1200)])
    assert values == expected  # every message once: nothing lost, nothing read twice across the restart


def test_stream_write_from_one_topic_to_another(
    spark: Any, tubemq_broker: TubeMQBroker, topics: dict[str, str], tmp_path: Any
) -> None:
    source, target = topics["stream_in"], topics["stream_out"]
    asyncio.run(produce(tubemq_broker.url, source, 800))
    stream = (
        spark.readStream.format("tubemqwire")
        .option("url", tubemq_broker.url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select("value", "headers", "msg_type")
    )
    running = (
        stream.writeStream.format("tubemqwire")
        .option("url", tubemq_broker.url)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        running.processAllAvailable()
    finally:
        running.stop()

    async def read_back() -> list[bytes]:
        got: list[bytes] = []
        async with (
            tubemqwire.connect(tubemq_broker.url) as client,
            client.consumer(target, group=f"streamout_{secrets.token_hex(4)}", start="earliest") as consumer,
        ):
            while len(got) < 800:
                message = await consumer.getone(timeout=60)
                got.append(message.value)
                await consumer.ack(message)
        return got

    assert sorted(asyncio.run(read_back())) == sorted(b"value-%d" % i for i in range(800))
