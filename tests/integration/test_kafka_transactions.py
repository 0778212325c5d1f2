"""Transactions of the kafkawire producer, on Kafka 4.3 and 3.9, read by kafkawire and kafka-python."""

from __future__ import annotations

import asyncio
import collections
import uuid

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["kafka-4.3", "kafka-3.9"])
def broker(request: pytest.FixtureRequest) -> KafkaBroker:
    name = "kafka_broker" if request.param == "kafka-4.3" else "kafka3_broker"
    found: KafkaBroker = request.getfixturevalue(name)
    return found


def unique(label: str) -> str:
    return f"kw-{label}-{uuid.uuid4().hex[:8]}"


async def read_all(client: kafkawire.Client, topic: str, isolation_level: str, expect: int) -> list[bytes]:
    """Everything readable at this isolation level (waiting for ``expect`` records, then a little more)."""
    out: list[bytes] = []
    async with client.consumer(topic, start="earliest", isolation_level=isolation_level) as consumer:
        async with asyncio.timeout(30):
            while len(out) < expect:
                out.extend(m.value or b"" for m in await consumer.getmany(timeout_ms=500))
        out.extend(m.value or b"" for m in await consumer.getmany(timeout_ms=1000))
    return out


def peer_read_committed(bootstrap: str, topic: str, expect: int) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5_000,
    )
    try:
        return [record.value for record in consumer]
    finally:
        consumer.close()


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_committed_records_are_seen_aborted_ones_never(broker: KafkaBroker) -> None:
    topic = unique("txn")
    async with kafkawire.connect(broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
        async with client.producer(topic, transactional_id=unique("tid")) as producer:
            async with producer.transaction():
                for i in range(10):
                    await producer.enqueue(b"committed-%d" % i, key=b"%d" % i)
            with pytest.raises(RuntimeError):
                async with producer.transaction():
                    for i in range(10):
                        await producer.enqueue(b"aborted-%d" % i, key=b"%d" % i)
                    await producer.flush()  # on the broker already: the abort must hide them
                    raise RuntimeError("the application failed")
            await producer.begin_transaction()
            await producer.send(b"committed-last")
            await producer.commit_transaction()
            # Outside a transaction a transactional producer sends nothing.
            with pytest.raises(kafkawire.InvalidTxnStateError):
                await producer.enqueue(b"stray")
        committed = sorted([b"committed-%d" % i for i in range(10)] + [b"committed-last"])
        assert sorted(await read_all(client, topic, "read_committed", 11)) == committed
        uncommitted = await read_all(client, topic, "read_uncommitted", 21)
        assert sorted(uncommitted) == sorted(committed + [b"aborted-%d" % i for i in range(10)])
    assert sorted(await asyncio.to_thread(peer_read_committed, broker.bootstrap_servers, topic, 11)) == committed


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_consume_transform_produce_is_exactly_once(broker: KafkaBroker) -> None:
    source, sink, group = unique("in"), unique("out"), unique("ctp")
    count = 300
    async with kafkawire.connect(broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(source, partitions=2)
            await admin.create_topic(sink, partitions=2)
        async with client.producer(source) as producer:
            for i in range(count):
                await producer.enqueue(b"%d" % i, key=b"%d" % i)
            await producer.flush()
        partitions = [TopicPartition(source, p) for p in range(2)]
        transactional_id = unique("ctp-tid")
        rounds = 0
        done = False
        while not done:
            # Each pass starts where the group committed, as a restarted application would.
            async with (
                client.consumer(
                    source,
                    group=group,
                    partitions=partitions,
                    start="earliest",
                    enable_auto_commit=False,
                    isolation_level="read_committed",
                ) as consumer,
                client.producer(sink, transactional_id=transactional_id) as producer,
            ):
                messages = await consumer.getmany(timeout_ms=3000, max_records=40)
                if not messages:
                    done = True
                    continue
                rounds += 1
                await producer.begin_transaction()
                for message in messages:
                    await producer.enqueue(b"x" + (message.value or b""), key=message.key)
                offsets = {}
                for message in messages:
                    offsets[TopicPartition(message.topic, message.partition)] = message.offset + 1
                await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
                if rounds == 3:
                    await producer.abort_transaction()  # this batch is processed again next pass
                else:
                    await producer.commit_transaction()
        assert rounds > 3
        out = await read_all(client, sink, "read_committed", count)
    counts = collections.Counter(out)
    assert set(counts) == {b"x%d" % i for i in range(count)}
    assert max(counts.values()) == 1


async def test_a_second_producer_with_the_same_id_fences_the_first(broker: KafkaBroker) -> None:
    topic = unique("fence")
    transactional_id = unique("tid")
    async with kafkawire.connect(broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        first = client.producer(topic, transactional_id=transactional_id)
        await first.start()
        await first.begin_transaction()
        await first.send(b"from the first")
        async with client.producer(topic, transactional_id=transactional_id) as second:
            await second.begin_transaction()
            await second.send(b"from the second")
            await second.commit_transaction()
            with pytest.raises((kafkawire.ProducerFencedError, kafkawire.InvalidProducerEpochError)):
                await first.commit_transaction()
        await first.close()
        # The first one's open transaction was aborted when the second took the id over.
        assert await read_all(client, topic, "read_committed", 1) == [b"from the second"]


async def test_transaction_options_are_checked_at_construction() -> None:
    client = kafkawire.connect("kafka://127.0.0.1:1")
    with pytest.raises(ValueError, match="enable_idempotence"):
        client.producer("t", transactional_id="x", enable_idempotence=False)
    with pytest.raises(TypeError, match="transactional_id"):
        client.producer("t", transactional_id="")
    with pytest.raises(kafkawire.ConfigurationError):
        await client.producer("t").begin_transaction()
