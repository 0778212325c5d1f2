"""Pulsar frozen (SIGSTOP) and killed (SIGKILL) under pulsarwire: dead connections are found, nothing is lost."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import pytest

import pulsarwire
from pulsarwire.message import MessageId
from tests.integration.crash import OwnBroker

# What these tests show is recovery from a broker's crash or freeze, through the clients' reconnects; how a connection
# is lost and made again on each event loop is shown on both loops by the fault-proxy tests. They run on asyncio's
# loop only, which keeps CI within its time.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]

KEEPALIVE = 1.0


@pytest.fixture(scope="module")
def module_pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    with OwnBroker.for_module("pulsar", tmp_path_factory.mktemp("own-pulsar") / "state") as broker:
        yield broker


@pytest.fixture
def own_pulsar(module_pulsar: OwnBroker) -> OwnBroker:
    """The module's own broker, up (each test uses topics and subscriptions of its own on it)."""
    return module_pulsar.revived()


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


async def backlog(consumer: pulsarwire.Consumer) -> int:
    """The subscription's backlog as the broker counts it (entries: one per message without batching)."""
    stats = await consumer.refresh_lag()
    return sum(partition.lag or 0 for partition in stats.lag)


async def test_a_subscription_resumes_after_a_crash_from_what_it_acknowledged(own_pulsar: OwnBroker) -> None:
    topic = "persistent://public/default/resume"
    values = [b"%d" % i for i in range(200)]
    acknowledged: list[bytes] = []
    async with (
        pulsarwire.connect(own_pulsar.url, keepalive_interval=KEEPALIVE, operation_timeout=10.0) as client,
        client.consumer(topic, subscription="resume", subscription_type="Exclusive") as consumer,
    ):
        async with client.producer(topic, send_timeout_ms=0, batching_enabled=False) as producer:
            await asyncio.gather(*await send_all(producer, values))
        async with asyncio.timeout(60):
            # A known part acknowledged (the first 100), then 50 more received and left unacknowledged.
            while len(acknowledged) < 99:
                message = await consumer.receive()
                await consumer.ack(message)
                acknowledged.append(message.value)
            await consumer.flush_acks()
            # The broker stores a subscription's position at most once a second (its default
            # managedLedgerDefaultMarkDeleteRateLimit) and keeps later moves in memory only, where a crash
            # loses them: at least once, not exactly once. The last acknowledgement comes after that second,
            # so the position it moves to is stored.
            await asyncio.sleep(1.5)
            message = await consumer.receive()
            await consumer.ack(message)
            acknowledged.append(message.value)
            unacknowledged_seen = [(await consumer.receive()).value for _ in range(50)]
        # The broker has taken every acknowledgement in (its backlog is what is left) before it is killed.
        left = -1
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(30):
                while (left := await backlog(consumer)) != len(values) - len(acknowledged):
                    await asyncio.sleep(0.2)
        assert left == len(values) - len(acknowledged), f"the broker's backlog stayed at {left}"
        assert acknowledged == values[:100]
        assert unacknowledged_seen == values[100:150]
        await own_pulsar.crash_and_restart(down_seconds=1)
        # The same consumer, reconnected to the restarted broker: what it gets, in order, as a list, until
        # every unacknowledged message came (or the bound ran out).
        after: list[bytes] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60):
                while not set(values[100:]) <= set(after):
                    message = await consumer.receive()
                    after.append(message.value)
                    await consumer.ack(message)
    again = [value for value in after if value in acknowledged]
    assert not again, f"{len(again)} acknowledged messages delivered again after the crash, e.g. {again[:5]}"
    missing = [value for value in values[100:] if value not in after]
    assert not missing, f"{len(missing)} unacknowledged messages missing after the crash, e.g. {missing[:5]}"
