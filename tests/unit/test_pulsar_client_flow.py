"""Producers and consumers against a fake connection that records what they send and plays the broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

import pulsarwire
from mqwire.common.errors import ConnectionLostError, MqwireError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.options import build_config
from pulsarwire import errors
from pulsarwire.options import ClientConfig, ConsumerConfig, ProducerConfig
from pulsarwire.protocol import commands
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.batch import (
    COMPRESSION_TYPES,
    compress_payload,
    decode_batch,
    decompress_payload,
    encode_entry,
)
from pulsarwire.protocol.frames import Frame, decode_frame, encode_payload_frame_raw
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.session import Session
from pulsarwire.topic_consumer import TopicConsumer
from pulsarwire.topic_producer import TopicProducer

T = pb.BaseCommand.Type


class FakeConnection:
    """Answers PRODUCER, SUBSCRIBE and the closes; ``sent`` holds every frame written, decoded."""

    def __init__(self, *, max_message_size: int = 5 * 1024 * 1024, producer_name: str = "fake-0") -> None:
        self.max_message_size = max_message_size
        self.producer_name = producer_name
        self.closed = False
        self.sent: list[Frame] = []
        self.requests: list[pb.BaseCommand] = []
        self.producers: dict[int, Callable[[int, Any, Frame], None]] = {}
        self.consumers: dict[int, Callable[[int, Any, Frame], None]] = {}
        self.listeners: dict[tuple[str, int], Callable[[MqwireError], None]] = {}
        self.refuse: MqwireError | None = None
        self._request_id = 0
        self.tasks = OwnedTasks("fake connection")

    # ------------------------------------------------------------------- the PulsarConnection surface
    def next_request_id(self) -> int:
        self._request_id += 1
        return self._request_id

    async def request(self, command: pb.BaseCommand, request_id: int, timeout: float | None) -> Frame:
        if self.closed:
            raise ConnectionLostError("fake connection closed")
        self.requests.append(command)
        await asyncio.sleep(0)
        if command.type in (T.PRODUCER, T.SUBSCRIBE) and self.refuse is not None:
            raise self.refuse
        if command.type == T.PRODUCER:
            response = pb.BaseCommand(type=T.PRODUCER_SUCCESS)
            response.producer_success.request_id = request_id
            response.producer_success.producer_name = command.producer.producer_name or self.producer_name
            return Frame(response)
        response = pb.BaseCommand(type=T.SUCCESS)
        response.success.request_id = request_id
        return Frame(response)

    def send(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionLostError("fake connection closed")
        self.sent.append(decode_frame(data[4:]))

    def register_producer(self, producer_id: int, handler: Any, closed: Any = None) -> None:
        self.producers[producer_id] = handler
        if closed is not None:
            self.listeners["p", producer_id] = closed

    def unregister_producer(self, producer_id: int) -> None:
        self.producers.pop(producer_id, None)
        self.listeners.pop(("p", producer_id), None)

    def register_consumer(self, consumer_id: int, handler: Any, closed: Any = None) -> None:
        self.consumers[consumer_id] = handler
        if closed is not None:
            self.listeners["c", consumer_id] = closed

    def unregister_consumer(self, consumer_id: int) -> None:
        self.consumers.pop(consumer_id, None)
        self.listeners.pop(("c", consumer_id), None)

    # ------------------------------------------------------------------------------ playing the broker
    def drop(self) -> None:
        """The connection dies: every registered producer and consumer hears of it."""
        self.closed = True
        listeners, self.listeners = list(self.listeners.values()), {}
        self.producers.clear()
        self.consumers.clear()
        for listener in listeners:
            listener(ConnectionLostError("fake connection dropped"))

    def sent_of(self, kind: int) -> list[Frame]:
        return [frame for frame in self.sent if frame.command.type == kind]

    def receipt(self, producer_id: int, sequence_id: int, ledger: int = 1, entry: int = 0) -> None:
        command = pb.BaseCommand(type=T.SEND_RECEIPT)
        command.send_receipt.producer_id = producer_id
        command.send_receipt.sequence_id = sequence_id
        command.send_receipt.message_id.ledgerId = ledger
        command.send_receipt.message_id.entryId = entry
        self.producers[producer_id](T.SEND_RECEIPT, command.send_receipt, Frame(command))

    def acknowledge_all(self, producer_id: int, ledger: int = 1) -> None:
        """A receipt for every SEND written so far, in order (one entry each)."""
        for entry, frame in enumerate(self.sent_of(T.SEND)):
            self.receipt(producer_id, frame.command.send.sequence_id, ledger, entry)

    def send_error(self, producer_id: int, sequence_id: int, code: Any, message: str = "no") -> None:
        command = pb.BaseCommand(type=T.SEND_ERROR)
        body = command.send_error
        body.producer_id, body.sequence_id, body.error, body.message = producer_id, sequence_id, code, message
        self.producers[producer_id](T.SEND_ERROR, body, Frame(command))

    def close_producer(self, producer_id: int) -> None:
        command = commands.close_producer(producer_id, 99)
        self.producers[producer_id](T.CLOSE_PRODUCER, command.close_producer, Frame(command))

    def message(
        self,
        consumer_id: int,
        ledger: int,
        entry: int,
        metadata: pb.MessageMetadata,
        payload: bytes,
        *,
        redelivery_count: int = 0,
        ack_set: list[int] | None = None,
        epoch: int | None = None,
    ) -> None:
        command = pb.BaseCommand(type=T.MESSAGE)
        body = command.message
        body.consumer_id = consumer_id
        body.message_id.ledgerId = ledger
        body.message_id.entryId = entry
        body.redelivery_count = redelivery_count
        if ack_set is not None:
            body.ack_set.extend(ack_set)
        if epoch is not None:
            body.consumer_epoch = epoch
        data = encode_payload_frame_raw(command.SerializeToString(), metadata.SerializeToString(), payload)
        frame = decode_frame(data[4:])
        self.consumers[consumer_id](T.MESSAGE, frame.command.message, frame)


class FakeBroker:
    """Hands out a fresh FakeConnection for each attachment; ``connections[-1]`` is the current one."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.connections: list[FakeConnection] = []
        self.refuse_next: MqwireError | None = None

    async def connection_for(self, topic: str) -> FakeConnection:
        connection = FakeConnection(**self.options)
        if self.refuse_next is not None:
            connection.refuse, self.refuse_next = self.refuse_next, None
        self.connections.append(connection)
        return connection

    @property
    def current(self) -> FakeConnection:
        return self.connections[-1]


def fake_client(broker: FakeBroker, operation_timeout: float = 2, **options: Any) -> Session:
    settings = {"initial_backoff_interval": 0.01, "max_backoff_interval": 0.02, "operation_timeout": operation_timeout}
    session = Session("pulsar://fake:6650", build_config(ClientConfig, "connect", {**settings, **options}))
    session.connection_for = broker.connection_for  # type: ignore[method-assign, assignment]
    return session


def error(code: int) -> MqwireError:
    return errors.error_for(code, "refused")


async def settle(delay: float = 0.0) -> None:
    """Let callbacks and the reconnection task run."""
    await asyncio.sleep(delay)
    for _ in range(5):
        await asyncio.sleep(0)


# --------------------------------------------------------------------------------------------- producer
TOPIC = "persistent://public/default/t"


async def started_producer(broker: FakeBroker, **options: Any) -> TopicProducer:
    options.setdefault("batching_max_publish_delay_ms", 10_000)
    producer = TopicProducer(fake_client(broker), TOPIC, -1, ProducerConfig.build(options))
    await producer.start()
    return producer


def add(producer: TopicProducer, value: bytes, **fields: Any) -> asyncio.Future[pulsarwire.MessageId]:
    future = producer.add(
        value,
        fields.get("properties"),
        fields.get("key"),
        False,
        fields.get("ordering_key"),
        fields.get("event_time", 0),
        fields.get("deliver_at"),
        False,
    )
    assert future is not None
    return future


def batch_of(frame: Frame) -> list[bytes]:
    assert frame.metadata is not None and frame.payload is not None
    data = decompress_payload(frame.metadata.compression, frame.payload, frame.metadata.uncompressed_size, 1 << 24)
    return [entry.payload for entry in decode_batch(data, frame.metadata.num_messages_in_batch)]


async def test_batches_close_at_the_message_count() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_max_messages=3)
    futures = [add(producer, f"m{i}".encode(), properties=[(b"i", str(i).encode())]) for i in range(7)]
    sends = broker.current.sent_of(T.SEND)
    assert [f.command.send.num_messages for f in sends] == [3, 3]
    assert [(f.command.send.sequence_id, f.command.send.highest_sequence_id) for f in sends] == [(0, 2), (3, 5)]
    assert sends[0].metadata is not None and sends[0].metadata.producer_name == "fake-0"
    assert batch_of(sends[1]) == [b"m3", b"m4", b"m5"]
    producer.flush_batch()
    assert [f.command.send.num_messages for f in broker.current.sent_of(T.SEND)] == [3, 3, 1]
    broker.current.acknowledge_all(producer.producer_id, ledger=9)
    ids = [await f for f in futures]
    assert ids[:4] == [pulsarwire.MessageId(9, 0, 0, -1, 3), pulsarwire.MessageId(9, 0, 1, -1, 3),
                       pulsarwire.MessageId(9, 0, 2, -1, 3), pulsarwire.MessageId(9, 1, 0, -1, 3)]
    assert ids[6] == pulsarwire.MessageId(9, 2, 0, -1, 1)
    assert producer.pending_messages == 0


async def test_batches_close_at_the_byte_limit_and_after_the_delay() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_max_allowed_size_in_bytes=250)
    for _ in range(3):
        add(producer, b"x" * 100)
    assert [f.command.send.num_messages for f in broker.current.sent_of(T.SEND)] == [2]
    quick = await started_producer(broker, batching_max_publish_delay_ms=20)
    add(quick, b"soon")
    assert broker.current.sent_of(T.SEND) == []
    await settle(0.05)
    assert len(broker.current.sent_of(T.SEND)) == 1


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
async def test_compressed_batches_carry_codec_and_size(name: str) -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, compression_type=name)
    for i in range(50):
        add(producer, b"repetitive payload %d" % i)
    producer.flush_batch()
    [frame] = broker.current.sent_of(T.SEND)
    assert frame.metadata is not None and frame.payload is not None
    assert frame.metadata.compression == COMPRESSION_TYPES[name]
    assert frame.metadata.uncompressed_size > len(frame.payload)
    assert batch_of(frame) == [b"repetitive payload %d" % i for i in range(50)]


async def test_unbatched_and_delayed_messages_travel_alone_in_order() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker)
    add(producer, b"batched")
    add(producer, b"delayed", deliver_at=2_000_000_000_000, key=b"k")
    sends = broker.current.sent_of(T.SEND)
    assert [f.metadata.num_messages_in_batch if f.metadata and f.metadata.HasField("num_messages_in_batch")
            else None for f in sends] == [1, None]
    alone = sends[1]
    assert alone.metadata is not None and bytes(alone.payload or b"") == b"delayed"
    assert alone.metadata.deliver_at_time == 2_000_000_000_000 and alone.metadata.partition_key == "k"
    assert alone.command.send.sequence_id == 1


async def test_full_queue_returns_none_until_a_receipt_frees_room() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, max_pending_messages=2, batching_enabled=False)
    add(producer, b"1")
    add(producer, b"2")
    assert producer.add(b"3", None, None, False, None, 0, None, False) is None
    waiter = asyncio.ensure_future(producer.wait_for_space())
    await settle()
    assert not waiter.done()
    broker.current.receipt(producer.producer_id, 0)
    await settle()
    assert waiter.done()
    assert producer.add(b"3", None, None, False, None, 0, None, False) is not None


async def test_oversized_messages_are_refused_or_chunked() -> None:
    broker = FakeBroker(max_message_size=3000)
    producer = await started_producer(broker)
    with pytest.raises(pulsarwire.MessageTooBigError):
        add(producer, b"x" * 4000)
    chunked = await started_producer(broker, batching_enabled=False, chunking_enabled=True)
    big = bytes(range(256)) * 25  # 6400 bytes: three chunks of at most 2000
    future = add(chunked, big)
    sends = broker.current.sent_of(T.SEND)
    assert len(sends) == 4 and all(f.command.send.is_chunk for f in sends)
    metadata = [f.metadata for f in sends]
    assert [m.chunk_id for m in metadata if m] == [0, 1, 2, 3]
    assert len({m.uuid for m in metadata if m}) == 1
    assert b"".join(bytes(f.payload or b"") for f in sends) == big
    for entry in range(4):
        assert not future.done()
        broker.current.receipt(chunked.producer_id, 0, ledger=4, entry=entry)
    assert await future == pulsarwire.MessageId(4, 0)


async def test_send_timeout_fails_everything_pending() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, send_timeout_ms=50, batching_enabled=False)
    first, second = add(producer, b"1"), add(producer, b"2")
    with pytest.raises(pulsarwire.SendTimeoutError):
        await first
    with pytest.raises(pulsarwire.SendTimeoutError):
        await second
    assert producer.pending_messages == 0
    broker.current.receipt(producer.producer_id, 0)  # late: ignored


async def test_lost_connection_recreates_the_named_producer_and_resends() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_enabled=False)
    futures = [add(producer, f"{i}".encode()) for i in range(3)]
    broker.current.receipt(producer.producer_id, 0)
    old = broker.current
    old.drop()
    futures.append(add(producer, b"3"))  # queued while detached
    await settle(0.1)
    new = broker.current
    assert new is not old
    [create] = [c for c in new.requests if c.type == T.PRODUCER]
    assert create.producer.producer_name == "fake-0" and create.producer.epoch == 2
    assert [f.command.send.sequence_id for f in new.sent_of(T.SEND)] == [1, 2, 3]
    new.acknowledge_all(producer.producer_id, ledger=2)
    assert [(await f).ledger_id for f in futures] == [1, 2, 2, 2]


async def test_broker_close_and_out_of_order_receipts_reattach() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_enabled=False)
    future = add(producer, b"x")
    broker.current.close_producer(producer.producer_id)
    await settle(0.1)
    assert len(broker.connections) == 2
    broker.current.receipt(producer.producer_id, 5)  # not the oldest pending: resend everything
    await settle(0.1)
    assert len(broker.connections) == 3
    assert any(c.type == T.CLOSE_PRODUCER for c in broker.connections[1].requests)
    broker.current.receipt(producer.producer_id, 0, ledger=3)
    assert (await future).ledger_id == 3


async def test_send_errors() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_enabled=False)
    refused, kept = add(producer, b"a"), add(producer, b"b")
    broker.current.send_error(producer.producer_id, 0, pb.NotAllowedError)
    with pytest.raises(pulsarwire.NotAllowedError):
        await refused
    broker.current.send_error(producer.producer_id, 1, pb.PersistenceError)  # transient: resend
    await settle(0.1)
    broker.current.acknowledge_all(producer.producer_id)
    assert (await kept).entry_id == 0


async def test_a_fatal_error_while_reconnecting_fails_pending_messages() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batching_enabled=False)
    future = add(producer, b"x")
    broker.refuse_next = error(pb.TopicTerminatedError)
    broker.current.drop()
    with pytest.raises(pulsarwire.TopicTerminatedError):
        await asyncio.wait_for(future, 2)
    with pytest.raises(pulsarwire.TopicTerminatedError):
        add(producer, b"y")


async def test_close_waits_for_receipts_then_closes_on_the_broker() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker)
    future = add(producer, b"x")
    closing = asyncio.ensure_future(producer.close())
    await settle()
    assert not closing.done()
    broker.current.acknowledge_all(producer.producer_id)
    await asyncio.wait_for(closing, 2)
    assert future.done() and broker.current.requests[-1].type == T.CLOSE_PRODUCER
    with pytest.raises(pulsarwire.ProducerClosedError):
        add(producer, b"y")


# --------------------------------------------------------------------------------------------- consumer
async def started_consumer(
    broker: FakeBroker,
    queue_size: int = 10,
    session: Session | None = None,
    queue: ReceiveQueue | None = None,
    **options: Any,
) -> tuple[TopicConsumer, ReceiveQueue, list[pulsarwire.MqwireError]]:
    options.setdefault("group", "sub")
    queue = ReceiveQueue("test") if queue is None else queue
    failures: list[pulsarwire.MqwireError] = []
    consumer = TopicConsumer(
        session or fake_client(broker), queue, TOPIC, "t", -1, ConsumerConfig.build(options), queue_size=queue_size,
        on_failure=lambda _c, e: failures.append(e),
    )
    await consumer.start()
    return consumer, queue, failures


def metadata(**fields: Any) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p", sequence_id=100, publish_time=1_700_000_000_000, **fields)


def batch(values: list[bytes], **fields: Any) -> tuple[pb.MessageMetadata, bytes]:
    payload = b"".join(encode_entry(v, partition_key=b"k%d" % i) for i, v in enumerate(values))
    return metadata(num_messages_in_batch=len(values), **fields), payload


def flows(connection: FakeConnection) -> list[int]:
    return [f.command.flow.messagePermits for f in connection.sent_of(T.FLOW)]


def acked(connection: FakeConnection) -> list[tuple[int, int]]:
    return [(m.ledgerId, m.entryId) for f in connection.sent_of(T.ACK) for m in f.command.ack.message_id]


async def test_subscribe_grants_the_queue_and_delivers_a_single_message() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, subscription_type="Failover", start="earliest")
    [subscribe] = [c.subscribe for c in broker.current.requests if c.type == T.SUBSCRIBE]
    assert (subscribe.subscription, subscribe.subType, subscribe.initialPosition) == ("sub", 2, 1)
    assert flows(broker.current) == [10]
    single = metadata(partition_key="key", event_time=5, ordering_key=b"o")
    single.properties.add(key="h", value="v")
    broker.current.message(consumer.consumer_id, 3, 4, single, b"value", redelivery_count=2)
    message = queue.get_nowait()
    assert message is not None
    assert (message.value, message.key, message.headers, message.ordering_key) == (b"value", b"key", {"h": b"v"}, b"o")
    assert (message.timestamp, message.event_time, message.redelivery_count) == (1_700_000_000_000, 5, 2)
    assert (message.sequence_id, message.producer_name, message.topic) == (100, "p", "t")
    assert message.message_id == pulsarwire.MessageId(3, 4)


async def test_batches_unpack_skip_acked_entries_and_refill_permits() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, queue_size=4, ack_group_time_ms=0)
    meta, payload = batch([b"a", b"b", b"c", b"d"])
    broker.current.message(consumer.consumer_id, 1, 1, meta, payload, ack_set=[0b1101])  # b acked before
    messages = [queue.get_nowait() for _ in range(3)]
    assert [m.value for m in messages if m] == [b"a", b"c", b"d"]
    assert [m.message_id.batch_index for m in messages if m] == [0, 2, 3]
    assert [m.sequence_id for m in messages if m] == [100, 102, 103]
    # One permit came back for the skipped entry; one dequeued message reaches half the queue. The queue
    # holds one entry of four: the broker gets one permit, enough for one more entry, and the other waits.
    assert flows(broker.current) == [4]
    first = messages[0]
    assert first is not None
    consumer.dequeued(first)
    assert flows(broker.current) == [4, 1]
    for message in messages:
        assert message is not None
        assert acked(broker.current) == []
        consumer.ack(message)
    assert acked(broker.current) == [(1, 1)]


async def test_the_broker_is_granted_no_more_entries_than_the_queue_holds() -> None:
    # The broker reads as many entries as it holds permits, each batch whole: it sent three batches of ten
    # for a queue of ten. Once those are taken, its permits cover one more entry, never five or more.
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, queue_size=10)
    meta, payload = batch([b"v%d" % i for i in range(10)])
    for entry in range(3):
        broker.current.message(consumer.consumer_id, 1, entry, meta, payload)
    taken = 0
    while (message := queue.get_nowait()) is not None:
        consumer.dequeued(message)
        taken += 1
    assert taken == 30
    # Granted (the first ten included) less what came: what the broker may still send, in messages.
    assert sum(flows(broker.current)) - taken == 1
    meta, payload = batch([b"w%d" % i for i in range(10)])
    broker.current.message(consumer.consumer_id, 1, 3, meta, payload)  # the entry that one permit brought
    while (message := queue.get_nowait()) is not None:
        consumer.dequeued(message)
        taken += 1
    assert sum(flows(broker.current)) - taken == 1


async def test_messages_taken_past_the_permits_do_not_each_try_a_grant() -> None:
    # While the messages the broker sent past the permits are taken, no grant can go out; under the client's
    # memory limit (64 MiB by default) trying one for every message taken cost a consumer of batched topics
    # a sixth of its CPU.
    broker = FakeBroker()
    session = fake_client(broker)
    consumer, queue, _ = await started_consumer(broker, session=session, queue=ReceiveQueue("test", session.memory))
    meta, payload = batch([b"v%d" % i for i in range(10)])
    for entry in range(5):
        broker.current.message(consumer.consumer_id, 1, entry, meta, payload)
    tries = 0
    grant = consumer._grant

    def counted() -> bool:
        nonlocal tries
        tries += 1
        return grant()

    consumer._grant = counted  # type: ignore[method-assign]
    for _ in range(45):
        message = queue.get_nowait()
        assert message is not None
        consumer.dequeued(message)
    assert tries <= 2
    assert sum(flows(broker.current)) - 50 == 1


async def test_corrupt_and_stale_entries_are_dropped() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, queue_size=2)
    bad = metadata(compression=pb.LZ4, uncompressed_size=100)
    broker.current.message(consumer.consumer_id, 1, 1, bad, b"not lz4 at all")
    [reject] = broker.current.sent_of(T.ACK)
    assert reject.command.ack.validation_error == pb.CommandAck.DecompressionError
    consumer.redeliver_all()
    [redeliver] = broker.current.sent_of(T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    assert redeliver.command.redeliverUnacknowledgedMessages.consumer_epoch == 1
    broker.current.message(consumer.consumer_id, 1, 2, metadata(), b"old", epoch=0)
    broker.current.message(consumer.consumer_id, 1, 3, metadata(), b"new", epoch=1)
    message = queue.get_nowait()
    assert message is not None and message.value == b"new" and len(queue) == 0


async def test_reconnecting_drops_old_queued_messages_and_grants_again() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, queue_size=6)
    broker.current.message(consumer.consumer_id, 1, 1, metadata(), b"stale")
    consumer.ack(queue.get_nowait() or pytest.fail("no message"))
    broker.current.message(consumer.consumer_id, 1, 2, metadata(), b"queued")
    old = broker.current
    old.drop()
    await settle(0.1)
    assert broker.current is not old and len(queue) == 0
    assert flows(broker.current) == [6]
    assert acked(broker.current) == [(1, 1)]  # the grouped ack waited for the new connection


async def test_negative_acks_by_subscription_type() -> None:
    broker = FakeBroker()
    shared, queue, _ = await started_consumer(broker, subscription_type="Shared",
                                              negative_ack_redelivery_delay_ms=10)
    broker.current.message(shared.consumer_id, 1, 7, metadata(), b"x")
    shared.negative_ack(queue.get_nowait() or pytest.fail("no message"))
    await settle(0.05)
    [request] = broker.current.sent_of(T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    ids = request.command.redeliverUnacknowledgedMessages.message_ids
    assert [(m.ledgerId, m.entryId) for m in ids] == [(1, 7)]
    exclusive, queue, _ = await started_consumer(broker, negative_ack_redelivery_delay_ms=10)
    broker.current.message(exclusive.consumer_id, 1, 8, metadata(), b"x")
    broker.current.message(exclusive.consumer_id, 1, 9, metadata(), b"y")
    exclusive.negative_ack(queue.get_nowait() or pytest.fail("no message"))
    await settle(0.05)
    [request] = broker.current.sent_of(T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    assert not request.command.redeliverUnacknowledgedMessages.message_ids  # everything, in order
    assert len(queue) == 0


async def test_chunks_are_joined_and_every_chunk_is_acked() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, ack_group_time_ms=0)
    whole = b"0123456789" * 30
    compressed = compress_payload(pb.ZLIB, whole)
    pieces = [compressed[:20], compressed[20:40], compressed[40:]]
    for chunk_id, piece in enumerate(pieces):
        chunk = metadata(uuid="u", chunk_id=chunk_id, num_chunks_from_msg=3, total_chunk_msg_size=len(compressed),
                         compression=pb.ZLIB, uncompressed_size=len(whole))
        broker.current.message(consumer.consumer_id, 5, 10 + chunk_id, chunk, piece)
    message = queue.get_nowait()
    assert message is not None and message.value == whole and message.message_id == pulsarwire.MessageId(5, 10)
    consumer.ack(message)
    assert acked(broker.current) == [(5, 10), (5, 11), (5, 12)]


async def test_a_refused_resubscription_reports_failure() -> None:
    broker = FakeBroker()
    _, _, failures = await started_consumer(broker)
    broker.refuse_next = error(pb.TopicNotFound)
    broker.current.drop()
    await settle(0.1)
    assert isinstance(failures[0], pulsarwire.TopicNotFoundError)


async def test_consumer_close_flushes_acks_and_unsubscribe_reports() -> None:
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, session=fake_client(broker, operation_timeout=60))
    broker.current.message(consumer.consumer_id, 1, 1, metadata(), b"x")
    consumer.ack(queue.get_nowait() or pytest.fail("no message"))
    started = time.monotonic()
    await consumer.close()
    # Liveness only: the fake answers at once, while a close that waited out its operation timeout would
    # take 60 s; 10 s leaves a loaded machine ample room.
    assert time.monotonic() - started < 10
    assert acked(broker.current) == [(1, 1)]
    assert broker.current.requests[-1].type == T.CLOSE_CONSUMER


# ----------------------------------------------------------------------------------------------- lookup
class LookupConnection:
    """Answers LOOKUP and PARTITIONED_METADATA from a script of responses."""

    def __init__(self, answers: list[pb.CommandLookupTopicResponse | pb.CommandPartitionedTopicMetadataResponse]):
        self.answers = answers
        self.asked: list[pb.BaseCommand] = []

    def next_request_id(self) -> int:
        return len(self.asked)

    async def request(self, command: pb.BaseCommand, request_id: int, timeout: float | None) -> Frame:
        self.asked.append(command)
        answer = self.answers.pop(0)
        answer.request_id = request_id
        if isinstance(answer, pb.CommandLookupTopicResponse):
            return Frame(pb.BaseCommand(type=T.LOOKUP_RESPONSE, lookupTopicResponse=answer))
        return Frame(pb.BaseCommand(type=T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=answer))


def lookup_with(connection: LookupConnection, *, tls: bool = False, max_redirects: int = 20) -> tuple[Any, list[Any]]:
    from pulsarwire.lookup import BrokerAddress, Lookup

    used: list[BrokerAddress] = []

    async def get(address: BrokerAddress) -> Any:
        used.append(address)
        return connection

    service = BrokerAddress("proxy:6650", ("proxy", 6650))
    return Lookup(get, lambda: service, tls=tls, timeout=1, max_redirects=max_redirects), used


Answer = pb.CommandLookupTopicResponse


async def test_lookup_follows_redirects_with_authoritative() -> None:
    connection = LookupConnection([
        Answer(response=Answer.Redirect, brokerServiceUrl="pulsar://b1:6650", authoritative=True),
        Answer(response=Answer.Connect, brokerServiceUrl="pulsar://b2:6650", brokerServiceUrlTls="pulsar+ssl://b2:6651"),
    ])
    lookup, used = lookup_with(connection)
    found = await lookup.find_broker(TOPIC)
    assert (found.logical, found.physical, found.proxied) == ("b2:6650", ("b2", 6650), False)
    assert [a.logical for a in used] == ["proxy:6650", "b1:6650"]
    assert [c.lookupTopic.authoritative for c in connection.asked] == [False, True]


async def test_lookup_through_a_proxy_and_over_tls() -> None:
    connection = LookupConnection([
        Answer(response=Answer.Connect, brokerServiceUrl="pulsar://b2:6650", brokerServiceUrlTls="pulsar+ssl://b2:6651",
               proxy_through_service_url=True),
    ])
    lookup, _ = lookup_with(connection, tls=True)
    found = await lookup.find_broker(TOPIC)
    assert (found.logical, found.physical, found.proxied) == ("b2:6651", ("proxy", 6650), True)


async def test_lookup_failures_are_typed() -> None:
    redirect = Answer(response=Answer.Redirect, brokerServiceUrl="pulsar://b1:6650")
    lookup, _ = lookup_with(LookupConnection([redirect] * 3), max_redirects=2)
    with pytest.raises(pulsarwire.TooManyRedirectsError):
        await lookup.find_broker(TOPIC)
    failed = Answer(response=Answer.Failed, error=pb.ServiceNotReady, message="busy")
    lookup, _ = lookup_with(LookupConnection([failed]))
    with pytest.raises(pulsarwire.ServiceNotReadyError):
        await lookup.find_broker(TOPIC)
    no_url = Answer(response=Answer.Connect, brokerServiceUrl="pulsar://b:1")
    lookup, _ = lookup_with(LookupConnection([no_url]), tls=True)
    with pytest.raises(pulsarwire.LookupFailedError):
        await lookup.find_broker(TOPIC)


async def test_partition_counts() -> None:
    metadata_answer = pb.CommandPartitionedTopicMetadataResponse
    lookup, _ = lookup_with(LookupConnection([
        metadata_answer(partitions=4),
        metadata_answer(response=metadata_answer.Failed, error=pb.TopicNotFound, message="gone"),
    ]))
    assert await lookup.partitions(TOPIC) == 4
    with pytest.raises(pulsarwire.TopicNotFoundError):
        await lookup.partitions(TOPIC)
