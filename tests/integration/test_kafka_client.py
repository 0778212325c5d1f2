"""kafkawire against a real Kafka broker, and side by side with kafka-python and confluent-kafka."""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

import kafkawire
from kafkawire import Message, TopicPartition
from mqwire.common.errors import ConnectionLostError
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

COMPRESSIONS = [None, "gzip", "snappy", "lz4", "zstd"]
# kafka-python reads and writes snappy only with python-snappy installed; the others it handles itself.
KAFKA_PYTHON_COMPRESSIONS = [None, "gzip", "lz4", "zstd"]

Record = tuple[bytes | None, bytes | None, dict[str, bytes]]


def topic_name(label: str) -> str:
    return f"kw-{label}-{uuid.uuid4().hex[:10]}"


# Every test runs against both broker lines: the newest 4.x and 3.9.
@pytest.fixture(scope="module", params=["kafka-4.3", "kafka-3.9"])
def kafka_broker(request: pytest.FixtureRequest, kafka_broker: KafkaBroker) -> KafkaBroker:
    if request.param == "kafka-4.3":
        return kafka_broker
    broker: KafkaBroker = request.getfixturevalue("kafka3_broker")
    return broker


# The client must live in the test's own event loop (fixtures default to the session loop here).
@pytest_asyncio.fixture(loop_scope="function")
async def client(kafka_broker: KafkaBroker) -> AsyncIterator[kafkawire.Client]:
    async with kafkawire.connect(kafka_broker.url) as connected:
        yield connected


async def new_topic(client: kafkawire.Client, label: str, partitions: int = 1) -> str:
    name = topic_name(label)
    async with client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)
    return name


def sample_records(count: int) -> list[Record]:
    records: list[Record] = []
    for i in range(count):
        key = None if i % 7 == 0 else b"key-%d" % (i % 13)
        value = b"" if i % 11 == 0 else (b"value-%d-" % i) * (1 + i % 5)
        headers = {} if i % 3 == 0 else {"index": str(i).encode(), "kind": b"\x00\xff"}
        records.append((key, value, headers))
    records.append((b"null-value", None, {"n": b""}))
    return records


async def consume(client: kafkawire.Client, topic: str, count: int, **options: Any) -> list[Message]:
    """Exactly ``count`` messages (failing on a timeout), then checks that no more arrive."""
    out: list[Message] = []
    options.setdefault("start", "earliest")
    async with client.consumer(topic, **options) as consumer:
        async with asyncio.timeout(60):
            while len(out) < count:
                out.extend(await consumer.getmany(timeout_ms=1000))
        out.extend(await consumer.getmany(timeout_ms=300))
    assert len(out) == count
    return out


def as_records(messages: list[Message]) -> list[Record]:
    return [(m.key, m.value, m.headers) for m in messages]


def in_partition_order(messages: list[Message]) -> bool:
    last: dict[int, int] = {}
    for m in messages:
        if m.offset <= last.get(m.partition, -1):
            return False
        last[m.partition] = m.offset
    return True


# ------------------------------------------------------------------------------------------ admin
async def test_admin_creates_lists_and_deletes_topics(client: kafkawire.Client) -> None:
    name = topic_name("admin")
    async with client.admin() as admin:
        await admin.create_topics([kafkawire.NewTopic(name, 3, 1, {"retention.ms": "3600000"})])
        assert name in await admin.list_topics()
        (description,) = await admin.describe_topics([name])
        assert [p.partition for p in description.partitions] == [0, 1, 2]
        assert all(p.leader >= 0 for p in description.partitions)
        with pytest.raises(kafkawire.TopicAlreadyExistsError):
            await admin.create_topic(name)
        configs = await admin.describe_configs({("topic", name): ["retention.ms"]})
        assert configs[("topic", name)]["retention.ms"].value == "3600000"
        cluster = await admin.describe_cluster()
        assert cluster.cluster_id
        assert [b.node_id for b in cluster.brokers] == [cluster.controller_id]
        await admin.create_partitions({name: 5})
        assert client.metadata.partitions(name) == [0, 1, 2, 3, 4]
        await admin.delete_topics([name])
        assert name not in await admin.list_topics()
        with pytest.raises(kafkawire.UnknownTopicOrPartitionError):
            await admin.delete_topics([name])


async def test_admin_offsets_and_delete_records(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "offsets")
    async with client.producer(topic) as producer:
        for i in range(10):
            await producer.enqueue(b"%d" % i, timestamp_ms=1_700_000_000_000 + i * 1000)
        await producer.flush()
    tp = TopicPartition(topic, 0)
    async with client.admin() as admin:
        offsets = await admin.list_offsets({tp: "earliest"})
        assert offsets[tp].offset == 0
        offsets = await admin.list_offsets({tp: "latest"})
        assert offsets[tp].offset == 10
        offsets = await admin.list_offsets({tp: 1_700_000_000_000 + 4500})
        assert offsets[tp].offset == 5
        low = await admin.delete_records({tp: 4})
        assert low[tp] == 4
        offsets = await admin.list_offsets({tp: "earliest"})
        assert offsets[tp].offset == 4
    messages = await consume(client, topic, 6)
    assert [m.value for m in messages] == [b"%d" % i for i in range(4, 10)]


# ------------------------------------------------------------------------------------ produce/consume
# On the newest broker line, tests/integration/test_round_trips.py checks the same in every codec.
@pytest.mark.parametrize("kafka_broker", ["kafka-3.9"], indirect=True)
@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_records_come_back_exactly(client: kafkawire.Client, compression: str | None) -> None:
    topic = await new_topic(client, f"roundtrip-{compression}", partitions=3)
    records = sample_records(600)
    async with client.producer(topic, compression=compression, linger_ms=20) as producer:
        futures = [await producer.enqueue(value, key=key, headers=headers) for key, value, headers in records]
        receipts = await asyncio.gather(*futures)
    assert len({(r.partition, r.offset) for r in receipts}) == len(records)
    messages = await consume(client, topic, len(records))
    assert collections.Counter(map(repr, as_records(messages))) == collections.Counter(map(repr, records))
    assert in_partition_order(messages)
    by_position = {(m.partition, m.offset): m for m in messages}
    for (key, value, headers), receipt in zip(records, receipts, strict=True):
        message = by_position[(receipt.partition, receipt.offset)]
        assert (message.key, message.value, message.headers) == (key, value, headers)
        assert message.timestamp == receipt.timestamp


async def test_send_returns_the_receipt(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "send")
    async with client.producer(topic) as producer:
        first = await producer.send(b"one", key=b"k", headers={"h": b"v"})
        second = await producer.send(b"two")
    assert (first.topic, first.partition, first.offset) == (topic, 0, 0)
    assert second.offset == 1
    (message, _) = await consume(client, topic, 2)
    assert (message.key, message.value, message.headers) == (b"k", b"one", {"h": b"v"})
    assert message.timestamp_type is kafkawire.TimestampType.CREATE_TIME


async def test_many_enqueues_travel_in_few_requests(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "batching")
    async with client.producer(topic, linger_ms=100, batch_size=1_000_000) as producer:
        futures = [await producer.enqueue(b"record %d" % i) for i in range(5000)]
        await producer.flush()
        receipts = [f.result() for f in futures]
        requests = producer.requests_sent
    assert requests <= 3
    assert [r.offset for r in receipts] == list(range(5000))


async def test_default_topic_can_be_overridden_per_send(client: kafkawire.Client) -> None:
    first = await new_topic(client, "default")
    second = await new_topic(client, "override")
    async with client.producer(first) as producer:
        a = await producer.send(b"a")
        b = await producer.send(b"b", topic=second)
    assert (a.topic, b.topic) == (first, second)


async def test_acks_one_and_zero(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "acks")
    async with client.producer(topic, acks=1) as producer:
        receipt = await producer.send(b"acked-by-leader")
        assert receipt.offset == 0
    async with client.producer(topic, acks=0) as producer:
        receipt = await producer.send(b"fire-and-forget")
        assert receipt.offset == -1
    messages = await consume(client, topic, 2)
    assert [m.value for m in messages] == [b"acked-by-leader", b"fire-and-forget"]


async def test_explicit_partition_and_unkeyed_records_spread_per_batch(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "spread", partitions=4)
    async with client.producer(topic, batch_size=2000, linger_ms=1) as producer:
        pinned = await producer.send(b"pinned", partition=2)
        assert pinned.partition == 2
        with pytest.raises(ValueError, match="partition"):
            await producer.enqueue(b"v", partition=9)
        futures = [await producer.enqueue(b"x" * 100) for _ in range(400)]
        receipts = await asyncio.gather(*futures)
    per_partition = collections.Counter(r.partition for r in receipts)
    # Sticky batches of ~18 records each, moving on after every batch: all partitions get some.
    assert set(per_partition) == {0, 1, 2, 3}


async def test_idempotent_producer_survives_dropped_connections_without_duplicates(
    client: kafkawire.Client,
) -> None:
    topic = await new_topic(client, "idempotent", partitions=2)
    count = 3000
    async with client.producer(topic, linger_ms=2, batch_size=4096) as producer:
        assert producer.idempotent
        # The first record waits for the producer id, so that the cuts below hit produce requests.
        first = await producer.send(b"%06d" % 0, key=b"0")
        futures = []
        for i in range(1, count):
            futures.append(await producer.enqueue(b"%06d" % i, key=b"%d" % (i % 10)))
            if i % 700 == 350:
                await cut_under_a_request(client)
        receipts = [first, *await asyncio.gather(*futures)]
        assert producer.stats().retries > 0
        assert producer._sender.idempotence is not None
        assert producer._sender.idempotence.producer_id >= 0
    assert len({(r.partition, r.offset) for r in receipts}) == count
    messages = await consume(client, topic, count)
    values = sorted(m.value or b"" for m in messages)
    assert values == [b"%06d" % i for i in range(count)]
    # Per key, records keep their order.
    for key in {m.key for m in messages}:
        ordered = [m.value for m in sorted(messages, key=lambda m: m.offset) if m.key == key]
        assert ordered == sorted(ordered, key=lambda v: v or b"")


async def cut_under_a_request(client: kafkawire.Client) -> None:
    """Drop the connection while a request waits for its answer: it is retried with the same sequence."""
    async with asyncio.timeout(5):
        while not any(c.in_flight for c in client._session._opened.values()):
            await asyncio.sleep(0)
    cut_in_flight(client)


def cut_in_flight(client: kafkawire.Client) -> int:
    cut = 0
    for connection in list(client._session._opened.values()):
        if connection.in_flight:
            connection.channel.abort(ConnectionLostError("cut by the test"))
            cut += 1
    return cut


async def test_enqueue_waits_for_buffer_space(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "buffer")
    async with client.producer(topic, buffer_memory=64 * 1024, batch_size=16 * 1024, linger_ms=0) as producer:
        futures = [await producer.enqueue(b"z" * 1000) for _ in range(500)]
        receipts = await asyncio.gather(*futures)
    assert [r.offset for r in receipts] == list(range(500))


async def test_closing_the_client_flushes_its_producers(kafka_broker: KafkaBroker) -> None:
    async with kafkawire.connect(kafka_broker.url) as client:
        topic = await new_topic(client, "close")
        producer = client.producer(topic, linger_ms=1000)
        future = await producer.enqueue(b"flushed on close")
    assert (await future).offset == 0
    assert producer.closed


# ------------------------------------------------------------------------------------ partitioner
async def test_keyed_records_land_where_kafka_python_puts_them(
    client: kafkawire.Client, kafka_broker: KafkaBroker
) -> None:
    kafka = pytest.importorskip("kafka")
    partitions = 7
    topic = await new_topic(client, "keys", partitions=partitions)
    keys = [b"key-%d" % i for i in range(200)] + [b"", b"\x00", "ключ".encode()]

    def produce_with_kafka_python() -> list[int]:
        producer = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
        futures = [producer.send(topic, b"v", key=key) for key in keys]
        producer.flush(30)
        placed = [future.get(30).partition for future in futures]
        producer.close(10)
        return placed

    theirs = await asyncio.to_thread(produce_with_kafka_python)
    async with client.producer(topic) as producer:
        receipts = await asyncio.gather(*[await producer.enqueue(b"v", key=k) for k in keys])
    assert [r.partition for r in receipts] == theirs
    assert len(set(theirs)) == partitions


async def test_keyed_records_match_librdkafka_murmur2(client: kafkawire.Client, kafka_broker: KafkaBroker) -> None:
    confluent = pytest.importorskip("confluent_kafka")
    partitions = 5
    topic = await new_topic(client, "rdkafka-keys", partitions=partitions)
    keys = [b"user-%d" % i for i in range(100)]

    def produce_with_librdkafka() -> dict[bytes, int]:
        placed: dict[bytes, int] = {}
        producer = confluent.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                       "partitioner": "murmur2_random"})

        def report(err: Any, msg: Any) -> None:
            assert err is None, err
            placed[msg.key()] = msg.partition()

        for key in keys:
            producer.produce(topic, b"v", key=key, on_delivery=report)
        producer.flush(30)
        return placed

    theirs = await asyncio.to_thread(produce_with_librdkafka)
    async with client.producer(topic) as producer:
        ours = await asyncio.gather(*[await producer.enqueue(b"v", key=k) for k in keys])
    assert {k: r.partition for k, r in zip(keys, ours, strict=True)} == theirs


# ------------------------------------------------------------------------------------ consumer
async def test_group_commit_then_a_new_consumer_resumes_after_it(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "commit", partitions=2)
    group = f"group-{uuid.uuid4().hex[:8]}"
    async with client.producer(topic) as producer:
        for i in range(40):
            await producer.enqueue(b"%d" % i, key=b"%d" % (i % 4))
        await producer.flush()
    seen: list[Message] = []
    async with client.consumer(topic, group=group, start="earliest", enable_auto_commit=False) as consumer:
        async with asyncio.timeout(30):
            async for message in consumer:
                seen.append(message)
                await consumer.ack(message)
                if len(seen) == 15:
                    break
        await consumer.commit()
        acked = {TopicPartition(topic, p): max(m.offset for m in seen if m.partition == p) + 1
                 for p in {m.partition for m in seen}}
        for tp, offset in acked.items():
            assert await consumer.committed(tp) == offset
    async with client.admin() as admin:
        stored = await admin.list_consumer_group_offsets(group, acked)
        assert stored == acked
    rest = await consume(client, topic, 25, group=group)
    assert {m.value for m in rest} | {m.value for m in seen} == {b"%d" % i for i in range(40)}
    assert not {m.value for m in rest} & {m.value for m in seen}


async def test_auto_commit_on_close_stores_acknowledged_offsets(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "autocommit")
    group = f"group-{uuid.uuid4().hex[:8]}"
    async with client.producer(topic) as producer:
        for i in range(10):
            await producer.enqueue(b"%d" % i)
        await producer.flush()
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        for _ in range(4):
            await consumer.ack(await consumer.getone())
    rest = await consume(client, topic, 6, group=group)
    assert rest[0].offset == 4


async def test_start_latest_sees_only_new_records(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "latest")
    async with client.producer(topic) as producer:
        await producer.send(b"old")
        async with client.consumer(topic, start="latest") as consumer:
            async with asyncio.timeout(10):
                while consumer.position((topic, 0)) is None:
                    await asyncio.sleep(0.01)
            await producer.send(b"new")
            message = await asyncio.wait_for(consumer.getone(), 10)
    assert message.value == b"new"


async def test_seek_and_out_of_range_reset(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "seek")
    async with client.producer(topic) as producer:
        for i in range(10):
            await producer.enqueue(b"%d" % i)
        await producer.flush()
    tp = TopicPartition(topic, 0)
    async with client.consumer(topic, partitions=[0], start="earliest") as consumer:
        first = await asyncio.wait_for(consumer.getone(), 10)
        assert first.offset == 0
        consumer.seek(tp, 7)
        assert (await asyncio.wait_for(consumer.getone(), 10)).offset == 7
        # Past the end: the broker says OFFSET_OUT_OF_RANGE and the consumer starts over at "earliest".
        consumer.seek(tp, 1000)
        assert (await asyncio.wait_for(consumer.getone(), 10)).offset == 0
        await consumer.seek_to_end(tp)
        assert await consumer.getmany(timeout_ms=300) == []
        assert consumer.highwater(tp) == 10


async def test_small_buffer_applies_backpressure_without_losing_records(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "backpressure", partitions=3)
    async with client.producer(topic) as producer:
        for i in range(3000):
            await producer.enqueue(b"%d" % i)
        await producer.flush()
    messages = await consume(client, topic, 3000, max_buffered_records=50, max_partition_fetch_bytes=4096)
    assert sorted(int(m.value or b"-1") for m in messages) == list(range(3000))
    assert in_partition_order(messages)


async def test_consumer_carries_on_after_dropped_connections(client: kafkawire.Client) -> None:
    topic = await new_topic(client, "fetch-cuts", partitions=2)
    async with client.producer(topic) as producer:
        for i in range(2000):
            await producer.enqueue(b"%d" % i)
        await producer.flush()
    seen: list[Message] = []
    cuts = 0
    async with client.consumer(
        topic, start="earliest", max_partition_fetch_bytes=2048, max_buffered_records=100
    ) as consumer:
        async with asyncio.timeout(60):
            while len(seen) < 2000:
                seen.extend(await consumer.getmany(timeout_ms=1000, max_records=50))
                if len(seen) % 400 < 50:
                    await asyncio.sleep(0.005)  # a fetch for the room just made goes out
                    cuts += cut_in_flight(client)
        assert cuts > 0
        assert await consumer.getmany(timeout_ms=300) == []
    assert sorted(int(m.value or b"-1") for m in seen) == list(range(2000))
    assert in_partition_order(seen)


async def test_read_committed_skips_aborted_transactions(client: kafkawire.Client, kafka_broker: KafkaBroker) -> None:
    confluent = pytest.importorskip("confluent_kafka")
    topic = await new_topic(client, "transactions")

    def transactional_writes() -> None:
        producer = confluent.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                       "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, b"aborted-%d" % i)
        producer.flush(30)
        producer.abort_transaction(30)
        producer.begin_transaction()
        for i in range(2):
            producer.produce(topic, b"committed-%d" % i)
        producer.commit_transaction(30)

    await asyncio.to_thread(transactional_writes)
    committed = await consume(client, topic, 2, isolation_level="read_committed")
    assert [m.value for m in committed] == [b"committed-0", b"committed-1"]
    everything = await consume(client, topic, 5)
    assert [m.value for m in everything] == [b"aborted-0", b"aborted-1", b"aborted-2", b"committed-0",
                                             b"committed-1"]


# ------------------------------------------------------------------------------------ interop
@pytest.mark.parametrize("compression", KAFKA_PYTHON_COMPRESSIONS)
async def test_kafka_python_produces_and_we_consume(
    client: kafkawire.Client, kafka_broker: KafkaBroker, compression: str | None
) -> None:
    kafka = pytest.importorskip("kafka")
    topic = await new_topic(client, f"kp-to-us-{compression}", partitions=2)
    records = sample_records(300)

    def produce() -> None:
        producer = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers,
                                       compression_type=compression, linger_ms=10)
        for key, value, headers in records:
            producer.send(topic, value=value, key=key, headers=list(headers.items()))
        producer.flush(30)
        producer.close(10)

    await asyncio.to_thread(produce)
    messages = await consume(client, topic, len(records))
    assert collections.Counter(map(repr, as_records(messages))) == collections.Counter(map(repr, records))
    assert in_partition_order(messages)


@pytest.mark.parametrize("compression", KAFKA_PYTHON_COMPRESSIONS)
async def test_we_produce_and_kafka_python_consumes(
    client: kafkawire.Client, kafka_broker: KafkaBroker, compression: str | None
) -> None:
    kafka = pytest.importorskip("kafka")
    topic = await new_topic(client, f"us-to-kp-{compression}", partitions=2)
    records = sample_records(300)
    async with client.producer(topic, compression=compression) as producer:
        receipts = await asyncio.gather(
            *[await producer.enqueue(value, key=key, headers=headers) for key, value, headers in records]
        )

    def consume_with_kafka_python() -> list[tuple[Any, ...]]:
        consumer = kafka.KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap_servers,
                                       auto_offset_reset="earliest", enable_auto_commit=False,
                                       consumer_timeout_ms=5000)
        out = []
        for record in consumer:
            out.append((record.partition, record.offset, record.key, record.value, dict(record.headers)))
            if len(out) == len(records):
                break
        consumer.close()
        return out

    theirs = await asyncio.to_thread(consume_with_kafka_python)
    assert len(theirs) == len(records)
    expected = {(r.partition, r.offset): record for r, record in zip(receipts, records, strict=True)}
    for partition, offset, key, value, headers in theirs:
        assert expected[(partition, offset)] == (key, value, headers)


@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_interop_with_librdkafka_both_ways(
    client: kafkawire.Client, kafka_broker: KafkaBroker, compression: str | None
) -> None:
    confluent = pytest.importorskip("confluent_kafka")
    records = sample_records(200)
    codec = compression or "none"
    theirs_topic = await new_topic(client, f"rd-to-us-{codec}", partitions=2)
    ours_topic = await new_topic(client, f"us-to-rd-{codec}", partitions=2)

    def produce() -> None:
        producer = confluent.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                       "compression.type": codec, "linger.ms": 10})
        for key, value, headers in records:
            producer.produce(theirs_topic, value=value, key=key, headers=list(headers.items()) or None)
        assert producer.flush(30) == 0

    await asyncio.to_thread(produce)
    messages = await consume(client, theirs_topic, len(records))
    assert collections.Counter(map(repr, as_records(messages))) == collections.Counter(map(repr, records))

    async with client.producer(ours_topic, compression=compression) as producer:
        for key, value, headers in records:
            await producer.enqueue(value, key=key, headers=headers)

    def consume_with_librdkafka() -> list[Record]:
        consumer = confluent.Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                       "group.id": f"rd-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                                       "enable.auto.commit": False})
        consumer.subscribe([ours_topic])
        out: list[Record] = []
        for _ in range(200):
            if len(out) == len(records):
                break
            for message in consumer.consume(num_messages=500, timeout=1.0):
                assert message.error() is None, message.error()
                out.append((message.key(), message.value(), dict(message.headers() or [])))
        consumer.close()
        return out

    theirs = await asyncio.to_thread(consume_with_librdkafka)
    assert collections.Counter(map(repr, theirs)) == collections.Counter(map(repr, records))


async def test_offsets_we_commit_are_what_kafka_python_sees(
    client: kafkawire.Client, kafka_broker: KafkaBroker
) -> None:
    kafka = pytest.importorskip("kafka")
    topic = await new_topic(client, "commit-interop")
    group = f"group-{uuid.uuid4().hex[:8]}"
    async with client.producer(topic) as producer:
        for i in range(5):
            await producer.enqueue(b"%d" % i)
        await producer.flush()
    async with client.consumer(topic, group=group, start="earliest", enable_auto_commit=False) as consumer:
        for _ in range(3):
            await consumer.ack(await asyncio.wait_for(consumer.getone(), 10))
        await consumer.commit()

    def committed_by_kafka_python() -> int | None:
        consumer = kafka.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id=group,
                                       enable_auto_commit=False)
        try:
            offset: int | None = consumer.committed(kafka.TopicPartition(topic, 0))
            return offset
        finally:
            consumer.close()

    assert await asyncio.to_thread(committed_by_kafka_python) == 3
