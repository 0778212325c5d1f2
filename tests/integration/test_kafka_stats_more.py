"""Kafka statistics against a real broker, beyond tests/integration/test_stats.py: a record held back by a
failing deserializer counts as received once, when it is handed out (and a skipped one not at all), and the
share consumer's stats()."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import kafkawire
from kafkawire import DeserializationError
from mqwire.common.stats import ConsumerStats
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration


def unique(label: str) -> str:
    return f"kw-stats-{label}-{uuid.uuid4().hex[:8]}"


def strict_int(data: bytes) -> int:
    return int(data)


async def test_a_record_held_by_a_failing_deserializer_counts_once(kafka_broker: KafkaBroker) -> None:
    topic = unique("deser")
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        async with client.producer(topic, linger_ms=0) as producer:
            for value in (b"1", b"bad", b"3", b"4"):
                await producer.send(value)
        async with client.consumer(topic, start="earliest", value_deserializer=strict_int) as consumer:
            assert (await consumer.receive(timeout=30)).value == 1
            assert consumer.stats().records_received == 1
            for _ in range(2):  # the failing record stays held: asking again raises again and counts nothing
                with pytest.raises(DeserializationError) as failed:
                    await consumer.receive(timeout=5)
                assert consumer.stats().records_received == 1
            held = failed.value.message
            assert held is not None
            consumer.skip(held)  # skipped: never handed out, so not received
            assert (await consumer.receive(timeout=5)).value == 3
            assert [m.value for m in await consumer.getmany(timeout=5)] == [4]
            stats = consumer.stats()
            assert stats.records_received == 3
            assert stats.buffered_records == 0
            assert stats.total_lag == 0


async def test_share_consumer_stats(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("share"), unique("share-group")
    records = 30
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
            # A new share group starts at the latest offset: start it at the beginning. The coordinator learns
            # of a topic just created a moment later.
            for attempt in range(20):
                try:
                    await admin.alter_share_group_offsets(group, {(topic, 0): 0, (topic, 1): 0})
                    break
                except kafkawire.UnknownTopicOrPartitionError:
                    if attempt == 19:
                        raise
                    await asyncio.sleep(0.5)
        async with client.producer(topic, linger_ms=0) as producer:
            for i in range(records):
                await producer.send(f"{i}".encode(), partition=i % 2)
        async with client.share_consumer(topic, group=group) as consumer:
            seen: set[bytes] = set()
            async with asyncio.timeout(60):
                while len(seen) < records:
                    for message in await consumer.getmany(timeout=1):
                        assert message.value is not None
                        seen.add(message.value)
            stats = consumer.stats()
            assert isinstance(stats, ConsumerStats)
            assert stats.system == "kafka" and stats.topics == (topic,)
            assert stats.records_received == records  # each delivered once
            assert stats.bytes_received > records and stats.batches_received >= 2
            assert stats.requests_sent >= stats.batches_received // 2
            assert stats.rebalances >= 1
            assert stats.buffered_records == 0 and stats.lag == ()
            assert any(c.records_received == records for c in client.stats().consumers)
