"""No task of tubemqwire outlives ``close()``: the asyncio tasks are counted before connecting and after
closing, under normal use and after faults (a producer whose topic the master never places, a client whose
master cannot be reached)."""

from __future__ import annotations

import asyncio
import secrets

import pytest

import tubemqwire
from mqwire.testing.endpoints import TubeMQBroker
from mqwire.testing.tubemq_spares import FreshTopics

pytestmark = pytest.mark.integration

OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 5_000}


def other_tasks() -> set[asyncio.Task[object]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def settled(before: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """Tasks left over; a moment is given to callbacks that finish tasks already cancelled."""
    await asyncio.sleep(0.1)
    return {task for task in other_tasks() - before if not task.done()}


@pytest.fixture(scope="module")
def topic(tubemq_fresh_topics: FreshTopics) -> str:
    return tubemq_fresh_topics.take({"life": 2})["life"]


async def test_no_task_outlives_close_after_normal_use(tubemq_broker: TubeMQBroker, topic: str) -> None:
    before = other_tasks()
    async with (
        tubemqwire.connect(tubemq_broker.url, **OPTIONS) as client,
        client.consumer(topic, group=f"life_{secrets.token_hex(3)}", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        for i in range(20):
            await producer.enqueue(b"m%d" % i, key=b"k%d" % (i % 3))
        await producer.flush()
        got = 0
        while got < 20:
            message = await consumer.receive(timeout=60)
            await consumer.ack(message)
            got += 1
        assert len(other_tasks() - before) > 0  # heartbeats and fetchers run meanwhile
    assert await settled(before) == set()


async def test_no_task_outlives_close_after_faults(tubemq_broker: TubeMQBroker, topic: str) -> None:
    before = other_tasks()
    client = tubemqwire.connect(tubemq_broker.url, **OPTIONS)
    await client.start()
    consumer = client.consumer(topic, group=f"life_{secrets.token_hex(3)}")
    await consumer.start()
    with pytest.raises(tubemqwire.TopicNoPartitionError):
        await client.producer(f"mql{secrets.token_hex(3)}_absent", metadata_timeout_ms=1500).start()
    # A receive cut short by the close itself.
    waiting = asyncio.create_task(consumer.receive())
    await asyncio.sleep(0.2)
    await client.close()
    with pytest.raises(tubemqwire.ClosedError):
        await waiting
    assert await settled(before) == set()

    unreachable = tubemqwire.connect("tubemq://127.0.0.1:1", connect_timeout_ms=500)
    with pytest.raises(tubemqwire.ConnectError):
        await unreachable.start()
    await unreachable.close()
    assert await settled(before) == set()
