"""The receiver queues hold at most the client's memory_limit_bytes of messages, whatever they decompress to.

A fake broker that honours the consumer's permits pushes many small zlib payloads that each expand to
256 KiB; the application takes one message at a time. The bytes waiting in the queue are counted from the
messages themselves (their payloads), not from the client's own accounting.
"""

from __future__ import annotations

from typing import Any

import pytest

from pulsarwire.memory_budget import MemoryBudget
from pulsarwire.options import ConsumerConfig
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.batch import compress_payload, encode_entry
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.topic_consumer import TopicConsumer
from tests.unit.test_pulsar_client_flow import TOPIC, FakeBroker, FakeConnection, fake_client, flows, metadata

MESSAGE = 256 * 1024
LIMIT = 1024 * 1024
COUNT = 120


class PermitBroker:
    """Pushes its backlog as the broker does: an entry while any permit is left, a batch using one per message."""

    def __init__(self, entries: list[tuple[pb.MessageMetadata, bytes]]) -> None:
        self.entries = entries
        self.next = 0
        self.used = 0
        self.pushed_messages = 0

    def push(self, connection: FakeConnection, consumer_id: int) -> None:
        while self.next < len(self.entries):
            meta, payload = self.entries[self.next]
            count = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
            if sum(flows(connection)) - self.used <= 0:
                return
            self.used += count
            self.next += 1
            connection.message(consumer_id, 1, self.next, meta, payload)


def compressible(index: int) -> tuple[pb.MessageMetadata, bytes]:
    value = b"%08d" % index + bytes(MESSAGE - 8)
    return metadata(compression=pb.ZLIB, uncompressed_size=len(value)), compress_payload(pb.ZLIB, value)


def compressible_batch(index: int, size: int = 4) -> tuple[pb.MessageMetadata, bytes]:
    values = [b"%08d" % (index * size + i) + bytes(MESSAGE // size - 8) for i in range(size)]
    data = b"".join(encode_entry(v) for v in values)
    meta = metadata(compression=pb.ZLIB, uncompressed_size=len(data), num_messages_in_batch=size)
    return meta, compress_payload(pb.ZLIB, data)


def queued_bytes(queue: ReceiveQueue) -> int:
    return sum(len(message.payload) for message in queue._items)


async def started_consumer(
    limit: int, *, queue_size: int = 1000, held: int = 0, **options: Any
) -> tuple[FakeBroker, Any, ReceiveQueue, TopicConsumer]:
    """A consumer of a client whose memory budget is ``limit`` (``held`` bytes of it charged by another queue),
    started against a fake broker: the broker, the client, the consumer's queue and the consumer."""
    broker = FakeBroker()
    session = fake_client(broker, memory_limit_bytes=limit)
    session.memory.charge(held)
    queue = ReceiveQueue("test", session.memory)
    consumer = TopicConsumer(
        session, queue, TOPIC, "t", -1, ConsumerConfig.build({"group": "sub", **options}),
        queue_size=queue_size, on_failure=lambda _c, e: None,
    )
    await consumer.start()
    return broker, session, queue, consumer


async def drain(
    entries: list[tuple[pb.MessageMetadata, bytes]], *, limit: int, queue_size: int = 1000, **options: Any
) -> tuple[list[bytes], int, int]:
    """Consume the whole backlog one message at a time; the values, the peak queued bytes, the permits used."""
    broker, _session, queue, consumer = await started_consumer(limit, queue_size=queue_size, **options)
    backlog = PermitBroker(entries)
    received: list[bytes] = []
    peak = 0
    for _ in range(10 * COUNT):
        backlog.push(broker.current, consumer.consumer_id)
        peak = max(peak, queued_bytes(queue))
        message = queue.get_nowait()
        if message is None:
            break
        consumer.dequeued(message)
        received.append(message.payload[:8])
    await consumer.close()
    return received, peak, backlog.used


async def test_the_queue_holds_no_more_than_the_memory_limit_and_loses_nothing() -> None:
    received, peak, _ = await drain([compressible(i) for i in range(COUNT)], limit=LIMIT)
    assert received == [b"%08d" % i for i in range(COUNT)]
    # One message beyond the limit at most: the first grant assumes 64 KiB messages (16 for 1 MiB), after
    # which the grants follow the 256 KiB seen.
    assert peak <= 16 * MESSAGE + MESSAGE


async def test_batches_are_bounded_by_their_decompressed_size() -> None:
    received, peak, _ = await drain([compressible_batch(i) for i in range(COUNT // 4)], limit=LIMIT)
    assert received == [b"%08d" % i for i in range(COUNT)]
    assert peak <= 16 * MESSAGE + MESSAGE


async def test_once_the_size_is_known_the_queue_stays_within_the_limit() -> None:
    # The first wave is bounded by the assumed size; from then on the limit holds for the rest.
    entries = [compressible(i) for i in range(COUNT)]
    broker, session, queue, consumer = await started_consumer(LIMIT)
    backlog = PermitBroker(entries)
    backlog.push(broker.current, consumer.consumer_id)
    first_wave = backlog.used
    peaks_after: list[int] = []
    taken = 0
    while taken < COUNT:
        backlog.push(broker.current, consumer.consumer_id)
        if taken >= first_wave:
            peaks_after.append(queued_bytes(queue))
        message = queue.get_nowait()
        assert message is not None, f"stalled after {taken} messages"
        consumer.dequeued(message)
        taken += 1
    assert max(peaks_after) <= LIMIT + MESSAGE
    assert session.memory.used == 0 and queue.bytes == 0
    await consumer.close()
    assert session.memory.expected == 0


async def test_without_a_limit_the_queue_size_alone_bounds_it() -> None:
    received, peak, _ = await drain([compressible(i) for i in range(40)], limit=0, queue_size=1000)
    assert len(received) == 40
    assert peak == 40 * MESSAGE  # everything was pushed at once, as before the limit existed


async def test_a_partition_with_nothing_queued_always_gets_a_permit() -> None:
    # Another queue of the same client holds the whole budget and nobody reads it.
    broker, _session, queue, consumer = await started_consumer(LIMIT, queue_size=10, held=4 * LIMIT)
    assert flows(broker.current) == [1]
    backlog = PermitBroker([compressible(i) for i in range(3)])
    for index in range(3):
        backlog.push(broker.current, consumer.consumer_id)
        message = queue.get_nowait()
        assert message is not None and message.payload[:8] == b"%08d" % index
        consumer.dequeued(message)
    await consumer.close()


async def test_a_batch_of_small_messages_teaches_the_size_at_once() -> None:
    # Eight partitions share a client's budget: each grants by the bytes per message it expects. One batch
    # of 500 messages of 100 B must bring the estimate near 100 B, or the partitions' permits in flight seem
    # to fill the limit (8 x 1000 x 57 KiB after one step from the assumed 64 KiB) and come a few at a time.
    broker, _session, queue, consumer = await started_consumer(LIMIT)
    values = [b"%08d" % i + bytes(92) for i in range(500)]
    entry = metadata(num_messages_in_batch=500), b"".join(encode_entry(v) for v in values)
    backlog = PermitBroker([entry, entry])
    backlog.push(broker.current, consumer.consumer_id)
    granted = sum(flows(broker.current))
    taken = [queue.get_nowait() for _ in range(500)]
    for message in taken:
        assert message is not None
        consumer.dequeued(message)
    # The queue's half (500) granted again in full: 1 MiB holds 10,000 such messages.
    assert sum(flows(broker.current)) - granted == 500
    await consumer.close()


def test_the_budget_wakes_its_waiters_once_there_is_room() -> None:
    budget = MemoryBudget(100)
    woken: list[int] = []
    budget.charge(150)
    budget.wait(lambda: woken.append(1))
    budget.release(40)
    assert woken == []
    budget.release(20)
    assert woken == [1]
    budget.release(10)
    assert woken == [1]  # once per wait


def test_the_budget_wakes_a_waiter_only_when_its_room_is_free() -> None:
    # A partition with nothing to read waits for room for a whole grant; releases that leave less must not
    # call it at every message taken from another partition.
    budget = MemoryBudget(100)
    small: list[int] = []
    large: list[int] = []
    budget.charge(100)
    budget.wait(lambda: large.append(1), 60)
    budget.wait(lambda: small.append(1), 10)
    budget.release(20)
    assert small == [1] and large == []
    budget.release(40)
    assert large == [1]


@pytest.mark.parametrize("bad", [-1, 1.5, "64", True])
def test_a_bad_memory_limit_is_refused(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        fake_client(FakeBroker(), memory_limit_bytes=bad)
