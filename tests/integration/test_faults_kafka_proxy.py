"""kafkawire through a loopback proxy that drops, stalls and black-holes its connections to Kafka.

The broker's PROXIED listener advertises the proxy's port, so after the first metadata every connection
the client makes (produce, fetch, coordinator) goes through the proxy. What the client promises: a dead
connection is noticed through the request timeout, the client reconnects with backoff (no storm), and
once the path heals every acknowledged record is in the log exactly once (idempotent producer) and the
consumer has read them all.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.testing.endpoints import KafkaBroker
from tests.integration.faultproxy import FaultProxy, assert_backed_off

pytestmark = pytest.mark.integration

PARTITIONS = 2
CLIENT_OPTIONS = {"request_timeout_ms": 2_000, "connect_timeout_ms": 2_000, "retry_backoff_max_ms": 1_000}
FAULT_SECONDS = 6


def proxied(broker: KafkaBroker) -> tuple[int, int]:
    assert broker.proxied_port is not None and broker.proxy_port is not None, "the launcher made no PROXIED listener"
    return broker.proxied_port, broker.proxy_port


@pytest.mark.loop_per_case("fault")
@pytest.mark.parametrize("fault", ["stall", "drop", "blackhole"])
async def test_produce_and_consume_recover_from_a_faulty_path(kafka_broker: KafkaBroker, fault: str) -> None:
    target, listen = proxied(kafka_broker)
    topic = f"kw-proxy-{fault}-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(kafka_broker.url) as direct, direct.admin() as admin:
        await admin.create_topic(topic, partitions=PARTITIONS)
    acked: list[bytes] = []
    consumed: list[bytes] = []
    async with FaultProxy(kafka_broker.host, target, listen_port=listen) as proxy:
        url = f"kafka://127.0.0.1:{listen}"
        async with (
            kafkawire.connect(url, **CLIENT_OPTIONS) as client,
            client.producer(topic, linger_ms=5, delivery_timeout_ms=120_000) as producer,
            client.consumer(topic, start="earliest", fetch_max_wait_ms=200) as consumer,
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
                    consumed.extend(m.value or b"" for m in await consumer.getmany(timeout_ms=200))

            producing = asyncio.create_task(produce())
            consuming = asyncio.create_task(consume())
            try:
                async with asyncio.timeout(30):
                    while len(acked) < 50 or len(consumed) < 50:
                        await asyncio.sleep(0.1)
                before = proxy.accepted
                getattr(proxy, fault)()
                await asyncio.sleep(1)
                acked_in_fault = len(acked)
                await asyncio.sleep(FAULT_SECONDS - 1)
                during = proxy.accepted - before
                if fault != "drop":
                    # Everything goes through the proxy: while it holds the traffic nothing is acknowledged.
                    assert len(acked) == acked_in_fault, "records were acknowledged past a stalled path"
                if fault != "drop":
                    # Request timeouts noticed the silent connections and the client went to connect again ...
                    assert during >= 1, "the client never noticed the dead connections"
                # ... a handful of times. A sanity bound only: through this proxy every attempt is slowed by
                # a timeout, so even a client without backoff stays under it. Backoff itself is measured by
                # test_reconnects_back_off_while_the_broker_refuses.
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
                    while not set(acked) <= set(consumed):
                        await asyncio.sleep(0.1)
            finally:
                stop.set()
                for task in (producing, consuming):
                    task.cancel()
                await asyncio.gather(producing, consuming, return_exceptions=True)
    # Exactly once in the log: read it again directly, not through the proxy.
    async with kafkawire.connect(kafka_broker.url) as direct:
        async with direct.admin() as admin:
            ends = await admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(PARTITIONS)})
        total = sum(end.offset for end in ends.values())
        log: list[bytes] = []
        async with direct.consumer(topic, start="earliest") as reader, asyncio.timeout(60):
            while len(log) < total:
                log.extend(m.value or b"" for m in await reader.getmany(timeout_ms=500))
    assert len(log) == len(set(log)), "a record is in the log twice"
    assert set(acked) <= set(log)


REFUSE_SECONDS = 3.0
BACKOFF_MAX_MS = 300


async def test_reconnects_back_off_while_the_broker_refuses(kafka_broker: KafkaBroker) -> None:
    target, listen = proxied(kafka_broker)
    topic = f"kw-proxy-refuse-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(kafka_broker.url) as direct, direct.admin() as admin:
        await admin.create_topic(topic, partitions=1)
    loop = asyncio.get_running_loop()
    async with (
        FaultProxy(kafka_broker.host, target, listen_port=listen) as proxy,
        kafkawire.connect(
            f"kafka://127.0.0.1:{listen}",
            request_timeout_ms=10_000,
            retry_backoff_ms=50,
            retry_backoff_max_ms=BACKOFF_MAX_MS,
        ) as client,
        client.producer(
            topic, linger_ms=0, delivery_timeout_ms=60_000, retry_backoff_ms=50, retry_backoff_max_ms=BACKOFF_MAX_MS
        ) as producer,
    ):
        await producer.send(b"before")
        proxy.refuse()
        start = loop.time()
        seen = len(proxy.arrivals)
        pending = await producer.enqueue(b"during")
        await asyncio.sleep(REFUSE_SECONDS)
        attempts = [t - start for t in proxy.arrivals[seen:]]
        proxy.heal()
        await asyncio.wait_for(pending, 60)
    # The producer's sender and the metadata refresh it asks for each retry on their own.
    assert_backed_off(attempts, window=REFUSE_SECONDS, maximum=BACKOFF_MAX_MS / 1000, retriers=2)
