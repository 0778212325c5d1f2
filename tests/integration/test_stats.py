"""Statistics against the real brokers: the counts agree exactly with what a run sent and received, the lag
is what was left unread and falls to 0 once the consumer has caught up, for the three systems."""

from __future__ import annotations

import asyncio
import secrets

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.stats import ClientStats, ConsumerStats, ProducerStats
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.tubemq_spares import FreshTopics

pytestmark = pytest.mark.integration

SENT = 300
PAYLOAD = b"x" * 50


@pytest.fixture(scope="module")
def tubemq_topics(tubemq_fresh_topics: FreshTopics) -> dict[str, str]:
    """A fresh TubeMQ topic for each event loop the test runs on."""
    return tubemq_fresh_topics.take(dict.fromkeys(("asyncio", "uvloop"), 2))


def running_loop_kind() -> str:
    """``uvloop`` when the running event loop is uvloop's, else ``asyncio``."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


def check_producer(stats: ProducerStats, system: str, records: int) -> None:
    assert stats.system == system
    assert stats.records_sent == records
    assert stats.records_failed == 0
    assert 1 <= stats.batches_sent <= records
    assert stats.requests_sent >= 1
    assert stats.bytes_sent >= records * len(PAYLOAD) // 10  # compressed at most tenfold
    assert stats.buffered_records == 0 and stats.requests_in_flight == 0
    assert stats.send_latency.count == records
    assert sum(stats.send_latency.counts) == records
    assert stats.send_latency.quantile(0.5) is not None


async def wait_lag(read: object, expected: int) -> ConsumerStats:
    """Poll ``stats()`` until the total lag is ``expected`` (the broker's figure may trail a moment)."""
    stats = read.stats()  # type: ignore[attr-defined]
    async with asyncio.timeout(30):
        while stats.total_lag != expected:
            await asyncio.sleep(0.2)
            stats = read.stats()  # type: ignore[attr-defined]
    assert isinstance(stats, ConsumerStats)
    return stats


async def test_kafka_stats(kafka_broker: KafkaBroker) -> None:
    topic = f"stats_{secrets.token_hex(4)}"
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
        async with client.producer(topic, linger_ms=5) as producer:
            for _ in range(SENT):
                await producer.enqueue(PAYLOAD)
            await producer.flush(timeout=30)
            check_producer(producer.stats(), "kafka", SENT)
            whole = client.stats()
            assert isinstance(whole, ClientStats) and whole.records_sent == SENT
            assert whole.connects >= 1 and whole.connections >= 1
        async with client.consumer(topic, group=f"g{secrets.token_hex(4)}", start="earliest") as consumer:
            first = await consumer.getmany(timeout=30, max_records=100)
            taken = len(first)
            # The rest of what was fetched stays buffered: the lag counts it as unread.
            stats = consumer.stats()
            assert stats.records_received == taken
            assert {(p.topic, p.partition) for p in stats.lag} == {(topic, 0), (topic, 1)}
            assert stats.total_lag == SENT - taken
            while taken < SENT:
                taken += len(await consumer.getmany(timeout=10))
            assert taken == SENT
            stats = await wait_lag(consumer, 0)
            assert stats.records_received == SENT
            assert stats.buffered_records == 0
            assert all(p.end is not None and p.position == p.end for p in stats.lag)
            assert sum(p.end or 0 for p in stats.lag) == SENT
            assert stats.rebalances >= 1
            assert stats.bytes_received > 0 and stats.batches_received >= 2 and stats.requests_sent >= 2
            assert client.stats().records_received == SENT


async def test_pulsar_stats(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, f"stats-{secrets.token_hex(4)}", 2)
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, subscription=f"s{secrets.token_hex(4)}") as consumer,
    ):
        async with client.producer(topic, batching_max_publish_delay_ms=5) as producer:
            for _ in range(SENT):
                await producer.enqueue(PAYLOAD)
            await producer.flush(timeout=30)
            sent = producer.stats()
            check_producer(sent, "pulsar", SENT)
            assert client.stats().records_sent == SENT
        # The broker counts the entries not yet acknowledged by the subscription: a batch is one entry.
        stats = await consumer.refresh_lag()
        assert {(p.topic, p.partition) for p in stats.lag} == {(topic, 0), (topic, 1)}
        assert stats.total_lag == sent.batches_sent
        taken = 0
        while taken < SENT:
            for message in await consumer.getmany(timeout=10):
                await consumer.ack(message)
                taken += 1
        assert taken == SENT
        async with asyncio.timeout(30):
            while (stats := await consumer.refresh_lag()).total_lag != 0:
                await asyncio.sleep(0.2)
        assert stats.records_received == SENT
        assert stats.buffered_records == 0
        assert stats.bytes_received > 0 and stats.batches_received == sent.batches_sent
        assert stats.requests_sent >= 2  # a FLOW per partition at least
        whole = client.stats()
        assert whole.records_received == SENT and whole.connects >= 1 and whole.connections >= 1
        async with client.reader(topic, start="earliest") as reader:
            read = 0
            while read < SENT:
                read += len(await reader.getmany(timeout=10))
            assert reader.stats().records_received == SENT


async def test_tubemq_stats(tubemq_broker: TubeMQBroker, tubemq_topics: dict[str, str]) -> None:
    topic = tubemq_topics[running_loop_kind()]
    async with tubemqwire.connect(tubemq_broker.url, heartbeat_interval_ms=1000) as client:
        async with client.producer(topic) as producer:
            for _ in range(SENT):
                await producer.enqueue(PAYLOAD)
            await producer.flush(timeout=30)
            sent = producer.stats()
            check_producer(sent, "tubemq", SENT)
            assert sent.batches_sent == SENT and sent.bytes_sent == SENT * len(PAYLOAD)
            assert client.stats().records_sent == SENT
        async with client.consumer(topic, group=f"g{secrets.token_hex(4)}", start="earliest") as consumer:
            taken = 0
            async with asyncio.timeout(60):
                while taken < SENT:
                    for message in await consumer.getmany(timeout=10):
                        await consumer.ack(message)
                        taken += 1
            assert taken == SENT
            # The broker's offsets after the last confirm: every partition read to its end. They are positions in
            # the index the topic's partitions share, 28 bytes a message.
            stats = await wait_lag(consumer, 0)
            assert len(stats.lag) == 2 and all(p.end == SENT * 28 for p in stats.lag)
            assert stats.records_received == SENT and stats.bytes_received == SENT * len(PAYLOAD)
            assert stats.buffered_records == 0 and stats.rebalances >= 1 and stats.requests_sent >= 2
            whole = client.stats()
            assert whole.records_received == SENT and whole.connects >= 2 and whole.connections >= 2
