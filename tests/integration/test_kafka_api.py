"""kafkawire's public surface against a real Kafka broker: the shared contract and aiokafka's names.

receive / getmany with timeouts, serializers both ways, a failing deserializer, the "latest" default,
auto-commit of delivered positions, subscribe / assign / unsubscribe (with patterns, under both group
protocols), awaitable seeks and transactions, and a group that cannot go on raising from the poll.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

import kafkawire
from kafkawire import Message, TopicPartition
from mqwire.common.errors import DeserializationError, ReceiveTimeoutError, SerializationError
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

FAST_GROUP: dict[str, Any] = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 500}


def unique(label: str) -> str:
    return f"kw-api-{label}-{uuid.uuid4().hex[:10]}"


@pytest_asyncio.fixture(loop_scope="function")
async def client(kafka_broker: KafkaBroker) -> AsyncIterator[kafkawire.Client]:
    async with kafkawire.connect(kafka_broker.url) as connected:
        yield connected


async def new_topic(client: kafkawire.Client, label: str, partitions: int = 1) -> str:
    name = unique(label)
    async with client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)
    return name


async def fill(client: kafkawire.Client, topic: str, count: int, prefix: bytes = b"") -> None:
    async with client.producer(topic) as producer:
        for i in range(count):
            await producer.enqueue(prefix + b"%d" % i)
        await producer.flush(timeout=30)


async def drain(consumer: kafkawire.Consumer, count: int, timeout: float = 30) -> list[Message]:
    out: list[Message] = []
    async with asyncio.timeout(timeout):
        while len(out) < count:
            out.extend(await consumer.getmany(timeout=1))
    return out


# ------------------------------------------------------------------------------------ receiving
async def test_receive_and_getmany_time_out_the_same_way(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "timeouts")
    async with client.consumer(topic, start="earliest") as consumer:
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(ReceiveTimeoutError) as raised:
            await consumer.receive(timeout=0.5)
        assert isinstance(raised.value, TimeoutError)
        assert kafkawire.ReceiveTimeoutError is ReceiveTimeoutError
        # Not before its timeout; the upper bound is liveness only (ten times the timeout), not speed.
        assert 0.45 <= loop.time() - began < 5
        assert await consumer.getmany(timeout=0.3) == []
        assert await consumer.getmany(timeout_ms=300) == []
        await fill(client, topic, 3)
        assert (await consumer.receive(timeout=10)).value == b"0"
        assert (await asyncio.wait_for(consumer.getone(), 10)).value == b"1"
        batch = await consumer.getmany(timeout=10, max_records=5)
        assert [m.value for m in batch] == [b"2"]


async def test_getmany_and_getone_of_some_partitions(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "only", partitions=2)
    async with client.producer(topic) as producer:
        for i in range(6):
            await producer.enqueue(b"%d" % i, partition=i % 2)
        await producer.flush()
    tp1 = TopicPartition(topic, 1)
    async with client.consumer(topic, start="earliest") as consumer:
        got: list[Message] = []
        async with asyncio.timeout(20):
            while len(got) < 3:
                got.extend(await consumer.getmany(tp1, timeout=1))
        assert {m.partition for m in got} == {1}
        assert [m.value for m in got] == [b"1", b"3", b"5"]
        first = await asyncio.wait_for(consumer.getone((topic, 0)), 10)
        assert (first.partition, first.value) == (0, b"0")


async def test_start_is_latest_by_default(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "default-latest")
    await fill(client, topic, 3, b"old-")
    async with client.consumer(topic) as consumer:
        async with asyncio.timeout(10):
            while consumer.position((topic, 0)) is None:
                await asyncio.sleep(0.01)
        await fill(client, topic, 1, b"new-")
        assert (await consumer.receive(timeout=10)).value == b"new-0"
    async with client.consumer(topic, auto_offset_reset="earliest") as consumer:
        assert (await consumer.receive(timeout=10)).value == b"old-0"


# ------------------------------------------------------------------------------------ serializers
async def test_serializers_both_ways(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "serde")
    async with client.producer(
        topic, key_serializer=str.encode, value_serializer=lambda v: json.dumps(v).encode()
    ) as producer:
        receipt = await producer.send({"id": 1}, key="k1", headers={"h": b"v"})
        assert (receipt.topic, receipt.partition, receipt.offset) == (topic, 0, 0)
        future = await producer.enqueue({"id": 2}, key="k2")
        await producer.flush(timeout=10)
        assert (await future).offset == 1
        assert (await producer.send_and_wait(topic, None, key="tombstone")).offset == 2  # aiokafka order
    async with client.consumer(
        topic, start="earliest", key_deserializer=bytes.decode, value_deserializer=json.loads
    ) as consumer:
        first, second, third = await drain(consumer, 3)
    assert (first.key, first.value, first.headers) == ("k1", {"id": 1}, {"h": b"v"})
    assert (second.key, second.value) == ("k2", {"id": 2})
    assert (third.key, third.value) == ("tombstone", None)  # None is not handed to the deserializer


async def test_text_without_a_serializer_names_the_option(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "no-serializer")
    async with client.producer(topic) as producer:
        with pytest.raises(SerializationError, match="value_serializer"):
            await producer.send("text")
        with pytest.raises(TypeError, match="key_serializer"):
            await producer.send(b"v", key="text")
        assert (await producer.send(b"bytes")).offset == 0  # nothing of the refused sends was buffered


async def test_a_failing_deserializer_holds_the_message_until_skipped(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "bad-value")
    async with client.producer(topic) as producer:
        for value in (b'{"n": 0}', b"not json", b'{"n": 2}'):
            await producer.enqueue(value)
        await producer.flush()
    async with client.consumer(topic, start="earliest", value_deserializer=json.loads) as consumer:
        assert (await consumer.receive(timeout=10)).value == {"n": 0}
        with pytest.raises(DeserializationError) as raised:
            await consumer.receive(timeout=10)
        error = raised.value
        assert (error.topic, error.partition, error.position, error.field) == (topic, 0, 1, "value")
        assert isinstance(error.__cause__, ValueError)
        with pytest.raises(DeserializationError):  # nothing goes past it silently
            await consumer.getmany(timeout=1)
        consumer.skip(error.message)
        assert (await consumer.receive(timeout=10)).value == {"n": 2}


# ------------------------------------------------------------------------------------ commits
async def test_auto_commit_stores_what_was_delivered_without_acks(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "delivered", partitions=2)
    group = unique("group")
    await fill(client, topic, 20)
    async with client.consumer(topic, group=group, start="earliest", **FAST_GROUP) as consumer:
        first = await drain(consumer, 20)  # never acknowledged: aiokafka's meaning of auto-commit
    assert len(first) == 20
    await fill(client, topic, 4, b"more-")
    async with client.consumer(topic, group=group, start="earliest", **FAST_GROUP) as consumer:
        again = await drain(consumer, 4)
        assert await consumer.getmany(timeout=1) == []
    assert sorted(m.value for m in again) == [b"more-%d" % i for i in range(4)]


async def test_commit_acknowledged_only_reads_unacknowledged_messages_again(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "acked-only")
    group = unique("group")
    await fill(client, topic, 10)
    options = dict(FAST_GROUP, start="earliest", commit_acknowledged_only=True)
    async with client.consumer(topic, group=group, **options) as consumer:
        seen = await drain(consumer, 10)
        for message in seen[:4]:
            await consumer.ack(message)
    async with client.consumer(topic, group=group, **options) as consumer:
        rest = await drain(consumer, 6)
    assert [m.offset for m in rest] == list(range(4, 10))


# ------------------------------------------------------------------------------------ positions
async def test_awaitable_seeks(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "seeks")
    group = unique("group")
    await fill(client, topic, 5)
    tp = TopicPartition(topic, 0)
    async with client.consumer(topic, group=group, partitions=[0], start="earliest") as consumer:
        assert [m.offset for m in await drain(consumer, 5)] == list(range(5))
        await consumer.commit({tp: 3})
        await consumer.seek_to_beginning()
        assert (await consumer.receive(timeout=10)).offset == 0
        assert await consumer.seek_to_committed() == {tp: 3}
        assert (await consumer.receive(timeout=10)).offset == 3
        await consumer.seek_to_end(tp)
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=0.5)
        consumer.seek(tp, 1)
        assert (await consumer.receive(timeout=10)).offset == 1


async def test_begin_transaction_is_awaitable(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "txn")
    async with client.producer(topic, transactional_id=unique("tid")) as producer:
        await producer.begin_transaction()
        await producer.send(b"in")
        await producer.commit_transaction()
    async with client.consumer(topic, start="earliest", isolation_level="read_committed") as consumer:
        assert (await consumer.receive(timeout=10)).value == b"in"


# ------------------------------------------------------------------------------------ subscriptions
async def test_subscribe_assign_and_unsubscribe_after_construction(client: kafkawire.Client) -> None:
    first = await new_topic(client, "sub-a")
    second = await new_topic(client, "sub-b")
    await fill(client, first, 2, b"a")
    await fill(client, second, 2, b"b")
    async with client.consumer(start="earliest") as consumer:
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=0.3)  # nothing subscribed yet
        consumer.assign([TopicPartition(first, 0)])
        assert [m.value for m in await drain(consumer, 2)] == [b"a0", b"a1"]
        consumer.subscribe([second])
        assert [m.value for m in await drain(consumer, 2)] == [b"b0", b"b1"]
        assert consumer.assignment() == {TopicPartition(second, 0)}
        consumer.unsubscribe()
        async with asyncio.timeout(10):
            while consumer.assignment():
                await asyncio.sleep(0.01)
        await fill(client, second, 1, b"late")
        assert await consumer.getmany(timeout=0.5) == []


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
async def test_pattern_subscription_follows_new_topics(kafka_broker: KafkaBroker, group_protocol: str) -> None:
    prefix = unique("pattern")
    async with kafkawire.connect(kafka_broker.url, metadata_max_age_ms=500) as client:
        async with client.admin() as admin:
            await admin.create_topic(f"{prefix}-one", partitions=1)
            await admin.create_topic(f"other-{prefix}", partitions=1)
        await fill(client, f"{prefix}-one", 2, b"one-")
        await fill(client, f"other-{prefix}", 2, b"other-")
        options: dict[str, Any] = {"start": "earliest", "group_protocol": group_protocol}
        if group_protocol == "classic":
            options.update(FAST_GROUP)
        async with client.consumer(group=unique("group"), **options) as consumer:
            consumer.subscribe(pattern=re.compile(re.escape(prefix) + r"-.*"))
            got = await drain(consumer, 2, timeout=60)
            async with client.admin() as admin:
                await admin.create_topic(f"{prefix}-two", partitions=1)
            await fill(client, f"{prefix}-two", 2, b"two-")
            got.extend(await drain(consumer, 2, timeout=60))
            assert await consumer.getmany(timeout=1) == []
    assert sorted(m.value for m in got) == [b"one-0", b"one-1", b"two-0", b"two-1"]


# ------------------------------------------------------------------------------------ bad input
async def test_a_fenced_static_member_raises_from_its_polls(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "fenced")
    group = unique("group")
    options = dict(FAST_GROUP, group=group, group_instance_id="same", start="earliest")
    async with client.consumer(topic, **options) as first:
        async with asyncio.timeout(30):
            while not first.assignment():
                await first.getmany(timeout=0.2)
        async with client.consumer(topic, **options) as second:
            await second.getmany(timeout=1)  # takes the instance id over; the first is fenced at its next heartbeat
            with pytest.raises(kafkawire.FencedInstanceIdError):
                async with asyncio.timeout(30):
                    while True:
                        await first.getmany(timeout=0.5)
            with pytest.raises(kafkawire.FencedInstanceIdError):
                await first.receive(timeout=1)  # again, not only once
            with pytest.raises(kafkawire.FencedInstanceIdError):
                async for _ in first:
                    pass


async def test_the_consumer_group_protocol_on_a_broker_without_it_raises(kafka3_broker: KafkaBroker) -> None:
    """Kafka 3.9 does not offer ConsumerGroupHeartbeat unless enabled: the poll says so instead of going quiet."""
    async with kafkawire.connect(kafka3_broker.url) as client:
        topic = await new_topic(client, "no-kip848")
        async with client.consumer(topic, group=unique("group"), group_protocol="consumer") as consumer:
            with pytest.raises(kafkawire.UnsupportedVersionError, match="ConsumerGroupHeartbeat"):
                await consumer.receive(timeout=30)


async def test_unknown_options_name_themselves(client: kafkawire.Client) -> None:
    with pytest.raises(kafkawire.UnknownOptionError, match=r"lingerms.*linger_ms"):
        client.producer("t", lingerms=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"enable_autocommit.*enable_auto_commit"):
        client.consumer("t", enable_autocommit=False)  # type: ignore[call-arg]
    with pytest.raises(kafkawire.ConfigurationError, match="timeout"):
        client.admin(timeout=5)  # type: ignore[call-arg]
