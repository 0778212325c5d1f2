"""The producer's defaults, and the batches of a busy partition growing while a given batch_size stays fixed."""

from __future__ import annotations

import asyncio

import kafkawire
from kafkawire.accumulator import Accumulator, ProducerBatch, SendWindow
from kafkawire.bulk import BulkSend
from kafkawire.metadata import TopicPartition
from kafkawire.options import ProducerConfig
from mqwire.common.options import build_config

T0 = TopicPartition("t", 0)


def config(**options: object) -> ProducerConfig:
    return build_config(ProducerConfig, "producer", options)


def test_the_producer_defaults_are_these() -> None:
    # A change to any of them is deliberate: the porting guide's table states them.
    made = config()
    assert made.batch_size == 16_384
    assert made.max_batch_size == 1_048_576
    assert made.linger == 0.005
    assert made.buffer_memory == 33_554_432
    assert made.max_in_flight == 5
    assert made.acks == -1
    assert made.idempotent
    assert made.max_request_size == 1_048_576


def test_a_given_batch_size_is_fixed() -> None:
    made = config(batch_size=16_384)
    assert (made.batch_size, made.max_batch_size) == (16_384, 16_384)
    made = config(batch_size=500_000)
    assert (made.batch_size, made.max_batch_size) == (500_000, 500_000)


def test_batches_grow_to_max_request_size_within_a_brokers_default_batch_limit() -> None:
    assert config(max_request_size=500_000).max_batch_size == 500_000
    # A larger max_request_size does not take batches past what a broker takes by default.
    assert config(max_request_size=4_194_304).max_batch_size == 1_048_576
    # Never below where batches start.
    assert config(max_request_size=10_000).max_batch_size == 16_384


def test_the_producer_hands_its_accumulator_the_growth_limit() -> None:
    client = kafkawire.connect("kafka://127.0.0.1:1")
    assert client.producer("t")._accumulator.max_batch_size == 1_048_576
    assert client.producer("t", batch_size=16_384)._accumulator.max_batch_size == 16_384


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(**overrides: object) -> Accumulator:
    options: dict[str, object] = {
        "batch_size": 1_000,
        "max_batch_size": 8_000,
        "linger": 0.005,
        "compression": None,
        "buffer_memory": 1_000_000,
        "delivery_timeout": 120.0,
        "max_request_size": 1_000_000,
        "clock": Clock(),
    }
    options.update(overrides)
    return Accumulator(**options)  # type: ignore[arg-type]


def everything() -> SendWindow:
    return SendWindow(lambda topic, partition: 1, set(), {}, False, False, set())


def fill(acc: Accumulator, batches: int, partition: int = 0) -> list[ProducerBatch]:
    """Append 100-byte values until ``batches`` batches of the partition are full; those batches."""
    sealed = acc.sealed
    while acc.sealed - sealed < batches:
        assert acc.append("t", partition, 1, None, b"v" * 100, ()) is not None
    return [batch for batch in acc.queued() if batch.tp.partition == partition and batch.filled]


async def test_a_busy_partition_doubles_its_batches_up_to_the_limit() -> None:
    acc = make()
    full = fill(acc, 5)
    assert [batch.limit for batch in full] == [1_000, 2_000, 4_000, 8_000, 8_000]
    # Each is complete at its own limit, and reserved as much.
    assert all(batch.limit - 130 < batch.size <= batch.limit for batch in full)
    assert all(batch.reserved == batch.limit for batch in full)
    assert acc.used == sum(batch.reserved for batch in acc.queued())


async def test_a_given_batch_size_never_grows() -> None:
    acc = make(max_batch_size=None)
    assert [batch.limit for batch in fill(acc, 4)] == [1_000] * 4
    acc = make(max_batch_size=1_000)
    assert [batch.limit for batch in fill(acc, 4)] == [1_000] * 4


async def test_a_partition_that_keeps_up_starts_again_at_the_base_size() -> None:
    acc = make()
    fill(acc, 3)  # 1000, 2000, 4000; an open batch of 8000 follows
    while True:
        taken, _, _ = acc.drain(acc.clock() + 1, everything())
        if not taken:
            break
        for batch in taken[1]:
            batch.complete(0)
            acc.finished(batch)
    assert acc.empty
    acc.append("t", 0, 1, None, b"v", ())
    (batch,) = acc.queued()
    assert batch.limit == 1_000


async def test_a_batch_sent_before_it_filled_keeps_the_size_without_doubling() -> None:
    acc = make()
    fill(acc, 1)  # a full batch of 1000, then an open one of 2000
    acc.append("t", 0, 1, None, b"v", ())
    taken, _, _ = acc.drain(acc.clock() + 1, everything())  # the full one
    taken, _, _ = acc.drain(acc.clock() + 1, everything())  # the open one, its linger time up: in flight
    (lingered,) = taken[1]
    assert (lingered.limit, lingered.filled) == (2_000, False)
    acc.append("t", 0, 1, None, b"v", ())
    (batch,) = acc.queued()
    assert batch.limit == 2_000


async def test_grown_batches_count_against_the_buffer() -> None:
    acc = make(buffer_memory=12_000)
    fill(acc, 3)  # 1000 + 2000 + 4000 full, and an open batch that would grow to 8000: only 5000 are free
    assert [batch.limit for batch in acc.queued()][-1] == 5_000
    assert acc.used == 12_000  # never past buffer_memory for a grown batch
    assert acc.full  # the producer waits for room before the next record


async def test_other_partitions_start_at_the_base_size() -> None:
    acc = make()
    fill(acc, 3)
    assert [batch.limit for batch in fill(acc, 1, partition=1)] == [1_000]


async def test_bulk_appends_grow_the_same_way() -> None:
    acc = make()
    values: list[bytes | None] = [b"v" * 100] * 400
    call = BulkSend(len(values), asyncio.get_running_loop())
    done = 0
    while done < len(values):
        done += acc.append_many("t", 0, 1, None, values, None, range(len(values)), done, len(values), call)
    limits = [batch.limit for batch in acc.queued()]
    assert limits[:5] == [1_000, 2_000, 4_000, 8_000, 8_000]


def records_per_batch(acc: Accumulator, value: bytes, batches: int) -> list[int]:
    """Append ``value`` to partition 0 until ``batches`` batches are complete; how many records each holds."""
    sealed = acc.sealed
    while acc.sealed - sealed < batches:
        assert acc.append("t", 0, 1, None, value, ()) is not None
    return [len(batch.outcome.timestamps) for batch in acc.queued() if batch.filled]


async def test_large_records_start_a_batch_with_room_for_several() -> None:
    # 600 B records in 1,000 B batches: one record a batch, one request each, were it not for the room
    # made for four of them from the start.
    acc = make()
    assert records_per_batch(acc, b"v" * 600, 3)[0] == 4
    # Never past max_batch_size: 3,000 B records get 8,000 B batches, two records each.
    acc = make()
    assert records_per_batch(acc, b"v" * 3_000, 1) == [2]
    assert next(batch.limit for batch in acc.queued()) == 8_000


async def test_small_records_start_at_the_base_size_as_before() -> None:
    acc = make()
    acc.append("t", 0, 1, None, b"v" * 100, ())
    (batch,) = acc.queued()
    assert batch.limit == 1_000


async def test_a_given_batch_size_holds_large_records_one_at_a_time() -> None:
    acc = make(max_batch_size=None)
    assert records_per_batch(acc, b"v" * 600, 3) == [1, 1, 1]


def fill_once(acc: Accumulator, partition: int, *, late: bool = False) -> ProducerBatch:
    """Append 100-byte values to the partition as the sticky partitioner does (no new batch: it moves on then)
    until its batch is full, the last record ``late`` (past the linger time) or not; that batch, acknowledged."""
    clock = acc.clock
    assert isinstance(clock, Clock)
    first = acc.append("t", partition, 1, None, b"v" * 100, ())
    assert first is not None
    while True:
        if late:
            clock.now += 0.001  # the batch fills over more than its linger time
        if acc.append("t", partition, 1, None, b"v" * 100, (), abort_on_new_batch=True) is None:
            break
    taken, _, _ = acc.drain(clock(), everything())
    (batch,) = taken[1]
    assert batch.filled
    batch.complete(0)
    acc.finished(batch)
    return batch


async def test_over_many_partitions_a_batch_full_before_its_linger_time_doubles_the_next() -> None:
    # The sticky partitioner moves on at each new batch: when it comes back, the partition's last batch is
    # acknowledged, and it is busy only in that it filled up early.
    acc = make()
    sizes = []
    for _ in range(5):
        for partition in range(3):
            batch = fill_once(acc, partition)
            if partition == 0:
                sizes.append(batch.limit)
    assert sizes == [1_000, 2_000, 4_000, 8_000, 8_000]
    assert acc.empty and acc.used == 0


async def test_a_batch_that_filled_over_its_linger_time_leaves_the_next_at_its_size() -> None:
    acc = make()
    assert fill_once(acc, 0).limit == 1_000
    assert fill_once(acc, 0, late=True).limit == 2_000  # grown after the early one, but filled late
    assert fill_once(acc, 0).limit == 2_000  # kept: the partition fills about that much in its linger time
    assert fill_once(acc, 0).limit == 4_000  # that one filled early: doubled
    acc = make(max_batch_size=None)  # a given batch_size: never grows
    assert [fill_once(acc, 0).limit for _ in range(3)] == [1_000] * 3


def send_at_linger(acc: Accumulator, partition: int, records: int) -> ProducerBatch:
    """Append ``records`` 100-byte values to the partition's new batch, then let its linger time pass: that
    batch, sent and acknowledged."""
    clock = acc.clock
    assert isinstance(clock, Clock)
    assert acc.append("t", partition, 1, None, b"v" * 100, ()) is not None  # opens the batch
    for _ in range(records - 1):
        assert acc.append("t", partition, 1, None, b"v" * 100, (), abort_on_new_batch=True) is not None
    clock.now += 0.006
    taken, _, _ = acc.drain(clock(), everything())
    (batch,) = taken[1]
    assert not batch.filled
    batch.complete(0)
    acc.finished(batch)
    return batch


async def test_a_batch_sent_at_its_linger_time_half_full_keeps_its_size_for_the_next() -> None:
    # Over several partitions a partition's batch is done when the sticky partitioner comes back to it; one
    # that its linger time sent at least half full says the partition keeps up at that size (a large batch
    # that missed being full would otherwise send the partition back to batch_size, then up again by doubling).
    acc = make()
    assert [fill_once(acc, 0).limit for _ in range(3)] == [1_000, 2_000, 4_000]
    lingered = send_at_linger(acc, 0, 30)
    assert lingered.limit == 8_000 and 2 * lingered.size < 8_000  # 30 records of about 120 bytes: under half
    acc.append("t", 0, 1, None, b"v", ())
    (batch,) = acc.queued()
    assert batch.limit == 1_000  # so the next is back at the base size

    acc = make()
    assert [fill_once(acc, 0).limit for _ in range(4)] == [1_000, 2_000, 4_000, 8_000]
    assert send_at_linger(acc, 0, 40).limit == 8_000  # over half full at its linger time
    assert send_at_linger(acc, 0, 20).limit == 8_000  # kept; this one less than half full
    assert fill_once(acc, 0).limit == 1_000  # back to the base size
