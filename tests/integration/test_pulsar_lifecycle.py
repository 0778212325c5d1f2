"""No task outlives close(): asyncio tasks counted before connect and after close, in normal use and after
the connections dropped under producers, consumers, readers and pattern consumers."""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest

import pulsarwire
from mqwire.common.errors import ClosedError, ConnectionLostError
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def tasks_now() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def assert_no_new_tasks(before: set[asyncio.Task[object]]) -> None:
    left = {task for task in tasks_now() - before if not task.done()}
    assert not left, [task.get_name() + ": " + repr(task.get_coro()) for task in left]


def drop_connections(client: pulsarwire.Client) -> int:
    """Close every connection of the client as if the network dropped it."""
    connections = list(client._session._pool._connections.values())
    for connection in connections:
        connection.close(ConnectionLostError("dropped by the test"))
    return len(connections)


async def use(client: pulsarwire.Client, topic: str, parted: str) -> None:
    producer = await client.producer(parted, auto_update_partitions_interval_ms=100).__aenter__()
    consumer = await client.consumer(
        [topic, parted], group="g", start="earliest", auto_update_partitions_interval_ms=100
    ).__aenter__()
    pattern = await client.consumer(
        re.compile(f"persistent://public/default/{topic}.*"), group="p", pattern_auto_discovery_period_ms=100
    ).__aenter__()
    reader = await client.reader(topic, start="earliest").__aenter__()
    async with client.producer(topic) as plain:
        await plain.send(b"x")
    for i in range(4):
        await producer.enqueue(b"%d" % i)
    await producer.flush(timeout=10)
    assert len(await consumer.getmany(timeout=10, max_records=1)) == 1
    assert (await reader.receive(timeout=10)).value == b"x"
    del pattern  # closed with the client


async def test_no_task_left_after_close(pulsar_broker: PulsarBroker) -> None:
    topic, parted = unique("life"), unique("life-parted")
    await asyncio.to_thread(pulsar_admin.create_partitioned_topic, pulsar_broker.admin_url, parted, 2)
    before = tasks_now()
    client = pulsarwire.connect(pulsar_broker.url)
    async with client:
        await use(client, topic, parted)
        await asyncio.sleep(0.3)  # the partition and pattern watches have run
    await assert_no_new_tasks(before)
    with pytest.raises(ClosedError):
        await client.producer(topic).start()
    with pytest.raises(ClosedError):
        client.admin(admin_url=pulsar_broker.admin_url)


async def test_no_task_left_after_close_following_a_fault(pulsar_broker: PulsarBroker) -> None:
    topic, parted = unique("life-fault"), unique("life-fault-parted")
    await asyncio.to_thread(pulsar_admin.create_partitioned_topic, pulsar_broker.admin_url, parted, 2)
    before = tasks_now()
    async with pulsarwire.connect(pulsar_broker.url, initial_backoff_interval=0.05) as client:
        await use(client, topic, parted)
        assert drop_connections(client) >= 1
        # Closed while the reconnections are under way.
        await asyncio.sleep(0.01)
    await assert_no_new_tasks(before)


async def test_no_task_left_after_reconnecting(pulsar_broker: PulsarBroker) -> None:
    topic = unique("life-again")
    before = tasks_now()
    async with (
        pulsarwire.connect(pulsar_broker.url, initial_backoff_interval=0.05) as client,
        client.producer(topic) as producer,
        client.consumer(topic, group="g") as consumer,
    ):
        assert drop_connections(client) >= 1
        # Sent again once reattached, and received.
        await producer.send(b"after the drop")
        assert (await consumer.receive(timeout=20)).value == b"after the drop"
    await assert_no_new_tasks(before)
