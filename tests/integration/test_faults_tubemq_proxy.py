"""tubemqwire's master session through a loopback proxy that drops, stalls and black-holes it.

The master connection carries registration and heartbeats; the broker connections stay direct (the master
hands out the broker's own address). What the client promises: a dead master connection is noticed by
its heartbeats' request timeout, it reconnects with backoff (no storm), and producer and consumer keep
working once the path heals.
"""

from __future__ import annotations

import asyncio
import secrets

import pytest

import tubemqwire
from mqwire.testing.endpoints import TubeMQBroker
from tests.integration.faultproxy import FaultProxy, assert_backed_off

pytestmark = pytest.mark.integration

TOPIC = "faults"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)
OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 2_000, "connect_timeout_ms": 2_000}


async def round_trip(producer: tubemqwire.Producer, consumer: tubemqwire.Consumer, label: str) -> None:
    """Messages sent now reach the consumer within a bound (sent again every few seconds until one does:
    a consumer starting at "latest" sees only what arrives after the master gave it the partition)."""
    prefix = f"{label}-{secrets.token_hex(4)}-".encode()
    async with asyncio.timeout(90):
        for attempt in range(1000):
            try:
                await producer.send(prefix + b"%d" % attempt)
            except tubemqwire.MqwireError:
                await asyncio.sleep(0.5)
                continue
            try:
                message = await consumer.getone(timeout=3)
            except TimeoutError:
                continue
            await consumer.ack(message)
            if message.value.startswith(prefix):
                return
    pytest.fail(f"none of the {label!r} messages came back in 1000 sends")


@pytest.mark.loop_per_case("fault")
@pytest.mark.parametrize("fault", ["drop", "blackhole", "stall"])
async def test_the_master_session_survives_a_faulty_path(tubemq_broker: TubeMQBroker, fault: str) -> None:
    host, port = tubemq_broker.url.removeprefix("tubemq://").split(":")
    async with FaultProxy(host, int(port)) as proxy:
        url = f"tubemq://127.0.0.1:{proxy.port}"
        async with (
            tubemqwire.connect(url, **OPTIONS) as client,
            client.producer(TOPIC) as producer,
            client.consumer(TOPIC, group=f"faults-{fault}-{secrets.token_hex(3)}", start="latest") as consumer,
        ):
            await round_trip(producer, consumer, "before")
            before = proxy.accepted
            if fault == "drop":
                proxy.drop()
                await asyncio.sleep(3)
            else:
                getattr(proxy, fault)()
                # Several heartbeat periods and request timeouts with no answer from the master.
                await asyncio.sleep(8)
                during = proxy.accepted - before
                # The silence was noticed and the client went looking for the master again ...
                assert during >= 1, "the client never noticed the dead master connection"
                # ... a handful of times. A sanity bound only: through this proxy every attempt is slowed by a
                # request timeout, so even a client without backoff stays under it. Backoff itself is measured
                # by test_reconnects_back_off_while_the_master_refuses.
                assert during <= 10, f"{during} connections in 8 s"
                proxy.heal()
            await round_trip(producer, consumer, "after")
            if fault == "drop":
                assert 1 <= proxy.accepted - before <= 5


REFUSE_SECONDS = 3.0
HEARTBEAT_MS = 500


async def test_reconnects_back_off_while_the_master_refuses(tubemq_broker: TubeMQBroker) -> None:
    host, port = tubemq_broker.url.removeprefix("tubemq://").split(":")
    loop = asyncio.get_running_loop()
    async with (
        FaultProxy(host, int(port)) as proxy,
        tubemqwire.connect(
            f"tubemq://127.0.0.1:{proxy.port}",
            heartbeat_interval_ms=HEARTBEAT_MS,
            request_timeout_ms=2_000,
            connect_timeout_ms=2_000,
        ) as client,
        client.producer(TOPIC) as producer,
    ):
        await producer.send(b"before")
        proxy.refuse()
        start = loop.time()
        seen = len(proxy.arrivals)
        await asyncio.sleep(REFUSE_SECONDS)
        attempts = [t - start for t in proxy.arrivals[seen:]]
        proxy.heal()
    # The producer's heartbeat loop is what reconnects to the master: after a failure it waits its backoff
    # capped at the heartbeat interval, and each heartbeat tries the master twice (the second after the
    # master link's own short backoff).
    assert_backed_off(attempts, window=REFUSE_SECONDS, maximum=HEARTBEAT_MS / 1000, retriers=1, per_retry=2)
