"""The pulsarwire Spark data source against a real Pulsar broker."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import pulsarwire
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.message import MessageId
from tests.integration.spark_session import local_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session("sparkwire-pulsar-tests")


def unique(label: str) -> str:
    return f"persistent://public/default/sw-{label}-{uuid.uuid4().hex[:8]}"


async def produce(url: str, topic: str, count: int, **options: Any) -> list[MessageId]:
    async with pulsarwire.connect(url) as client, client.producer(topic, **options) as producer:
        futures = [
            await producer.enqueue(b"value-%d" % i, key=b"k%d" % (i % 13), headers={"i": str(i).encode()})
            for i in range(count)
        ]
        await producer.flush()
        return [await future for future in futures]


def test_batch_read_counts_and_contents_of_a_partitioned_topic(spark: Any, pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("read"), 3)
    ids = asyncio.run(produce(pulsar_broker.url, topic, 3000))  # batched: many messages per entry

    rows = spark.read.format("pulsarwire").option("url", pulsar_broker.url).option("subscribe", topic).load().collect()

    assert len(rows) == 3000
    got = sorted((bytes(r.value), bytes(r.key), {k: bytes(v) for k, v in r.headers.items()}) for r in rows)
    want = sorted((b"value-%d" % i, b"k%d" % (i % 13), {"i": str(i).encode()}) for i in range(3000))
    assert got == want
    assert {r.partition for r in rows} == {0, 1, 2}
    assert {r.topic for r in rows} == {f"{topic}-partition-{p}" for p in range(3)}
    # The message_id column is the id the producer got back, serialized.
    assert {MessageId.deserialize(bytes(r.message_id)).entry_id for r in rows} == {i.entry_id for i in ids}
    assert len({bytes(r.message_id) for r in rows}) == 3000


def test_batch_read_from_a_message_id(spark: Any, pulsar_broker: PulsarBroker) -> None:
    topic = unique("from-id")
    ids = asyncio.run(produce(pulsar_broker.url, topic, 50, batching_enabled=False))
    after = base64.b64encode(ids[19].serialize()).decode()
    df = (
        spark.read.format("pulsarwire")
        .option("url", pulsar_broker.url)
        .option("subscribe", topic)
        .option("startingOffsets", f'{{"{topic}": "{after}"}}')
        .load()
    )
    assert sorted(int(bytes(r.value).split(b"-")[1]) for r in df.collect()) == list(range(20, 50))


def test_empty_topic_reads_no_rows(spark: Any, pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_topic(pulsar_broker.admin_url, unique("empty"))
    df = spark.read.format("pulsarwire").option("url", pulsar_broker.url).option("subscribe", topic).load()
    assert df.count() == 0


def test_batch_write_read_back_with_the_client(spark: Any, pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("write"), 2)
    data = [(b"key-%d" % i, b"payload-%d" % i) for i in range(2000)]
    df = spark.createDataFrame(data, "key binary, value binary").repartition(4)
    df.write.format("pulsarwire").option("url", pulsar_broker.url).option("topic", topic).mode("append").save()

    async def read_back() -> list[tuple[bytes, bytes]]:
        got: list[tuple[bytes, bytes]] = []
        async with pulsarwire.connect(pulsar_broker.url) as client, client.reader(topic, start="earliest") as reader:
            while len(got) < len(data):
                message = await reader.receive(timeout=30)
                got.append((message.key or b"", message.value))
        return got

    assert sorted(asyncio.run(read_back())) == sorted(data)


def run_stream(spark: Any, url: str, topic: str, out: str, checkpoint: str) -> None:
    stream = (
        spark.readStream.format("pulsarwire")
        .option("url", url)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition")
    )
    query = stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
    running = query.trigger(processingTime="100 milliseconds").start()
    try:
        running.processAllAvailable()
    finally:
        running.stop()


def test_stream_restart_from_checkpoint_exactly_once(spark: Any, pulsar_broker: PulsarBroker, tmp_path: Any) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("stream"), 2)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    asyncio.run(produce(pulsar_broker.url, topic, 1500))
    run_stream(spark, pulsar_broker.url, topic, out, checkpoint)
    assert spark.read.parquet(out).count() == 1500

    async def more() -> None:
        async with pulsarwire.connect(pulsar_broker.url) as client, client.producer(topic) as producer:
            for i in range(1200):
                await producer.enqueue(b"second-%d" % i)
            await producer.flush()

    asyncio.run(more())
    run_stream(spark, pulsar_broker.url, topic, out, checkpoint)
    values = sorted(r.value for r in spark.read.parquet(out).collect())
    expected = sorted([f"value-{i}" for i in range(1500)] + [f"second-{i}" for i in range(1200)])
    assert values == expected  # every message once: nothing lost, nothing read twice across the restart


def test_stream_write_from_one_topic_to_another(spark: Any, pulsar_broker: PulsarBroker, tmp_path: Any) -> None:
    source = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("stream-in"), 2)
    target = unique("stream-out")
    asyncio.run(produce(pulsar_broker.url, source, 800))
    stream = (
        spark.readStream.format("pulsarwire")
        .option("url", pulsar_broker.url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select("key", "value", "headers")
    )
    running = (
        stream.writeStream.format("pulsarwire")
        .option("url", pulsar_broker.url)
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
        async with pulsarwire.connect(pulsar_broker.url) as client, client.reader(target, start="earliest") as reader:
            while len(got) < 800:
                got.append((await reader.receive(timeout=30)).value)
        return got

    assert sorted(asyncio.run(read_back())) == sorted(b"value-%d" % i for i in range(800))
