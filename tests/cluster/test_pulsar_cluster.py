"""A Pulsar cluster of two brokers (ZooKeeper, one bookie) moving topics while pulsarwire produces and consumes.

A partitioned topic in a namespace with deduplication, another in a namespace without it, a producer on each,
and one consumer of each subscription type (Exclusive, Failover, Shared, Key_Shared) on the first. Faults: the
partitions unloaded three times, then the owner of partition 0 SIGKILLed and started again. What must hold:
every acknowledged message reaches every subscription (each acknowledges after processing); with
deduplication no message is twice in the topic; without it, duplicates are counted and bounded by the sends
in flight at a fault.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest

import pulsarwire
from mqwire.testing import pulsar_admin
from mqwire.testing.cluster import RunningCluster
from mqwire.testing.pulsar_cluster import PulsarCluster
from tests.cluster.pauses import AckClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PARTITIONS = 4
SENDS_PER_SECOND = 100
MAX_PENDING = 200
SUBSCRIPTION_TYPES = ("Exclusive", "Failover", "Shared", "Key_Shared")


@dataclass
class Sent:
    clock: AckClock = field(default_factory=AckClock)
    values: list[bytes] = field(default_factory=list)
    acknowledged: set[bytes] = field(default_factory=set)
    failures: dict[str, int] = field(default_factory=dict)
    pending: set[asyncio.Future[pulsarwire.Receipt]] = field(default_factory=set)

    def done(self, value: bytes, future: asyncio.Future[pulsarwire.Receipt]) -> None:
        """Record the outcome of the send of ``value``."""
        self.pending.discard(future)
        error = None if future.cancelled() else future.exception()
        if future.cancelled() or error is not None:
            name = "cancelled" if error is None else type(error).__name__
            self.failures[name] = self.failures.get(name, 0) + 1
        else:
            self.acknowledged.add(value)
            self.clock.ack()


async def produce(producer: pulsarwire.Producer, sent: Sent, stop: asyncio.Event) -> None:
    i = 0
    started = time.monotonic()
    while not stop.is_set():
        value = b"m-%d" % i
        i += 1
        sent.values.append(value)
        future = await producer.enqueue(value, key=b"k-%d" % (i % 16))
        sent.pending.add(future)
        future.add_done_callback(functools.partial(sent.done, value))
        ahead = i / SENDS_PER_SECOND - (time.monotonic() - started)
        if ahead > 0:
            await asyncio.sleep(ahead)


async def consume(consumer: pulsarwire.Consumer, seen: list[bytes], stop: asyncio.Event) -> None:
    while not stop.is_set():
        for message in await consumer.getmany(timeout=0.5, max_records=500):
            seen.append(message.value)
            await consumer.ack(message)


async def settle(sent: Sent, timeout: float = 120) -> None:
    async with asyncio.timeout(timeout):
        while sent.pending:
            await asyncio.sleep(0.2)


async def read_topic(client: pulsarwire.Client, topic: str, count: int, quiet: float = 10) -> list[bytes]:
    """Every message of ``topic`` from the start, through a new subscription (stops after ``quiet`` s with nothing)."""
    values: list[bytes] = []
    async with client.consumer(topic, group=f"reader-{uuid.uuid4().hex[:6]}", start="earliest") as consumer:
        last = time.monotonic()
        while len(values) < count or time.monotonic() - last < 2:
            batch = await consumer.getmany(timeout=1, max_records=1000)
            if batch:
                last = time.monotonic()
            elif time.monotonic() - last > quiet:
                break
            for message in batch:
                values.append(message.value)
                await consumer.ack(message)
    return values


async def run_faults(cluster: RunningCluster, topics: list[str], clock: AckClock) -> None:
    """Every partition of ``topics`` unloaded three times, then the owner of the first one's partition 0
    SIGKILLed and, 15 s later, started again."""
    endpoint = cluster.endpoint
    assert isinstance(endpoint, PulsarCluster)
    partitions = [f"{t}-partition-{p}" for t in topics for p in range(PARTITIONS)]
    for round_ in range(3):
        clock.event(f"unload {round_ + 1}")
        for partition in partitions:
            await asyncio.to_thread(endpoint.unload, partition)
        await asyncio.sleep(5)
    victim = await asyncio.to_thread(endpoint.owner, f"{topics[0]}-partition-0")
    assert victim is not None
    clock.event(f"owner SIGKILL ({victim})")
    await asyncio.to_thread(cluster.kill, victim)
    await asyncio.sleep(15)
    await asyncio.to_thread(cluster.start, victim)
    await asyncio.sleep(5)


async def dedup_namespace(endpoint: PulsarCluster, suffix: str) -> str:
    namespace = f"public/dedup-{suffix}"
    await asyncio.to_thread(pulsar_admin.create_namespace, endpoint.admin_url, namespace)
    await asyncio.to_thread(pulsar_admin.set_namespace_deduplication, endpoint.admin_url, namespace, True)
    return namespace


async def test_bundle_unloads_and_a_broker_crash_under_every_subscription_type(pulsar_cluster: RunningCluster) -> None:
    await asyncio.to_thread(pulsar_cluster.ensure_all_up)
    endpoint = pulsar_cluster.endpoint
    assert isinstance(endpoint, PulsarCluster)
    suffix = uuid.uuid4().hex[:6]
    dedup_ns, plain_ns = await dedup_namespace(endpoint, suffix), f"public/plain-{suffix}"
    await asyncio.to_thread(pulsar_admin.create_namespace, endpoint.admin_url, plain_ns)
    dedup_topic, plain_topic = f"persistent://{dedup_ns}/orders", f"persistent://{plain_ns}/orders"
    for topic in (dedup_topic, plain_topic):
        await asyncio.to_thread(pulsar_admin.create_partitioned_topic, endpoint.admin_url, topic, PARTITIONS)

    dedup_sent, plain_sent = Sent(), Sent()
    seen: dict[str, list[bytes]] = {kind: [] for kind in SUBSCRIPTION_TYPES}
    async with pulsarwire.connect(pulsar_cluster.url, operation_timeout=30) as client:
        async with (
            client.producer(
                dedup_topic, producer_name=f"dedup-{suffix}", send_timeout_ms=60_000, max_pending_messages=MAX_PENDING
            ) as dedup_producer,
            client.producer(plain_topic, send_timeout_ms=60_000, max_pending_messages=MAX_PENDING) as plain_producer,
            contextlib.AsyncExitStack() as stack,
        ):
            consumers = {
                kind: await stack.enter_async_context(
                    client.consumer(dedup_topic, group=f"sub-{kind.lower()}", subscription_type=kind, start="earliest")
                )
                for kind in SUBSCRIPTION_TYPES
            }
            stop_producing, stop_consuming = asyncio.Event(), asyncio.Event()
            consuming = [asyncio.create_task(consume(c, seen[k], stop_consuming)) for k, c in consumers.items()]
            producing = [
                asyncio.create_task(produce(dedup_producer, dedup_sent, stop_producing)),
                asyncio.create_task(produce(plain_producer, plain_sent, stop_producing)),
            ]
            await asyncio.sleep(5)
            await run_faults(pulsar_cluster, [dedup_topic, plain_topic], dedup_sent.clock)
            stop_producing.set()
            await asyncio.gather(*producing)
            await settle(dedup_sent)
            await settle(plain_sent)
            try:
                async with asyncio.timeout(120):
                    while not all(dedup_sent.acknowledged <= set(values) for values in seen.values()):
                        await asyncio.sleep(0.5)
            except TimeoutError:
                pass
            stop_consuming.set()
            await asyncio.gather(*consuming)
        dedup_log = await read_topic(client, dedup_topic, len(dedup_sent.acknowledged))
        plain_log = await read_topic(client, plain_topic, len(plain_sent.acknowledged))

    report = {
        kind: (len(dedup_sent.acknowledged - set(values)), len(values) - len(set(values)))
        for kind, values in seen.items()
    }
    dedup_twice = sum(n - 1 for n in collections.Counter(dedup_log).values() if n > 1)
    plain_twice = sum(n - 1 for n in collections.Counter(plain_log).values() if n > 1)
    print(
        f"\npulsarwire on pulsar-cluster: {len(dedup_sent.acknowledged)} acknowledged with deduplication "
        f"(failed {dedup_sent.failures}), {len(plain_sent.acknowledged)} without (failed {plain_sent.failures}); "
        f"per subscription (missing, redelivered): {report}; in the log twice: {dedup_twice} with deduplication, "
        f"{plain_twice} without; longest pause between acknowledgements {dedup_sent.clock.longest_pause():.2f} s; "
        f"per fault: {dedup_sent.clock.pauses_after_events()}"
    )
    # A reconnection backoff stops short of the oldest pending send's timeout: no send times out.
    assert not dedup_sent.failures and not plain_sent.failures, (dedup_sent.failures, plain_sent.failures)
    for kind, (missing, _) in report.items():
        assert not missing, f"{kind}: {missing} acknowledged messages never delivered"
    assert dedup_sent.acknowledged <= set(dedup_log), "acknowledged messages missing from the topic"
    assert plain_sent.acknowledged <= set(plain_log), "acknowledged messages missing from the topic"
    assert dedup_twice == 0, f"{dedup_twice} messages twice in the topic despite deduplication"
    # Only a send in flight when its broker went away can be written twice: 4 unloads and a crash.
    assert plain_twice <= 4 * MAX_PENDING


def produce_with_pulsar_client(
    url: str, topic: str, name: str, clock: AckClock, stop: threading.Event
) -> dict[str, int]:
    """The reference client (pulsar-client, the C++ library) at the same rate and settings: its
    acknowledgements go to ``clock``; returns the count of acknowledged and failed sends."""
    import pulsar  # type: ignore[import-untyped]  # the reference client, a test dependency only

    outcome = {"acknowledged": 0, "failed": 0}
    guard = threading.Lock()

    def delivered(result: object, message_id: object) -> None:
        with guard:
            if result == pulsar.Result.Ok:
                outcome["acknowledged"] += 1
                clock.ack()
            else:
                outcome["failed"] += 1

    client = pulsar.Client(url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(
            topic,
            producer_name=name,
            send_timeout_millis=60_000,
            max_pending_messages=MAX_PENDING,
            block_if_queue_full=True,
        )
        i = 0
        started = time.monotonic()
        while not stop.is_set():
            producer.send_async(b"m-%d" % i, delivered, partition_key=f"k-{i % 16}")
            i += 1
            ahead = i / SENDS_PER_SECOND - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        producer.flush()
        producer.close()
    finally:
        client.close()
    return outcome


@pytest.mark.reference_pause
async def test_failover_pause_of_the_reference_client(pulsar_cluster: RunningCluster) -> None:
    """The same faults under the reference client's producer, for the pause to compare with ours."""
    await asyncio.to_thread(pulsar_cluster.ensure_all_up)
    endpoint = pulsar_cluster.endpoint
    assert isinstance(endpoint, PulsarCluster)
    suffix = uuid.uuid4().hex[:6]
    topic = f"persistent://{await dedup_namespace(endpoint, suffix)}/orders"
    await asyncio.to_thread(pulsar_admin.create_partitioned_topic, endpoint.admin_url, topic, PARTITIONS)
    clock = AckClock()
    stop = threading.Event()
    producing = asyncio.create_task(
        asyncio.to_thread(produce_with_pulsar_client, pulsar_cluster.url, topic, f"ref-{suffix}", clock, stop)
    )
    await asyncio.sleep(5)
    await run_faults(pulsar_cluster, [topic], clock)
    stop.set()
    outcome = await producing
    print(
        f"\npulsar-client on pulsar-cluster: {outcome}, longest pause between acknowledgements "
        f"{clock.longest_pause():.2f} s; per fault: {clock.pauses_after_events()}"
    )
    assert outcome["acknowledged"] > 0
