"""The shared contract on tubemqwire against the real TubeMQ master and broker: the README's code shape
(keys and headers), receive / getmany timeouts, serializers both ways, a failing deserializer, seeking
and pausing."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

import tubemqwire
from mqwire.testing.endpoints import TubeMQBroker
from mqwire.testing.tubemq import create_topics

pytestmark = pytest.mark.integration

OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 10_000}
PARTITIONS = {"shape": 2, "serde": 1, "seek": 1, "pause": 1}


@pytest.fixture(scope="module")
def topics(tubemq_broker: TubeMQBroker) -> dict[str, str]:
    """Fresh topics for this module (deployed together: they share one ~30 s publish delay)."""
    run = secrets.token_hex(3)
    names = {role: f"mqc{run}_{role}" for role in PARTITIONS}
    create_topics(tubemq_broker, {names[role]: count for role, count in PARTITIONS.items()})
    return names


@pytest_asyncio.fixture(loop_scope="function")
async def client(tubemq_broker: TubeMQBroker) -> AsyncIterator[tubemqwire.Client]:
    async with tubemqwire.connect(tubemq_broker.url, **OPTIONS) as connected:
        yield connected


def group_name(label: str) -> str:
    return f"c_{label}_{secrets.token_hex(4)}"


async def wait_for_partitions(consumer: tubemqwire.Consumer, count: int) -> None:
    async with asyncio.timeout(60):
        while len(consumer.assignment) < count:
            await asyncio.sleep(0.2)


async def test_keys_and_headers_come_back(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["shape"]
    async with client.producer(topic) as producer:
        receipt = await producer.send(b"value", key=b"k", headers={"h": b"v"})
        future = await producer.enqueue(b"more", key=b"k")
        await producer.flush(timeout=10)
        assert future.done() and future.result().partition == receipt.partition
    async with client.consumer(topic, group=group_name("shape"), start="earliest") as consumer:
        got = await consumer.getmany(timeout=60, max_records=1)
        assert len(got) == 1
        first = got[0]
        await consumer.ack(first)
        second = await consumer.receive(timeout=60)
        await consumer.ack(second)
    assert (first.value, first.key, first.headers) == (b"value", b"k", {"h": b"v"})
    assert (second.value, second.key) == (b"more", b"k")


async def test_timeouts_serializers_and_a_failing_deserializer(
    client: tubemqwire.Client, topics: dict[str, str]
) -> None:
    topic = topics["serde"]
    async with client.consumer(topic, group=group_name("serde"), value_deserializer=json.loads) as consumer:
        await wait_for_partitions(consumer, 1)
        with pytest.raises(tubemqwire.ReceiveTimeoutError):
            await consumer.receive(timeout=1)
        assert await consumer.getmany(timeout=1) == []
        async with client.producer(topic, value_serializer=lambda v: json.dumps(v).encode()) as producer:
            with pytest.raises(tubemqwire.SerializationError, match="key_serializer"):
                await producer.send({"id": 0}, key="text")
            await producer.send({"id": 1})
        async with client.producer(topic) as raw:
            await raw.send(b"{broken")
            await raw.send(b'{"id": 3}')
        first = await consumer.receive(timeout=60)
        assert first.value == {"id": 1}
        await consumer.ack(first)
        with pytest.raises(tubemqwire.DeserializationError) as caught:
            await consumer.receive(timeout=60)
        with pytest.raises(tubemqwire.DeserializationError):
            await consumer.getmany(timeout=1)
        assert caught.value.message.value == b"{broken"
        consumer.skip(caught.value.message)
        last = await consumer.receive(timeout=60)
        assert last.value == {"id": 3}
        await consumer.ack(last)


async def test_seek_to_beginning_and_to_end(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["seek"]
    async with client.producer(topic) as producer:
        for i in range(5):
            await producer.send(b"s%d" % i)
    async with client.consumer(topic, group=group_name("seek"), start="earliest") as consumer:
        seen = []
        while len(seen) < 5:
            message = await consumer.receive(timeout=60)
            seen.append(message.value)
            await consumer.ack(message)
        assert seen == [b"s%d" % i for i in range(5)]
        await consumer.seek_to_beginning()
        again = await consumer.receive(timeout=60)
        assert again.value == b"s0"
        await consumer.seek_to_end()
        assert await consumer.getmany(timeout=2) == []
        async with client.producer(topic) as producer:
            await producer.send(b"after the end")
        assert (await consumer.receive(timeout=60)).value == b"after the end"


async def test_pause_and_resume(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["pause"]
    async with client.consumer(topic, group=group_name("pause")) as consumer:
        await wait_for_partitions(consumer, 1)
        (key,) = consumer.assignment
        consumer.pause(key)
        await asyncio.sleep(1)  # a fetch already on the wire comes back empty
        async with client.producer(topic) as producer:
            await producer.send(b"held back")
        with pytest.raises(tubemqwire.ReceiveTimeoutError):
            await consumer.receive(timeout=3)
        assert consumer.assignment == {key}  # still ours while paused
        consumer.resume(key)
        assert (await consumer.receive(timeout=60)).value == b"held back"
