"""Pulsar frozen (SIGSTOP) and killed (SIGKILL) under pulsarwire: dead connections are found, nothing is lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import pulsarwire
from pulsarwire.message import MessageId
from tests.integration.crash import OwnBroker

pytestmark = pytest.mark.integration

KEEPALIVE = 1.0


@pytest.fixture
def own_pulsar(tmp_path: Path) -> Iterator[OwnBroker]:
    broker = OwnBroker("pulsar", tmp_path / "state")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


async def receive_values(consumer: pulsarwire.Consumer, wanted: set[bytes], timeout: float) -> set[bytes]:
    seen: set[bytes] = set()
    async with asyncio.timeout(timeout):
        while not wanted <= seen:
            message = await consumer.receive()
            seen.add(message.value)
            await consumer.ack(message)
    return seen


async def send_all(producer: pulsarwire.Producer, values: list[bytes]) -> list[asyncio.Future[MessageId]]:
    return [await producer.enqueue(value) for value in values]


async def test_a_frozen_broker_is_detected_by_keepalive_and_sends_resume(
    own_pulsar: OwnBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pulsarwire")
    topic = "persistent://public/default/frozen"
    options = {"keepalive_interval": KEEPALIVE, "operation_timeout": 5.0, "connect_timeout": 3.0}
    async with (
        pulsarwire.connect(own_pulsar.url, **options) as client,
        client.consumer(topic, subscription="s", subscription_type="Shared") as consumer,
        client.producer(topic, send_timeout_ms=0) as producer,
    ):
        before = [b"before-%d" % i for i in range(100)]
        await asyncio.gather(*await send_all(producer, before))
        with own_pulsar.stalled():
            during = [b"during-%d" % i for i in range(100)]
            pending = await send_all(producer, during)
            # Two silent keep-alive intervals and the connection is given up, not waited on forever.
            async with asyncio.timeout(20):
                while not any("no traffic" in record.getMessage() for record in caplog.records):
                    await asyncio.sleep(0.2)
            assert not any(future.done() for future in pending)
        async with asyncio.timeout(90):
            await asyncio.gather(*pending)
        # Sent again on a new connection: at least once, so every one arrives (duplicates allowed here).
        await receive_values(consumer, set(before) | set(during), timeout=90)


async def test_a_killed_broker_comes_back_and_pending_sends_complete(own_pulsar: OwnBroker) -> None:
    topic = "persistent://public/default/killed"
    options = {"keepalive_interval": KEEPALIVE, "operation_timeout": 10.0}
    async with (
        pulsarwire.connect(own_pulsar.url, **options) as client,
        client.consumer(topic, subscription="s", subscription_type="Shared") as consumer,
        client.producer(topic, send_timeout_ms=0) as producer,
    ):
        first = [b"first-%d" % i for i in range(200)]
        await asyncio.gather(*await send_all(producer, first))
        url = own_pulsar.url
        await asyncio.to_thread(own_pulsar.kill)
        # Sent while the broker is down: they wait for it, they do not fail.
        second = [b"second-%d" % i for i in range(200)]
        pending = await send_all(producer, second)
        await asyncio.sleep(1)
        assert not any(future.done() for future in pending)
        await asyncio.to_thread(own_pulsar.start)
        assert own_pulsar.url == url
        async with asyncio.timeout(120):
            await asyncio.gather(*pending)
        # Acknowledged before the crash or after: all of them are there for the subscription.
        await receive_values(consumer, set(first) | set(second), timeout=120)
