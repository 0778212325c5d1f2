"""A share consumer on a three-node Kafka cluster: it fetches from the leader of every partition (one share
session per leader), and goes on through a leader's SIGKILL, every record delivered and accepted."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import kafkawire
from mqwire.common.errors import RetriableError
from mqwire.testing.cluster import RunningCluster
from mqwire.testing.kafka_cluster import KafkaCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 3


async def leaders(admin: kafkawire.Admin, topic: str) -> dict[int, int]:
    (description,) = await admin.describe_topics([topic])
    return {p.partition: p.leader for p in description.partitions}


async def start_at_the_beginning(admin: kafkawire.Admin, group: str, topic: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            await admin.alter_share_group_offsets(group, {(topic, p): 0 for p in range(PARTITIONS)})
            return
        except RetriableError:  # the coordinator learns of a topic just created a moment later
            assert time.monotonic() < deadline
            await asyncio.sleep(0.5)


async def new_topic_and_group(admin: kafkawire.Admin, label: str) -> tuple[str, str]:
    """A new topic replicated to every node, and a new share group that starts at its beginning."""
    topic, group = f"{label}-{uuid.uuid4().hex[:8]}", f"{label}-{uuid.uuid4().hex[:8]}"
    await admin.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    await start_at_the_beginning(admin, group, topic)
    return topic, group


async def produce(client: kafkawire.Client, topic: str, values: list[str]) -> None:
    async with client.producer(topic) as producer:
        for i, value in enumerate(values):
            await producer.enqueue(value.encode(), partition=i % PARTITIONS)
        await producer.flush(timeout=120)


async def receive_all(consumer: kafkawire.ShareConsumer, expected: set[str], seen: set[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not expected <= seen:
        assert time.monotonic() < deadline, f"{len(expected - seen)} records not delivered"
        for message in await consumer.getmany(timeout=0.5):
            seen.add(message.value.decode())
        # Acknowledgements refused while a leader moves come back as deliveries: nothing to do here.
        await consumer.commit()


async def test_a_share_consumer_reads_every_leader_and_through_a_leader_kill(kafka_cluster: RunningCluster) -> None:
    endpoint = kafka_cluster.endpoint
    assert isinstance(endpoint, KafkaCluster)
    async with kafkawire.connect(kafka_cluster.url) as client, client.admin() as admin:
        topic, group = await new_topic_and_group(admin, "share-cluster")
        led = await leaders(admin, topic)
        assert len(set(led.values())) >= 2, f"leaders not spread: {led}"
        first = [f"a{i}" for i in range(300)]
        await produce(client, topic, first)
        seen: set[str] = set()
        async with client.share_consumer(topic, group=group) as consumer:
            await receive_all(consumer, set(first), seen, 60)
            # Records of every partition came, so each leader was fetched from.
            victim = endpoint.node_of(led[0])
            await asyncio.to_thread(kafka_cluster.kill, victim)
            try:
                second = [f"b{i}" for i in range(300)]
                await produce(client, topic, second)
                await receive_all(consumer, set(first) | set(second), seen, 120)
            finally:
                await asyncio.to_thread(kafka_cluster.start, victim)


async def test_a_share_consumer_joins_while_its_groups_coordinator_is_down(kafka_cluster: RunningCluster) -> None:
    """The client still names the killed node as the group's coordinator: the first heartbeat fails to connect,
    and the member finds the new coordinator (as the election and the load of the group's state allow)."""
    endpoint = kafka_cluster.endpoint
    assert isinstance(endpoint, KafkaCluster)
    async with kafkawire.connect(kafka_cluster.url) as client, client.admin() as admin:
        topic, group = await new_topic_and_group(admin, "share-coord")
        values = [f"c{i}" for i in range(100)]
        await produce(client, topic, values)
        (described,) = await admin.describe_share_groups([group])
        victim = endpoint.node_of(described.coordinator)
        await asyncio.to_thread(kafka_cluster.kill, victim)
        try:
            seen: set[str] = set()
            async with client.share_consumer(topic, group=group) as consumer:
                await receive_all(consumer, set(values), seen, 120)
            (after,) = await admin.describe_share_groups([group])
            assert after.coordinator != described.coordinator
        finally:
            await asyncio.to_thread(kafka_cluster.start, victim)
