"""No task of kafkawire outlives ``close()``: asyncio tasks counted before connecting and after closing.

Each scenario runs in its own event loop and compares the set of tasks with the one before ``connect``,
under normal use and after faults (a dropped connection, a consumer that failed to start, a close while a
poll waits, a fenced group member).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

import kafkawire
from mqwire.common.errors import ClosedError, ConnectionLostError
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

GROUP: dict[str, Any] = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 500, "start": "earliest"}


def unique(label: str) -> str:
    return f"kw-life-{label}-{uuid.uuid4().hex[:10]}"


def others() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def left_after(before: set[asyncio.Task[Any]]) -> list[str]:
    await asyncio.sleep(0)  # done callbacks run
    return sorted(task.get_name() for task in others() - before if not task.done())


async def new_topic(client: kafkawire.Client, partitions: int = 2) -> str:
    name = unique("topic")
    async with client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)
    return name


async def test_group_consumer_and_producer_leave_no_task(kafka_broker: KafkaBroker) -> None:
    before = others()
    async with kafkawire.connect(kafka_broker.url) as client:
        topic = await new_topic(client)
        async with client.producer(topic) as producer, client.consumer(topic, group=unique("g"), **GROUP) as consumer:
            for i in range(10):
                await producer.enqueue(b"%d" % i)
            await producer.flush(timeout=10)
            got = 0
            async with asyncio.timeout(30):
                while got < 10:
                    got += len(await consumer.getmany(timeout=1))
        assert others() - before, "the client itself keeps a metadata refresher while open"
    assert await left_after(before) == []


async def test_closing_the_client_closes_what_it_made(kafka_broker: KafkaBroker) -> None:
    before = others()
    client = kafkawire.connect(kafka_broker.url)
    await client.start()
    topic = await new_topic(client)
    producer = client.producer(topic, transactional_id=unique("tid"))
    await producer.start()
    await producer.begin_transaction()
    await producer.send(b"pending")
    consumer = client.consumer(await new_topic(client), group=unique("g"), **GROUP)
    await consumer.start()
    waiting = asyncio.ensure_future(consumer.receive())  # a poll that waits while everything closes
    await asyncio.sleep(0.5)
    await asyncio.gather(client.close(), client.close())  # concurrent closes share one
    assert producer.closed and consumer.closed and client.closed
    with pytest.raises(ClosedError):
        await waiting
    with pytest.raises(ClosedError):
        await consumer.start()
    assert await left_after(before) == []


async def test_dropped_connections_and_a_failed_start_leave_no_task(kafka_broker: KafkaBroker) -> None:
    before = others()
    async with kafkawire.connect(kafka_broker.url, allow_auto_create_topics=False, request_timeout_ms=3_000) as client:
        topic = await new_topic(client)
        async with client.producer(topic) as producer, client.consumer(topic, group=unique("g"), **GROUP) as consumer:
            await producer.send(b"before")
            assert (await consumer.receive(timeout=30)).value == b"before"
            for connection in list(client._session._opened.values()):
                connection.channel.abort(ConnectionLostError("cut by the test"))  # every pooled connection drops
            await producer.send(b"after")
            assert (await consumer.receive(timeout=30)).value == b"after"
        missing = client.consumer(unique("missing"))
        with pytest.raises(kafkawire.KafkaError):
            await missing.start()
        assert missing.closed
    assert await left_after(before) == []


async def test_a_fenced_member_leaves_no_task(kafka_broker: KafkaBroker) -> None:
    before = others()
    async with kafkawire.connect(kafka_broker.url) as client:
        topic = await new_topic(client, 1)
        options = dict(GROUP, group=unique("g"), group_instance_id="one")
        first = client.consumer(topic, **options)
        await first.start()
        async with asyncio.timeout(30):
            while not first.assignment():
                await first.getmany(timeout=0.2)
        async with client.consumer(topic, **options) as second:
            await second.getmany(timeout=1)
            with pytest.raises(kafkawire.FencedInstanceIdError):
                async with asyncio.timeout(30):
                    while True:
                        await first.getmany(timeout=0.5)
        await first.close()
    assert await left_after(before) == []
