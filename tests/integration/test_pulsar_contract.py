"""pulsarwire's side of the shared API against a real broker, where Pulsar adds to what tests/contract checks
for the three systems: getmany's bounds and batch_receive, what a deserialized message keeps (its payload, its
MessageId as the failure's position, None passed over by the deserializers), receipts as MessageIds to seek to,
the ends of a partitioned topic, a reader starting at latest, and a misspelled option answered with the name
meant."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

import pulsarwire
from mqwire.common.errors import DeserializationError
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def test_getmany_hands_out_at_most_max_records(pulsar_broker: PulsarBroker) -> None:
    topic = unique("contract-getmany")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic) as producer:
            for i in range(10):
                await producer.enqueue(b"%d" % i)
            await producer.flush(timeout=10)
        got: list[bytes] = []
        while len(got) < 10:
            batch = await consumer.getmany(timeout=5, max_records=4)
            assert 0 < len(batch) <= 4
            got += [m.value for m in batch]
            for message in batch:
                await consumer.ack(message)
        assert got == [b"%d" % i for i in range(10)]
        assert await consumer.batch_receive(timeout=0.2) == []
        with pytest.raises(ValueError, match="max_records"):
            await consumer.getmany(max_records=0)


async def test_serializers_both_ways(pulsar_broker: PulsarBroker) -> None:
    topic = unique("contract-serde")

    def to_json(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    async with pulsarwire.connect(pulsar_broker.url) as client, client.consumer(
        topic, subscription="s", start="earliest", value_deserializer=json.loads, key_deserializer=bytes.decode
    ) as consumer:
        async with client.producer(topic, value_serializer=to_json, key_serializer=str.encode) as producer:
            await producer.send({"id": 1}, key="one")
            await producer.send(None, key="tombstone")
        # Not JSON: the consumer's deserializer fails on it.
        async with client.producer(topic) as raw:
            await raw.send(b"not json", key=b"bad")
        async with client.producer(topic, value_serializer=to_json) as producer:
            await producer.send([2])
        first = await consumer.receive(timeout=10)
        assert (first.key, first.value) == ("one", {"id": 1}) and first.payload == b'{"id": 1}'
        second = await consumer.receive(timeout=10)
        assert second.key == "tombstone" and second.value is None
        # The failed message stays first in line until skipped, for receive and getmany alike.
        with pytest.raises(DeserializationError) as caught:
            await consumer.receive(timeout=10)
        error = caught.value
        assert isinstance(error.message, pulsarwire.Message)
        assert error.field == "value" and error.position == error.message.message_id
        assert error.message.value == b"not json"
        with pytest.raises(DeserializationError):
            await consumer.getmany(timeout=5)
        with pytest.raises(DeserializationError):
            await consumer.receive(timeout=1)
        consumer.skip(error.message)
        await consumer.ack(error.message)
        fourth = await consumer.receive(timeout=10)
        assert fourth.value == [2] and fourth.key is None


async def test_receipt_seek_and_ends(pulsar_broker: PulsarBroker) -> None:
    topic = unique("contract-seek")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic, batching_enabled=False) as producer,
    ):
        receipts = [await producer.send(b"%d" % i) for i in range(5)]
        # A receipt names the topic in full; a topic without partitions has partition -1.
        assert all(r.topic == f"persistent://public/default/{topic}" and r.partition == -1 for r in receipts)
        messages = [await consumer.receive(timeout=10) for _ in range(5)]
        assert [m.message_id for m in messages] == receipts
        assert receipts[2].message_id == messages[2].message_id
        await consumer.seek(receipts[2])
        again = await consumer.receive(timeout=10)
        assert again.value == b"2"
        await consumer.seek_to_beginning()
        assert (await consumer.receive(timeout=10)).value == b"0"
        await consumer.seek_to_end()
        assert await consumer.getmany(timeout=1) == []
        await producer.send(b"after end")
        assert (await consumer.receive(timeout=10)).value == b"after end"


async def test_seek_ends_on_partitioned_topic(pulsar_broker: PulsarBroker) -> None:
    topic = unique("contract-seek-parts")
    await asyncio.to_thread(pulsar_admin.create_partitioned_topic, pulsar_broker.admin_url, topic, 3)
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic, batching_enabled=False) as producer,
    ):
        receipts = [await producer.send(b"%d" % i, key=b"k%d" % i) for i in range(9)]
        assert {r.topic for r in receipts} == {f"persistent://public/default/{topic}"}
        assert {r.partition for r in receipts} <= {0, 1, 2}
        first = [await consumer.receive(timeout=10) for _ in range(9)]
        assert sorted(m.value for m in first) == sorted(b"%d" % i for i in range(9))
        await consumer.seek_to_beginning()
        again = [await consumer.receive(timeout=10) for _ in range(9)]
        assert sorted(m.value for m in again) == sorted(b"%d" % i for i in range(9))
        await consumer.seek_to_end()
        assert await consumer.getmany(timeout=1) == []


async def test_a_reader_starts_at_latest_by_default(pulsar_broker: PulsarBroker) -> None:
    topic = unique("contract-latest")
    async with pulsarwire.connect(pulsar_broker.url) as client, client.producer(topic) as producer:
        await producer.send(b"before")
        async with client.reader(topic) as reader:
            await producer.send(b"after")
            assert (await reader.receive(timeout=10)).value == b"after"


async def test_unknown_option_names_itself(pulsar_broker: PulsarBroker) -> None:
    async with pulsarwire.connect(pulsar_broker.url) as client:
        with pytest.raises(TypeError, match=r"batching_max_mesages'? .did you mean batching_max_messages"):
            client.producer("t", batching_max_mesages=10)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="reader_nam"):
            client.reader("t", reader_nam="x")  # type: ignore[call-arg]
