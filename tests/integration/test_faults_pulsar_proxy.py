"""pulsarwire through a loopback proxy that drops, stalls and black-holes its connections to Pulsar.

The client is given the proxy's address as its service URL. The standalone broker answers lookups with
``proxy_through_service_url``, so every connection the client makes goes to the service URL: through the
proxy. What the client promises: a silent connection is found by its keep-alive, the client reconnects
with backoff (no storm), producers resend what was pending and consumers resubscribe, and once the path
heals every acknowledged message reaches the subscription (at least once: no deduplication here).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

import pulsarwire
from mqwire.testing.endpoints import PulsarBroker
from tests.integration.faultproxy import FaultProxy, assert_backed_off

pytestmark = pytest.mark.integration

OPTIONS = {"keepalive_interval": 1.0, "operation_timeout": 3.0, "connect_timeout": 2.0}
FAULT_SECONDS = 6


@pytest.mark.loop_per_case("fault")
@pytest.mark.parametrize("fault", ["drop", "blackhole", "stall"])
async def test_produce_and_consume_recover_from_a_faulty_path(pulsar_broker: PulsarBroker, fault: str) -> None:
    topic = f"persistent://public/default/proxy-{fault}-{uuid.uuid4().hex[:8]}"
    acked: list[bytes] = []
    received: set[bytes] = set()
    async with (
        FaultProxy(pulsar_broker.host, pulsar_broker.port) as proxy,
        pulsarwire.connect(f"pulsar://127.0.0.1:{proxy.port}", **OPTIONS) as client,
        client.consumer(topic, subscription="s", subscription_type="Shared") as consumer,
        client.producer(topic, send_timeout_ms=0, batching_max_publish_delay_ms=5) as producer,
    ):
        stop = asyncio.Event()

        async def produce() -> None:
            n = 0
            while not stop.is_set():
                value = b"%s-%d" % (fault.encode(), n)
                n += 1
                future = await producer.enqueue(value)
                future.add_done_callback(
                    lambda f, v=value: acked.append(v) if not f.cancelled() and f.exception() is None else None
                )
                await asyncio.sleep(0.005)

        async def consume() -> None:
            while True:
                message = await consumer.receive()
                received.add(message.value)
                await consumer.ack(message)

        producing = asyncio.create_task(produce())
        consuming = asyncio.create_task(consume())
        try:
            async with asyncio.timeout(30):
                while len(acked) < 50 or len(received) < 50:
                    await asyncio.sleep(0.1)
            before = proxy.accepted
            getattr(proxy, fault)()
            await asyncio.sleep(1)
            acked_in_fault = len(acked)
            await asyncio.sleep(FAULT_SECONDS - 1)
            during = proxy.accepted - before
            if fault != "drop":
                assert len(acked) == acked_in_fault, "messages were acknowledged past a stalled path"
                # The keep-alive found the silent connection and the client went to connect again ...
                assert during >= 1, "the client never noticed the dead connection"
            else:
                assert during >= 1, "the client did not reconnect after its connection was reset"
            # ... a handful of times. A sanity bound only: through this proxy every attempt is slowed by a
            # keep-alive or request timeout, so even a client without backoff stays under it. Backoff itself is
            # measured by test_reconnects_back_off_while_the_broker_refuses.
            assert during <= 20, f"{during} connections in {FAULT_SECONDS} s"
            proxy.heal()
            acked_at_heal = len(acked)
            async with asyncio.timeout(60):
                while len(acked) < acked_at_heal + 50:
                    await asyncio.sleep(0.1)
            stop.set()
            await producing
            await producer.flush()
            async with asyncio.timeout(60):
                while not set(acked) <= received:
                    await asyncio.sleep(0.1)
        finally:
            stop.set()
            for task in (producing, consuming):
                task.cancel()
            await asyncio.gather(producing, consuming, return_exceptions=True)


REFUSE_SECONDS = 3.0
BACKOFF_MAX = 0.3


async def test_reconnects_back_off_while_the_broker_refuses(pulsar_broker: PulsarBroker) -> None:
    topic = f"persistent://public/default/proxy-refuse-{uuid.uuid4().hex[:8]}"
    loop = asyncio.get_running_loop()
    async with (
        FaultProxy(pulsar_broker.host, pulsar_broker.port) as proxy,
        pulsarwire.connect(
            f"pulsar://127.0.0.1:{proxy.port}",
            keepalive_interval=1.0,
            operation_timeout=3.0,
            connect_timeout=2.0,
            initial_backoff_interval=0.05,
            max_backoff_interval=BACKOFF_MAX,
        ) as client,
        client.producer(topic, send_timeout_ms=0) as producer,
    ):
        await producer.send(b"before")
        proxy.refuse()
        start = loop.time()
        seen = len(proxy.arrivals)
        await asyncio.sleep(REFUSE_SECONDS)
        attempts = [t - start for t in proxy.arrivals[seen:]]
        proxy.heal()
        await asyncio.wait_for(producer.send(b"after"), 60)
    # One producer: one reconnection loop.
    assert_backed_off(attempts, window=REFUSE_SECONDS, maximum=BACKOFF_MAX, retriers=1)
