"""Batching in the producer's accumulator, driven by a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from kafkawire.accumulator import TIMER_SLACK, Accumulator, ProducerBatch, SendWindow
from kafkawire.buffer_waits import BufferWaits
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


def window(
    leaders: dict[TopicPartition, int],
    *,
    full: set[int] | None = None,
    in_flight: dict[TopicPartition, int] | None = None,
    strict: bool = False,
    idempotent: bool = False,
    held: set[TopicPartition] | None = None,
) -> SendWindow:
    """A sender's view: ``leaders`` by partition, and nothing in flight unless said."""

    def leader_of(topic: str, partition: int) -> int:
        return leaders.get(TopicPartition(topic, partition), -1)

    return SendWindow(leader_of, full or set(), in_flight or {}, strict, idempotent, held or set())


T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


async def test_records_of_a_partition_share_one_batch_until_linger() -> None:
    clock = Clock()
    acc = make(clock)
    futures = [acc.append("t", 0, 1, b"k", b"v%d" % i, ()) for i in range(5)]
    assert all(f is not None for f in futures)
    taken, next_time, _ = acc.drain(clock(), window({T0: 1}))
    assert taken == {}
    assert next_time == pytest.approx(1000.005 - TIMER_SLACK)
    clock.now += 0.005 - TIMER_SLACK - 0.0001
    assert acc.drain(clock(), window({T0: 1}))[0] == {}
    clock.now += 0.0001
    taken, next_time, _ = acc.drain(clock(), window({T0: 1}))
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
    taken, _, _ = acc.drain(clock(), window({T0: 1}))
    # One batch per partition per request; the rest waits for the next one.
    assert len(taken[1]) == 1
    first = taken[1][0]
    assert first.size <= 300
    taken, _, _ = acc.drain(clock(), window({T0: 1}))
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
    taken, _, _ = acc.drain(clock(), window(tps))
    # Each batch is over 2000 bytes: one per request to stay under max_request_size.
    assert sorted(taken) == [1, 2]
    assert all(len(batches) == 1 for batches in taken.values())
    taken, _, _ = acc.drain(clock(), window(tps))
    assert all(len(batches) == 1 for batches in taken.values())
    assert not list(acc.queued())


async def test_unknown_leader_is_reported_and_the_batch_stays() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("orders", 3, 1, None, b"v", ())
    taken, _, unknown = acc.drain(clock(), window({}))
    assert taken == {}
    assert unknown == {"orders"}
    assert len(list(acc.queued())) == 1


async def test_node_without_capacity_keeps_its_batches() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    taken, _, _ = acc.drain(clock(), window({T0: 1}, full={1}))
    assert taken == {}
    taken, _, _ = acc.drain(clock(), window({T0: 1}))
    assert len(taken[1]) == 1


async def test_retries_go_first_in_sequence_order_after_their_backoff() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0, batch_size=80)
    for i in range(6):
        acc.append("t", 0, 1, None, b"%d" % i * 30, ())
    batches: list[ProducerBatch] = []
    for _ in range(3):
        taken, _, _ = acc.drain(clock(), window({T0: 1}))
        batches.extend(taken[1])
    for sequence, batch in enumerate(batches):
        batch.set_producer(7, 0, sequence * 10)
    acc.reenqueue(batches[2], clock() + 0.1)
    acc.reenqueue(batches[0], clock() + 0.1)
    order = list(acc.queued())
    assert order[:2] == [batches[0], batches[2]]
    taken, next_time, _ = acc.drain(clock(), window({T0: 1}))
    assert taken == {}
    assert next_time == pytest.approx(clock() + 0.1)
    clock.now += 0.1
    taken, _, _ = acc.drain(clock(), window({T0: 1}))
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
        await BufferWaits(acc).for_space(0.05)


async def test_full_buffer_frees_when_a_batch_finishes() -> None:
    clock = Clock()
    acc = make(clock, batch_size=1000, buffer_memory=1500, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    acc.append("t", 1, 1, None, b"v", ())
    waiter = asyncio.ensure_future(BufferWaits(acc).for_space(5.0))
    await asyncio.sleep(0)
    assert not waiter.done()
    taken, _, _ = acc.drain(clock(), window({T0: 1, T1: 1}))
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
    assert batch.outcome.settled


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
    flushing = asyncio.ensure_future(BufferWaits(acc).flush())
    await asyncio.sleep(0)
    taken, _, _ = acc.drain(clock(), window({T0: 1}))
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


async def test_the_send_window_holds_back_what_may_not_go_yet() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    acc.append("t", 1, 1, None, b"w", ())
    leaders = {T0: 1, T1: 2}
    # A partition not in the transaction yet, and a node without room: neither sends.
    assert acc.drain(clock(), window(leaders, held={T0}, full={2}))[0] == {}
    # One batch per partition on the wire when strict; otherwise a second may follow the first.
    assert acc.drain(clock(), window(leaders, in_flight={T0: 1, T1: 1}, strict=True))[0] == {}
    taken, _, _ = acc.drain(clock(), window(leaders, in_flight={T0: 1}))
    assert sorted(taken) == [1, 2]


async def test_an_idempotent_retry_waits_until_its_partition_has_nothing_in_flight() -> None:
    clock = Clock()
    acc = make(clock, linger=0.0)
    acc.append("t", 0, 1, None, b"v", ())
    (batch,) = acc.drain(clock(), window({T0: 1}))[0][1]
    batch.set_producer(7, 0, 0)
    acc.reenqueue(batch, clock())
    assert acc.drain(clock(), window({T0: 1}, in_flight={T0: 1}, idempotent=True))[0] == {}
    assert acc.drain(clock(), window({T0: 1}, idempotent=True))[0] == {1: [batch]}


async def test_the_short_way_appends_bare_values_until_one_does_not_fit() -> None:
    clock = Clock()
    acc = make(clock, batch_size=200)
    acc.append("t", 0, 1, None, b"first", ())
    batch = acc.open_batch("t", 0)
    assert batch is not None
    futures = []
    while (future := acc.append_now(batch, b"x" * 40)) is not None:
        futures.append(future)
    # Refused: the batch keeps what it had and stays open (the full way then seals it and opens the next).
    assert len(futures) >= 2 and len(batch) == 1 + len(futures) and not batch.closed
    batch.complete(10)
    assert [f.result().offset for f in futures] == list(range(11, 11 + len(futures)))
    assert all(f.result().timestamp > 1 for f in futures)  # stamped now, not with the first record's time
