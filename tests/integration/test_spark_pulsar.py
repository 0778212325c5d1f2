"""The pulsarwire Spark data source against a real Pulsar broker."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

import pulsarwire
import sparkwire
from brokers import pulsar_admin
from brokers.endpoints import PulsarBroker
from pulsarwire.message import MessageId

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sparkwire-pulsar-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    sparkwire.register(session)
    yield session
    session.stop()


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
