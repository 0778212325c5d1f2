"""aiokafka's ConsumerRebalanceListener against the real broker: two members of a classic group hear their
rebalances in aiokafka's order and split the partitions, the one left takes them all back when the other
closes; and a consumer made with a compiled pattern reads the matching topic only."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest

import kafkawire
from kafkawire import ConsumerRebalanceListener, TopicPartition
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

GROUP_OPTIONS: dict[str, Any] = {
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 200,
    "max_poll_interval_ms": 60_000,
    "start": "earliest",
}
LIVENESS = 30.0  # a liveness bound only: each rebalance here takes a few heartbeats


def unique(label: str) -> str:
    return f"kw-{label}-{uuid.uuid4().hex[:8]}"


class Recorder(ConsumerRebalanceListener):
    """Records every call, and wakes whoever waits for a given assignment."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.changed = asyncio.Event()

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))
        self.changed.set()

    async def assigned(self, count: int) -> set[TopicPartition]:
        """Until the last assignment holds ``count`` partitions; that assignment."""
        async with asyncio.timeout(LIVENESS):
            while True:
                if self.calls and self.calls[-1][0] == "assigned" and len(self.calls[-1][1]) == count:
                    return self.calls[-1][1]
                self.changed.clear()
                await self.changed.wait()


async def test_two_members_hear_their_rebalances_in_aiokafkas_order(kafka_broker: KafkaBroker) -> None:
    """The classic protocol, whose rebalances take a few 200 ms heartbeats; the same order under KIP-848, whose
    broker-set 5 s heartbeats would make this test ten times longer, is shown without a broker in
    tests/unit/test_kafka_rebalance_listener.py."""
    topic, group = unique("listener"), unique("group")
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=4)
        every = {TopicPartition(topic, p) for p in range(4)}
        heard_first, heard_second = Recorder(), Recorder()
        async with client.consumer(topic, group=group, listener=heard_first, **GROUP_OPTIONS) as first:
            assert await heard_first.assigned(4) == every
            second = client.consumer(topic, group=group, **GROUP_OPTIONS)
            second.subscribe([topic], listener=heard_second)
            await second.start()
            try:
                mine, theirs = await heard_first.assigned(2), await heard_second.assigned(2)
                assert mine | theirs == every and not mine & theirs
                assert first.assignment() == mine and second.assignment() == theirs
                # Each join: what was held given up first (nothing, the first time), then the whole assignment.
                assert heard_first.calls == [
                    ("revoked", set()),
                    ("assigned", every),
                    ("revoked", every),
                    ("assigned", mine),
                ]
                assert heard_second.calls == [("revoked", set()), ("assigned", theirs)]
            finally:
                await second.close()
            assert await heard_first.assigned(4) == every
            assert heard_first.calls[4:] == [("revoked", mine), ("assigned", every)]
            assert first.assignment() == every
            # As in aiokafka, closing is no rebalance for the member that closes: its listener hears nothing.
            assert heard_second.calls == [("revoked", set()), ("assigned", theirs)]


async def test_a_consumer_made_with_a_compiled_pattern_reads_the_matching_topic(kafka_broker: KafkaBroker) -> None:
    prefix = unique("pattern")
    matching, other = f"{prefix}-orders-eu", f"{prefix}-audit"
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(matching, partitions=1)
            await admin.create_topic(other, partitions=1)
        async with client.producer() as producer:
            for i in range(3):
                await producer.send(b"order-%d" % i, topic=matching)
            await producer.send(b"audit", topic=other)
        pattern = re.compile(re.escape(prefix) + r"-orders-.*")
        async with client.consumer(pattern, group=unique("group"), **GROUP_OPTIONS) as consumer:
            values = [(await consumer.receive(timeout=LIVENESS)).value for _ in range(3)]
            assert values == [b"order-0", b"order-1", b"order-2"]
            assert consumer.subscription() == {matching}
            assert consumer.assignment() == {TopicPartition(matching, 0)}
