"""Topics that change under running clients (regex subscriptions, added partitions) and key-based batching."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections import defaultdict
from typing import Any

import pulsar
import pytest

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.message import Message

pytestmark = pytest.mark.integration

NAMESPACE = "public/default"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def receive_all(consumer: pulsarwire.Consumer, count: int, timeout: float = 20) -> list[Message]:
    messages = []
    async with asyncio.timeout(timeout):
        while len(messages) < count:
            message = await consumer.receive()
            messages.append(message)
            await consumer.ack(message)
    return messages


async def test_regex_subscription_follows_topics_created_and_deleted(pulsar_broker: PulsarBroker) -> None:
    prefix = unique("regex")
    admin = pulsar_admin
    first = admin.create_topic(pulsar_broker.admin_url, f"{prefix}-a")
    partitioned = admin.create_partitioned_topic(pulsar_broker.admin_url, f"{prefix}-p", 2)
    admin.create_topic(pulsar_broker.admin_url, f"other-{prefix}")  # does not match
    pattern = re.compile(f"persistent://{NAMESPACE}/{prefix}-.*")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(pattern, group="g", start="earliest", pattern_auto_discovery_period_ms=500) as consumer,
    ):
        assert sorted(consumer.topics) == sorted([first, partitioned])
        async with client.producer(first) as producer:
            await producer.send(b"to-a")
        async with client.producer(partitioned) as producer:
            for i in range(4):
                await producer.send(b"to-p%d" % i)
        async with client.producer(f"other-{prefix}") as producer:
            await producer.send(b"to-other")
        got = await receive_all(consumer, 5)
        assert sorted(m.value for m in got) == [b"to-a", b"to-p0", b"to-p1", b"to-p2", b"to-p3"]
        # A topic created later is found by the periodic check, from its start.
        later = f"persistent://{NAMESPACE}/{prefix}-later"
        async with client.producer(later) as producer:
            await producer.send(b"to-later")
        message = (await receive_all(consumer, 1))[0]
        assert (message.value, message.topic) == (b"to-later", later)
        assert later in consumer.topics
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=1.5)  # the unmatched topic's message never comes


async def test_consumer_picks_up_partitions_added_while_running(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("grow-consumer"), 2)
    options: dict[str, Any] = {"auto_update_partitions_interval_ms": 500}
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", **options) as consumer,
    ):
        pulsar_admin.update_partitions(pulsar_broker.admin_url, topic, 4)
        # Written by the official client straight to the new partitions, so only our consumer's update finds them.
        theirs = pulsar.Client(pulsar_broker.url)
        try:
            for partition in (2, 3):
                producer = theirs.create_producer(f"{topic}-partition-{partition}")
                producer.send(b"new-%d" % partition)
                producer.close()
        finally:
            theirs.close()
        got = await receive_all(consumer, 2)
        assert sorted((m.value, m.partition) for m in got) == [(b"new-2", 2), (b"new-3", 3)]


async def test_producer_uses_partitions_added_while_running(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("grow-producer"), 2)
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.producer(topic, batching_enabled=False, auto_update_partitions_interval_ms=500) as producer,
    ):
        assert producer.partitions == 2
        pulsar_admin.update_partitions(pulsar_broker.admin_url, topic, 3)
        async with asyncio.timeout(20):
            while producer.partitions < 3:
                await asyncio.sleep(0.1)
        ids = [await producer.send(b"m%d" % i) for i in range(9)]
        assert sorted({i.partition for i in ids}) == [0, 1, 2]
    on_new = [b"m%d" % n for n, message_id in enumerate(ids) if message_id.partition == 2]
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(f"{topic}-partition-2", group="g", start="earliest") as consumer,
    ):
        got = await receive_all(consumer, len(on_new))
    assert [m.value for m in got] == on_new


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
async def test_key_based_batches_reach_key_shared_consumers_of_both_clients_per_key(
    pulsar_broker: PulsarBroker,
) -> None:
    topic = f"persistent://{NAMESPACE}/{unique('key-based')}"
    keys = [f"key-{i}" for i in range(16)]
    values = [(keys[n % len(keys)], f"{keys[n % len(keys)]}/{n}".encode()) for n in range(320)]
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        their_consumers = [
            theirs.subscribe(topic, "their-sub", consumer_type=pulsar.ConsumerType.KeyShared,
                             initial_position=pulsar.InitialPosition.Earliest, consumer_name=f"c{i}")
            for i in range(2)
        ]
        async with pulsarwire.connect(pulsar_broker.url) as client:
            ours = [
                client.consumer(topic, group="our-sub", subscription_type="Key_Shared", start="earliest",
                                consumer_name=f"o{i}")
                for i in range(2)
            ]
            for consumer in ours:
                await consumer.start()
            async with client.producer(topic, batcher_builder="key_based", batching_max_publish_delay_ms=50) as p:
                futures = [await p.enqueue(value, key=key.encode()) for key, value in values]
                ids = [await future for future in futures]
            # Batched: several messages per entry, and every entry holds one key.
            per_entry: dict[Any, set[str]] = defaultdict(set)
            for (key, _), message_id in zip(values, ids, strict=True):
                per_entry[message_id.entry].add(key)
            assert len(per_entry) < len(values) // 4
            assert all(len(entry_keys) == 1 for entry_keys in per_entry.values())

            # Our two consumers: each key at exactly one of them, in order.
            holders: dict[str, set[int]] = defaultdict(set)
            order: dict[str, list[int]] = defaultdict(list)

            async def take(index: int, consumer: pulsarwire.Consumer) -> None:
                while True:
                    message = await consumer.receive()
                    key = message.key.decode()  # type: ignore[union-attr]
                    holders[key].add(index)
                    order[key].append(int(message.value.split(b"/")[1]))
                    await consumer.ack(message)

            tasks = [asyncio.create_task(take(i, c)) for i, c in enumerate(ours)]
            try:
                async with asyncio.timeout(30):
                    while sum(len(v) for v in order.values()) < len(values):
                        await asyncio.sleep(0.05)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                for consumer in ours:
                    await consumer.close()
            assert all(len(at) == 1 for at in holders.values())
            assert {i for at in holders.values() for i in at} == {0, 1}
            assert all(numbers == sorted(numbers) for numbers in order.values())

        # The official client's two Key_Shared consumers: the same, on their side.
        def consume() -> dict[str, set[int]]:
            seen: dict[str, set[int]] = defaultdict(set)
            remaining = len(values)
            deadline = time.monotonic() + 60
            while remaining and time.monotonic() < deadline:
                for index, consumer in enumerate(their_consumers):
                    try:
                        message = consumer.receive(timeout_millis=100)
                    except pulsar.Timeout:
                        continue
                    seen[message.partition_key()].add(index)
                    consumer.acknowledge(message)
                    remaining -= 1
            return seen

        their_holders = await asyncio.to_thread(consume)
        assert set(their_holders) == set(keys)
        assert all(len(at) == 1 for at in their_holders.values())
        assert {i for at in their_holders.values() for i in at} == {0, 1}
    finally:
        theirs.close()


async def test_regex_subscription_hears_of_new_topics_from_the_broker_watch(pulsar_broker: PulsarBroker) -> None:
    prefix = unique("watched")
    pattern = re.compile(f"persistent://{NAMESPACE}/{prefix}-.*")
    # A periodic check an hour away: only the broker's topic-list watch can bring the new topic in time.
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(pattern, group="g", start="earliest", pattern_auto_discovery_period_ms=3_600_000) as consumer,
    ):
        assert consumer.topics == []
        assert consumer._topic_watch is not None  # the standalone supports topic-list watchers
        created = f"persistent://{NAMESPACE}/{prefix}-new"
        async with client.producer(created) as producer:
            await producer.send(b"first")
        message = (await receive_all(consumer, 1, timeout=30))[0]
        assert (message.value, message.topic) == (b"first", created)
        assert consumer.topics == [created]
