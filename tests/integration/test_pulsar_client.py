"""pulsarwire against a real Pulsar broker, and against the reference clients in both directions."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pulsarwire
from mqwire.testing import pulsar_admin, rest
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.message import Message, MessageId
from pulsarwire.routing import java_string_hash, murmur3_32_hash
from pulsarwire.topics import partition_of

pytestmark = pytest.mark.integration

COMPRESSIONS = ["NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def receive_n(
    consumer: pulsarwire.Consumer, count: int, *, ack: bool = True, timeout: float = 20
) -> list[Message]:
    messages = []
    for _ in range(count):
        message = await consumer.receive(timeout=timeout)
        messages.append(message)
        if ack:
            await consumer.ack(message)
    return messages


def expected(index: int) -> tuple[bytes, bytes, dict[str, bytes]]:
    return f"value-{index}".encode(), f"key-{index}".encode(), {"index": str(index).encode(), "kind": b"test"}


async def produce_n(producer: pulsarwire.Producer, count: int) -> list[MessageId]:
    futures = []
    for index in range(count):
        value, key, headers = expected(index)
        futures.append(await producer.enqueue(value, key=key, headers=headers, event_time=1_700_000_000_000 + index))
    await producer.flush()
    return [await future for future in futures]


# ------------------------------------------------------------------------------------ our client alone
@pytest.mark.parametrize("batching", [True, False], ids=["batching", "no-batching"])
async def test_produce_and_consume_exact_contents(pulsar_broker: PulsarBroker, batching: bool) -> None:
    topic = unique("exact")
    count = 300
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, batching_enabled=batching) as producer:
            sent = await produce_n(producer, count)
            single = await producer.send(b"last", key=b"k", ordering_key=b"ok")
        messages = await receive_n(consumer, count + 1)
    assert [(m.value, m.key, m.headers) for m in messages[:count]] == [expected(i) for i in range(count)]
    assert [m.message_id for m in messages[:count]] == sent
    assert [m.event_time for m in messages[:count]] == [1_700_000_000_000 + i for i in range(count)]
    assert all(m.timestamp > 1_700_000_000_000 and m.redelivery_count == 0 for m in messages)
    assert all(m.topic == topic and m.partition == -1 for m in messages)
    last = messages[-1]
    assert (last.value, last.key, last.ordering_key, last.message_id) == (b"last", b"k", b"ok", single)
    if batching:
        assert len({(m.ledger_id, m.entry_id) for m in sent}) < count // 10
    else:
        assert all(m.batch_index == -1 for m in sent)


async def test_batches_closed_by_size_lose_no_message(pulsar_broker: PulsarBroker) -> None:
    """10 KB messages fill the 128 KiB batch limit every dozen sends: the message that does not fit opens the
    next batch, its receipt is its own, and every message is stored once."""
    topic = unique("batch-bytes")
    values = [b"%05d" % i + bytes(10_240) for i in range(200)]
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, batching_max_messages=1000) as producer:
            futures = [await producer.enqueue(value) for value in values]
            await producer.flush()
            sent = [await future for future in futures]
        messages = await receive_n(consumer, len(values))
        with pytest.raises(TimeoutError):
            extra = await consumer.receive(timeout=1)
            pytest.fail(f"an unexpected message: {extra.value[:5]!r}")
    assert [m.value for m in messages] == values
    assert [m.message_id for m in messages] == sent
    assert len({(m.ledger_id, m.entry_id) for m in sent}) >= len(values) // 13  # closed by size, not by count


async def test_partitioned_topic_round_robin_spreads_and_consumer_merges(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("partitioned"), 4)
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, batching_enabled=False) as producer:
            assert producer.partitions == 4
            ids = [await producer.send(f"m{i}".encode()) for i in range(100)]
        assert Counter(i.partition for i in ids) == {0: 25, 1: 25, 2: 25, 3: 25}
        messages = await receive_n(consumer, 100)
    assert sorted(m.value for m in messages) == sorted(f"m{i}".encode() for i in range(100))
    assert all(partition_of(m.topic_name) == m.partition == m.message_id.partition for m in messages)


@pytest.mark.parametrize("scheme", ["java_string_hash", "murmur3_32"])
async def test_keyed_messages_stay_on_their_partition_in_order(pulsar_broker: PulsarBroker, scheme: str) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("keyed"), 5)
    hash_of = java_string_hash if scheme == "java_string_hash" else murmur3_32_hash
    keys = [f"customer-{i % 13}" for i in range(260)]
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, hashing_scheme=scheme) as producer:
            futures = [await producer.enqueue(f"{k}/{n}".encode(), key=k.encode()) for n, k in enumerate(keys)]
            ids = [await f for f in futures]
        messages = await receive_n(consumer, len(keys))
    assert [i.partition for i in ids] == [hash_of(k) % 5 for k in keys]
    for message in messages:
        assert message.partition == hash_of(message.key.decode()) % 5  # type: ignore[union-attr]
    per_key: dict[bytes, list[int]] = {}
    for message in messages:
        per_key.setdefault(message.key or b"", []).append(int(message.value.split(b"/")[1]))
    assert all(numbers == sorted(numbers) for numbers in per_key.values())


async def test_multi_topic_consumer(pulsar_broker: PulsarBroker) -> None:
    first, second = unique("multi-a"), unique("multi-b")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer([first, second], group="g", start="earliest") as consumer,
    ):
        async with client.producer(first) as producer_a, client.producer(second) as producer_b:
            await producer_a.send(b"a")
            await producer_b.send(b"b")
        messages = await receive_n(consumer, 2)
    assert sorted((m.topic, m.value) for m in messages) == sorted([(first, b"a"), (second, b"b")])


async def test_small_queues_refill_permits_and_block_enqueue(pulsar_broker: PulsarBroker) -> None:
    topic = unique("permits")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", receiver_queue_size=7) as consumer,
    ):
        async with client.producer(topic, max_pending_messages=5, batching_max_messages=3) as producer:
            futures = [await producer.enqueue(f"{i}".encode()) for i in range(200)]
            await asyncio.gather(*futures)
        messages = await receive_n(consumer, 200)
    assert [m.value for m in messages] == [f"{i}".encode() for i in range(200)]


async def test_queue_full_raises_without_blocking(pulsar_broker: PulsarBroker) -> None:
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.producer(unique("full"), max_pending_messages=2, block_if_queue_full=False,
                        batching_max_publish_delay_ms=1000) as producer,
    ):
        await producer.enqueue(b"1")
        await producer.enqueue(b"2")
        with pytest.raises(pulsarwire.ProducerQueueIsFullError):
            await producer.enqueue(b"3")


async def test_null_value_and_binary_key(pulsar_broker: PulsarBroker) -> None:
    topic = unique("null")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic) as producer:
            await producer.send(None, key=b"\xff\x00binary")
        [message] = await receive_n(consumer, 1)
    assert message.null_value and message.value is None and message.payload == b""
    assert message.key == b"\xff\x00binary" and message.partition_key_b64_encoded


async def test_negative_ack_redelivers_on_shared_subscription(pulsar_broker: PulsarBroker) -> None:
    topic = unique("nack")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", subscription_type="Shared",
                        negative_ack_redelivery_delay_ms=200) as consumer,
    ):
        async with client.producer(topic, batching_enabled=False) as producer:
            await producer.send(b"retry me")
        first = await consumer.receive(timeout=10)
        await consumer.negative_ack(first)
        again = await consumer.receive(timeout=10)
        await consumer.ack(again)
    assert again.value == b"retry me" and again.message_id == first.message_id
    assert again.redelivery_count >= 1


async def test_negative_ack_on_exclusive_redelivers_in_order(pulsar_broker: PulsarBroker) -> None:
    topic = unique("nack-exclusive")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", negative_ack_redelivery_delay_ms=100) as consumer,
    ):
        async with client.producer(topic) as producer:
            await produce_n(producer, 5)
        first = await receive_n(consumer, 5, ack=False)
        await consumer.negative_ack(first[0])
        for message in first[1:]:
            await consumer.ack(message)
        again = await consumer.receive(timeout=10)
    assert again.value == first[0].value


async def test_partly_acknowledged_batch_comes_back_whole(pulsar_broker: PulsarBroker) -> None:
    topic = unique("partial-ack")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic) as producer:
            ids = await produce_n(producer, 10)
        assert len({(i.ledger_id, i.entry_id) for i in ids}) == 1
        async with client.consumer(topic, group="g", start="earliest") as consumer:
            messages = await receive_n(consumer, 10, ack=False)
            for message in messages[::2]:
                await consumer.ack(message)
        async with client.consumer(topic, group="g") as consumer:
            again = await receive_n(consumer, 10)
        async with client.consumer(topic, group="g") as consumer:
            with pytest.raises(pulsarwire.ReceiveTimeoutError):
                await consumer.receive(timeout=0.5)
    # The batch is one entry: until all of it is acknowledged, the broker delivers all of it again.
    assert [m.value for m in again] == [expected(i)[0] for i in range(10)]


async def test_acked_messages_do_not_come_back(pulsar_broker: PulsarBroker) -> None:
    topic = unique("acked")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic, batching_enabled=False) as producer:
            for index in range(6):
                await producer.send(f"{index}".encode())
        async with client.consumer(topic, group="g", start="earliest", ack_group_time_ms=50) as consumer:
            for message in await receive_n(consumer, 3):
                assert message.value in (b"0", b"1", b"2")
        async with client.consumer(topic, group="g") as consumer:
            rest_ = await receive_n(consumer, 3)
            with pytest.raises(pulsarwire.ReceiveTimeoutError):
                await consumer.receive(timeout=0.5)
    assert [m.value for m in rest_] == [b"3", b"4", b"5"]


async def test_key_shared_and_failover_subscriptions(pulsar_broker: PulsarBroker) -> None:
    for sub_type in ("Key_Shared", "Failover"):
        topic = unique(sub_type.lower())
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.consumer(topic, group="g", start="earliest", subscription_type=sub_type) as consumer,
        ):
            async with client.producer(topic) as producer:
                await produce_n(producer, 20)
            messages = await receive_n(consumer, 20)
        assert sorted(m.value for m in messages) == sorted(expected(i)[0] for i in range(20))


DELIVER_AFTER = 2.5
BROKER_DELAY_TICK = 1.0


async def test_deliver_after_holds_the_message_back(pulsar_broker: PulsarBroker) -> None:
    topic = unique("delayed")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", subscription_type="Shared") as consumer,
    ):
        async with client.producer(topic) as producer:
            sent_at = time.monotonic()
            await producer.send(b"later", deliver_after=DELIVER_AFTER)
            await producer.send(b"now")
        first = await consumer.receive(timeout=10)
        second = await consumer.receive(timeout=10)
        waited = time.monotonic() - sent_at
    assert (first.value, second.value) == (b"now", b"later")
    # The broker's default (isDelayedDeliveryDeliverAtTimeStrict=false) may release a delayed message up to
    # one tick (delayedDeliveryTickTimeMillis, 1 s) before its time, so only that much early is allowed.
    assert waited >= DELIVER_AFTER - BROKER_DELAY_TICK - 0.1


async def test_chunked_message_over_the_broker_limit(pulsar_broker: PulsarBroker) -> None:
    topic = unique("chunked")
    big = uuid.uuid4().bytes * (7 * 1024 * 1024 // 16)  # 7 MiB, above the 5 MiB limit
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, batching_enabled=False) as producer:
            with pytest.raises(pulsarwire.MessageTooBigError):
                await producer.send(big)
        async with client.producer(topic, batching_enabled=False, chunking_enabled=True) as producer:
            message_id = await producer.send(big, key=b"big", headers={"h": b"v"})
            await producer.send(b"small")
        first, second = await receive_n(consumer, 2)
    assert first.value == big and first.key == b"big" and first.headers == {"h": b"v"}
    assert first.message_id == message_id
    assert second.value == b"small"


async def test_reader_from_earliest_from_id_and_inclusive(pulsar_broker: PulsarBroker) -> None:
    topic = unique("reader")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic) as producer:
            ids = await produce_n(producer, 10)
        async with client.reader(topic, start="earliest") as reader:
            assert await reader.has_message_available()
            values = [(await reader.receive(timeout=10)).value for _ in range(10)]
            assert not await reader.has_message_available()
        assert values == [expected(i)[0] for i in range(10)]
        async with client.reader(topic, start=ids[4]) as reader:
            assert (await reader.receive(timeout=10)).value == expected(5)[0]
        async with client.reader(topic, start=ids[4], start_inclusive=True) as reader:
            assert (await reader.receive(timeout=10)).value == expected(4)[0]
        async with client.reader(topic, start="latest") as reader:
            async with client.producer(topic) as producer:
                await producer.send(b"newest")
            assert (await reader.receive(timeout=10)).value == b"newest"


async def test_reader_from_the_id_of_a_message_sent_without_batching(pulsar_broker: PulsarBroker) -> None:
    # Such an id names a whole entry; the broker starts at that entry, so "exclusive" is the client's job.
    topic = unique("reader-unbatched")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic, batching_enabled=False) as producer:
            ids = [await producer.send(b"%d" % i) for i in range(10)]
        assert ids[4].batch_index < 0
        async with client.reader(topic, start=ids[4]) as reader:
            assert (await reader.receive(timeout=10)).value == b"5"
        async with client.reader(topic, start=ids[4], start_inclusive=True) as reader:
            assert (await reader.receive(timeout=10)).value == b"4"
        async with client.reader(topic, start=ids[9]) as reader:
            assert not await reader.has_message_available()


async def test_seek_by_publish_time(pulsar_broker: PulsarBroker) -> None:
    topic = unique("seek")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        async with client.producer(topic, batching_enabled=False) as producer:
            await producer.send(b"old")
            await asyncio.sleep(0.05)
            boundary = int(time.time() * 1000)
            await asyncio.sleep(0.05)
            await producer.send(b"new")
        await receive_n(consumer, 2)
        await consumer.seek(boundary)
        again = await consumer.receive(timeout=15)
    assert again.value == b"new"


# ----------------------------------------------------------------------------------------- reconnection
def unload(admin_url: str, topic: str) -> None:
    reply = rest.request("PUT", f"{admin_url}/admin/v2/{pulsar_admin.topic_path(topic)}/unload")
    assert reply.ok, reply.text()


async def test_producer_and_consumer_survive_a_topic_unload(pulsar_broker: PulsarBroker) -> None:
    topic = unique("unload")
    async with (
        pulsarwire.connect(pulsar_broker.url, initial_backoff_interval=0.05) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        name = producer.producer_name
        first = [await producer.enqueue(f"a{i}".encode()) for i in range(50)]
        await asyncio.gather(*first)
        await asyncio.to_thread(unload, pulsar_broker.admin_url, topic)
        second = [await producer.enqueue(f"b{i}".encode()) for i in range(50)]
        await asyncio.wait_for(asyncio.gather(*second), 30)
        assert producer.producer_name == name
        messages = await receive_n(consumer, 100, timeout=30)
    values = [m.value for m in messages]
    assert values == [f"a{i}".encode() for i in range(50)] + [f"b{i}".encode() for i in range(50)]


async def test_pending_messages_are_resent_after_the_connection_drops(pulsar_broker: PulsarBroker) -> None:
    topic = unique("drop")
    async with (
        pulsarwire.connect(pulsar_broker.url, initial_backoff_interval=0.05) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        futures = [await producer.enqueue(f"{i}".encode()) for i in range(100)]
        connection = producer._producers[0].connection
        assert connection is not None
        connection.channel.abort()  # the batches in flight have no receipt yet
        futures += [await producer.enqueue(f"{i}".encode()) for i in range(100, 200)]
        await asyncio.wait_for(asyncio.gather(*futures), 30)
        messages = await receive_n(consumer, 200, timeout=30)
        seen = {m.value for m in messages}
        while len(seen) < 200:  # a batch persisted before the drop may arrive twice
            seen.add((await receive_n(consumer, 1, timeout=30))[0].value)
    assert seen == {f"{i}".encode() for i in range(200)}


async def test_send_timeout_fails_pending_messages(pulsar_broker: PulsarBroker) -> None:
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.producer(unique("timeout"), send_timeout_ms=300) as producer,
    ):
        inner = producer._producers[0]
        inner._ready = False  # hold the frames back, as if the connection were stuck
        future = await producer.enqueue(b"stuck")
        with pytest.raises(pulsarwire.SendTimeoutError):
            await future


async def test_errors_are_typed(pulsar_broker: PulsarBroker) -> None:
    client = pulsarwire.connect("pulsar://127.0.0.1:1", operation_timeout=0.5, connect_timeout=0.2)
    with pytest.raises(pulsarwire.ConnectError):
        await client.start()
    await client.close()
    topic = unique("busy")
    async with (
        pulsarwire.connect(pulsar_broker.url, operation_timeout=120) as client,
        client.consumer(topic, group="exclusive"),
    ):
        started = time.monotonic()
        with pytest.raises(pulsarwire.ConsumerBusyError):
            await client.consumer(topic, group="exclusive").start()
        # Fatal: not retried until the operation timeout (120 s). The bound is liveness only, far under it.
        assert time.monotonic() - started < 30


# --------------------------------------------------------------------------------- pulsar-client interop
pulsar = pytest.importorskip("pulsar")


def _their_compression(name: str) -> Any:
    return getattr(pulsar.CompressionType, {"ZLIB": "ZLib"}.get(name, name))


@pytest.mark.parametrize("batching", [True, False], ids=["batching", "no-batching"])
@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_ours_produce_pulsar_client_consumes(
    pulsar_broker: PulsarBroker, compression: str, batching: bool
) -> None:
    topic = unique("ours-to-theirs")
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        subscription = theirs.subscribe(topic, "theirs", initial_position=pulsar.InitialPosition.Earliest)
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.producer(topic, compression_type=compression, batching_enabled=batching) as producer,
        ):
            ids = await produce_n(producer, 100)

        def consume() -> list[Any]:
            got = []
            for _ in range(100):
                message = subscription.receive(timeout_millis=20_000)
                got.append(message)
                subscription.acknowledge(message)
            return got

        got = await asyncio.to_thread(consume)
    finally:
        theirs.close()
    assert [(m.data(), m.partition_key().encode(), {k: v.encode() for k, v in m.properties().items()})
            for m in got] == [expected(i) for i in range(100)]
    assert [m.event_timestamp() for m in got] == [1_700_000_000_000 + i for i in range(100)]
    theirs_ids = [m.message_id() for m in got]
    assert [(i.ledger_id(), i.entry_id(), i.batch_index()) for i in theirs_ids] == [
        (i.ledger_id, i.entry_id, i.batch_index) for i in ids
    ]
    # Serialized ids are the same bytes on both sides.
    assert MessageId.deserialize(theirs_ids[3].serialize())[:3] == ids[3][:3]
    assert pulsar.MessageId.deserialize(ids[3].serialize()).entry_id() == ids[3].entry_id


@pytest.mark.parametrize("batching", [True, False], ids=["batching", "no-batching"])
@pytest.mark.parametrize("compression", COMPRESSIONS)
async def test_pulsar_client_produces_ours_consume(
    pulsar_broker: PulsarBroker, compression: str, batching: bool
) -> None:
    topic = unique("theirs-to-ours")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="ours", start="earliest") as consumer,
    ):
        def produce() -> None:
            theirs = pulsar.Client(pulsar_broker.url)
            try:
                producer = theirs.create_producer(
                    topic, compression_type=_their_compression(compression), batching_enabled=batching
                )
                for index in range(100):
                    value, key, headers = expected(index)
                    producer.send_async(
                        value, None, partition_key=key.decode(), properties={k: v.decode() for k, v in headers.items()},
                        event_timestamp=1_700_000_000_000 + index,
                    )
                producer.flush()
                producer.send(b"", partition_key="last", ordering_key="order")
                producer.close()
            finally:
                theirs.close()

        await asyncio.to_thread(produce)
        messages = await receive_n(consumer, 101)
    assert [(m.value, m.key, m.headers) for m in messages[:100]] == [expected(i) for i in range(100)]
    assert [m.event_time for m in messages[:100]] == [1_700_000_000_000 + i for i in range(100)]
    assert (messages[100].key, messages[100].ordering_key) == (b"last", b"order")


async def test_pulsar_client_consumes_our_partitioned_topic(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("partitioned-interop"), 3)
    async with pulsarwire.connect(pulsar_broker.url) as client, client.producer(topic) as producer:
        ids = await produce_n(producer, 60)
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        subscription = theirs.subscribe(topic, "theirs", initial_position=pulsar.InitialPosition.Earliest)

        def consume() -> list[tuple[bytes, int]]:
            got = []
            for _ in range(60):
                message = subscription.receive(timeout_millis=20_000)
                got.append((message.data(), partition_of(message.topic_name())))
                subscription.acknowledge(message)
            return got

        got = await asyncio.to_thread(consume)
    finally:
        theirs.close()
    where = dict(got)
    assert all(where[expected(i)[0]] == ids[i].partition for i in range(60))


# ------------------------------------------------------------------------------ the Java client's routing
_JAVA_PRODUCER = """
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.pulsar.client.api.*;

public class KeyedProducer {
    public static void main(String[] args) throws Exception {
        HashingScheme scheme = args[2].equals("murmur3_32")
            ? HashingScheme.Murmur3_32Hash : HashingScheme.JavaStringHash;
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[0]).build();
             Producer<byte[]> producer = client.newProducer().topic(args[1]).hashingScheme(scheme)
                 .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).enableBatching(false).create()) {
            for (int i = 3; i < args.length; i++) {
                String key = new String(HexFormat.of().parseHex(args[i]), StandardCharsets.UTF_8);
                producer.newMessage().key(key).value(key.getBytes(StandardCharsets.UTF_8)).send();
            }
        }
    }
}
"""

ROUTING_KEYS = ["a", "key-1", "order-42", "été", "日本語", "emoji-😀", "customer-0017", "x" * 40]


def _java_client() -> tuple[str, str] | None:
    try:
        from mqwire.testing import classpath
        from mqwire.testing.java import find_java

        entries = classpath.cached("pulsar")
        java = find_java("pulsar")
    except Exception:
        return None
    if not entries or not any("pulsar-client-original" in e for e in entries):
        return None
    return java.executable, ":".join(entries)


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
@pytest.mark.parametrize("scheme", ["java_string_hash", "murmur3_32"])
async def test_key_routing_matches_the_java_client(pulsar_broker: PulsarBroker, scheme: str, tmp_path: Path) -> None:
    found = _java_client()
    if found is None:
        pytest.skip("the Pulsar Java client jars are not in the local Maven cache")
    java, class_path = found
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("java-routing"), 7)
    source = tmp_path / "KeyedProducer.java"
    source.write_text(_JAVA_PRODUCER)
    command = [java, "-cp", class_path, str(source), pulsar_broker.url, topic, scheme,
               *(key.encode().hex() for key in ROUTING_KEYS)]
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
    ):
        result = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        messages = await receive_n(consumer, len(ROUTING_KEYS), timeout=30)
        async with client.producer(topic, hashing_scheme=scheme, batching_enabled=False) as producer:
            ours = {key: (await producer.send(key.encode(), key=key.encode())).partition for key in ROUTING_KEYS}
    java_placement = {m.value.decode(): m.partition for m in messages}
    assert java_placement == ours
    assert len(set(ours.values())) > 1
