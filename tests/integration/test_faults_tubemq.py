"""TubeMQ (master and broker) killed with SIGKILL and restarted under tubemqwire: nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import tubemqwire
from tests.integration.crash import OwnBroker

pytestmark = pytest.mark.integration

TOPIC = "crash"
OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 5_000}


@pytest.fixture
def own_tubemq(tmp_path: Path) -> Iterator[OwnBroker]:
    broker = OwnBroker("tubemq", tmp_path / "state", "--tubemq-topic", f"{TOPIC}:2")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


async def receive_values(consumer: tubemqwire.Consumer, wanted: set[bytes], timeout: float) -> set[bytes]:
    seen: set[bytes] = set()
    async with asyncio.timeout(timeout):
        while not wanted <= seen:
            try:
                message = await consumer.getone(timeout=5)
            except TimeoutError:
                continue
            seen.add(message.value)
            await consumer.ack(message)
    return seen


async def test_acknowledged_messages_survive_a_crash_of_master_and_broker(own_tubemq: OwnBroker) -> None:
    async with (
        tubemqwire.connect(own_tubemq.url, **OPTIONS) as client,
        client.consumer(TOPIC, group="crash-group", start="earliest") as consumer,
        client.producer(TOPIC) as producer,
    ):
        first = [b"first-%d" % i for i in range(100)]
        await asyncio.gather(*[await producer.enqueue(value) for value in first])
        await receive_values(consumer, set(first), timeout=90)

        url = own_tubemq.url
        await asyncio.to_thread(own_tubemq.kill)
        await asyncio.to_thread(own_tubemq.start)
        assert own_tubemq.url == url

        # Once master and broker are back the producer and the consumer find them again by themselves.
        second = [b"second-%d" % i for i in range(100)]
        acknowledged: set[bytes] = set()
        failures = 0
        async with asyncio.timeout(120):
            for value in second:
                while value not in acknowledged:
                    try:
                        await producer.send(value)
                    except tubemqwire.MqwireError:
                        failures += 1  # not acknowledged: the master or broker is still coming up
                        await asyncio.sleep(0.5)
                    else:
                        acknowledged.add(value)
        await receive_values(consumer, acknowledged, timeout=120)
