"""Batching in the producer's accumulator, driven by a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kafkawire.accumulator import Accumulator, ProducerBatch
from kafkawire.errors import BufferFullError
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.records import decode_batches


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(clock: Clock, **overrides: object) -> Accumulator:
    options: dict[str, object] = {
        "batch_size": 1000,
        "linger": 0.005,
        "compression": None,
        "buffer_memory": 100_000,
        "delivery_timeout": 120.0,
        "max_request_size": 1_000_000,
        "clock": clock,
    }
    options.update(overrides)
    return Accumulator(**options)  # type: ignore[arg-type]


def leaders(mapping: dict[TopicPartition, int]) -> Callable[[TopicPartition], int]:
    return lambda tp: mapping.get(tp, -1)


def always(*_args: object) -> bool:
    return True


T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


async def test_records_of_a_partition_share_one_batch_until_linger() -> None:
    clock = Clock()
    acc = make(clock)
    futures = [acc.append("t", 0, 1, b"k", b"v%d" % i, ()) for i in range(5)]
    assert all(f is not None for f in futures)
    taken, next_time, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert taken == {}
    assert next_time == pytest.approx(1000.005)
    clock.now += 0.005
    taken, next_time, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert list(taken) == [1]
    (batch,) = taken[1]
    assert len(batch) == 5
    decoded = decode_batches(batch.encode())
    assert [r.value for r in decoded[0].records] == [b"v%d" % i for i in range(5)]


async def test_a_full_batch_is_ready_before_linger_and_a_new_one_opens() -> None:
    clock = Clock()
    acc = make(clock, batch_size=300, linger=10.0)
    for _ in range(10):
        acc.append("t", 0, 1, None, b"x" * 50, ())
    assert acc.sealed >= 1
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    # One batch per partition per request; the rest waits for the next one.
    assert len(taken[1]) == 1
    first = taken[1][0]
    assert first.size <= 300
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert len(taken.get(1, [])) == 1
    assert sum(len(b) for b in acc.queued()) + len(first) + len(taken[1][0]) == 10


async def test_abort_on_new_batch_lets_the_sticky_partitioner_move_on() -> None:
    clock = Clock()
    acc = make(clock, batch_size=200)
    assert acc.append("t", 0, 1, None, b"x", (), abort_on_new_batch=True) is None
    assert acc.append("t", 0, 1, None, b"x", ()) is not None
    while acc.append("t", 0, 1, None, b"x" * 40, (), abort_on_new_batch=True) is not None:
        pass
    # The open batch of partition 0 is full: a new record must go elsewhere or open a new batch.
    assert acc.append("t", 1, 1, None, b"x", ()) is not None


async def test_batches_are_grouped_by_leader_and_bounded_by_request_size() -> None:
    clock = Clock()
    acc = make(clock, batch_size=10_000, max_request_size=2_500)
    for partition in range(4):
        for _ in range(20):
            acc.append("t", partition, 1, None, b"y" * 100, ())
    clock.now += 1
    tps = {TopicPartition("t", p): (1 if p < 2 else 2) for p in range(4)}
    taken, _, _ = acc.drain(clock(), leaders(tps), always, always)
    # Each batch is over 2000 bytes: one per request to stay under max_request_size.
    assert sorted(taken) == [1, 2]
    assert all(len(batches) == 1 for batches in taken.values())
    taken, _, _ = acc.drain(clock(), leaders(tps), always, always)
    assert all(len(batches) == 1 for batches in taken.values())
    assert not list(acc.queued())


async def test_unknown_leader_is_reported_and_the_batch_stays() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("orders", 3, 1, None, b"v", ())
    taken, _, unknown = acc.drain(clock(), leaders({}), always, always)
    assert taken == {}
    assert unknown == {"orders"}
    assert len(list(acc.queued())) == 1


async def test_node_without_capacity_keeps_its_batches() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), lambda node: False, always)
    assert taken == {}
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert len(taken[1]) == 1


async def test_retries_go_first_in_sequence_order_after_their_backoff() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0, batch_size=80)
    for i in range(6):
        acc.append("t", 0, 1, None, b"%d" % i * 30, ())
    batches: list[ProducerBatch] = []
    for _ in range(3):
        taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
        batches.extend(taken[1])
    for sequence, batch in enumerate(batches):
        batch.set_producer(7, 0, sequence * 10)
    acc.reenqueue(batches[2], clock() + 0.1)
    acc.reenqueue(batches[0], clock() + 0.1)
    order = list(acc.queued())
    assert order[:2] == [batches[0], batches[2]]
    taken, next_time, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert taken == {}
    assert next_time == pytest.approx(clock() + 0.1)
    clock.now += 0.1
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert taken[1] == [batches[0]]
    assert batches[0].attempts == 1


async def test_expired_batches_are_handed_back() -> None:
    clock = Clock()
    acc = make(clock, delivery_timeout=5.0)
    acc.append("t", 0, 1, None, b"v", ())
    clock.now += 4.9
    assert acc.expire(clock()) == []
    clock.now += 0.2
    (expired,) = acc.expire(clock())
    assert len(expired) == 1
    assert not list(acc.queued())
    # Out of its queue, the batch takes no more records, and the partition's next record starts a new batch.
    assert expired.closed
    assert acc.open_batch("t", 0) is None
    future = acc.append("t", 0, 2, None, b"w", ())
    assert future is not None and acc.open_batch("t", 0) not in (None, expired)


async def test_a_settled_batch_takes_no_more_records() -> None:
    # enqueue's short way appends to the batch it last found open; a batch failed or acknowledged while
    # still open (aborted, or expired while its leader was unknown) must not be it.
    clock = Clock()
    acc = make(clock)
    acc.append("t", 0, 1, None, b"v", ())
    batch = acc.open_batch("t", 0)
    assert batch is not None and not batch.closed
    batch.fail(RuntimeError("gone"))
    assert batch.closed


async def test_full_buffer_waits_then_times_out() -> None:
    clock = Clock()
    acc = make(clock, batch_size=1000, buffer_memory=1500)
    acc.append("t", 0, 1, None, b"v", ())
    acc.append("t", 1, 1, None, b"v", ())
    assert acc.full
    with pytest.raises(BufferFullError):
        await acc.wait_for_space(0.05)


async def test_full_buffer_frees_when_a_batch_finishes() -> None:
    clock = Clock()
    acc = make(clock, batch_size=1000, buffer_memory=1500, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    acc.append("t", 1, 1, None, b"v", ())
    waiter = asyncio.ensure_future(acc.wait_for_space(5.0))
    await asyncio.sleep(0)
    assert not waiter.done()
    taken, _, _ = acc.drain(clock(), leaders({T0: 1, T1: 1}), always, always)
    batch = taken[1][0]
    batch.complete(100)
    acc.finished(batch)
    await asyncio.wait_for(waiter, 1.0)


async def test_complete_resolves_every_record_with_its_offset() -> None:
    clock = Clock()
    acc = make(clock)
    futures = [acc.append("t", 0, 1000 + i, None, b"v", ()) for i in range(3)]
    (batch,) = acc.queued()
    batch.complete(42)
    results = [f.result() for f in futures if f is not None]
    assert [(r.topic, r.partition, r.offset, r.timestamp) for r in results] == [
        ("t", 0, 42, 1000), ("t", 0, 43, 1001), ("t", 0, 44, 1002)
    ]
    assert batch.done.done()


async def test_log_append_time_replaces_the_record_timestamps() -> None:
    clock = Clock()
    acc = make(clock)
    future = acc.append("t", 0, 5, None, b"v", ())
    (batch,) = acc.queued()
    batch.complete(0, log_append_time=99)
    assert future is not None and future.result().timestamp == 99


async def test_flush_makes_batches_ready_now() -> None:
    clock = Clock()
    acc = make(clock, linger=100.0)
    acc.append("t", 0, 1, None, b"v", ())
    flushing = asyncio.ensure_future(acc.flush())
    await asyncio.sleep(0)
    taken, _, _ = acc.drain(clock(), leaders({T0: 1}), always, always)
    assert len(taken[1]) == 1
    taken[1][0].complete(0)
    acc.finished(taken[1][0])
    await asyncio.wait_for(flushing, 1.0)
    assert acc.empty


async def test_sequence_numbers_are_written_into_the_batch() -> None:
    clock = Clock()
    acc = make(clock)
    acc.append("t", 0, 1, None, b"v", ())
    acc.append("t", 0, 1, None, b"w", ())
    (batch,) = acc.queued()
    batch.set_producer(11, 2, 40)
    decoded = decode_batches(batch.encode())[0]
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (11, 2, 40)
