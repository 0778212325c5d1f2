"""The decompressed bytes of a fetch response are bounded by the consumer, batch by batch.

The batches below are what a producer on a shared topic can write: a few KB of zstd that expand to
megabytes each (the review's four 2 KB batches took 256 MiB at once).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from kafkawire.fetcher import FetchConfig, Fetcher, PartitionState
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.records import BatchBuilder, RecordBatchTooLargeError, decode_batches
from kafkawire.receive_queue import ReceiveQueue

MIB = 1024 * 1024
BOMB_SIZE = 4 * MIB
BUDGET = 1 * MIB
HOSTILE = TopicPartition("shared", 0)
HEALTHY = TopicPartition("shared", 1)


def zstd_batch(base_offset: int, values: list[bytes]) -> bytes:
    builder = BatchBuilder(compression="zstd")
    for value in values:
        builder.append(1000, None, value, ())
    return builder.build(base_offset)


BOMB = zstd_batch(0, [bytes(BOMB_SIZE)])


def peak_allocation(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_crafted_batches_are_small() -> None:
    assert len(BOMB) < 2048


def test_lazy_decoding_decompresses_nothing_until_asked() -> None:
    data = b"".join(zstd_batch(offset, [bytes(BOMB_SIZE)]) for offset in range(4))
    batches: list[Any] = []
    assert peak_allocation(lambda: batches.extend(decode_batches(data, lazy=True))) < MIB
    assert [batch.inflated for batch in batches] == [False] * 4


def test_inflating_over_the_limit_is_a_typed_error_and_stays_bounded() -> None:
    (batch,) = decode_batches(BOMB, lazy=True)

    def inflate() -> None:
        with pytest.raises(RecordBatchTooLargeError):
            batch.inflate(BUDGET)

    assert peak_allocation(inflate) < 4 * BUDGET
    assert not batch.inflated


# ---------------------------------------------------------------------------------- the fetcher
def fetcher(budget: int) -> Fetcher:
    client: Any = SimpleNamespace(
        metadata=SimpleNamespace(topic_names={}), request_update=lambda topics: None
    )
    config = FetchConfig(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=50 * MIB,
        max_partition_bytes=MIB,
        isolation_level=0,
        reset="earliest",
        check_crcs=True,
        request_timeout=1.0,
        retry_backoff=0.1,
        max_decompressed_bytes=budget,
    )
    states = {tp: PartitionState(tp, position=0, leader=1) for tp in (HOSTILE, HEALTHY)}
    return Fetcher(client, states, ReceiveQueue(10_000), config)


def response(parts: dict[TopicPartition, bytes]) -> Any:
    partitions = [
        SimpleNamespace(
            partition_index=tp.partition,
            error_code=0,
            high_watermark=100,
            last_stable_offset=100,
            log_start_offset=0,
            records=records,
            aborted_transactions=None,
        )
        for tp, records in parts.items()
    ]
    return SimpleNamespace(responses=[SimpleNamespace(topic="shared", topic_id=None, partitions=partitions)])


def handle(target: Fetcher, parts: dict[TopicPartition, bytes]) -> None:
    sent = {tp: (target.states[tp].generation, target.states[tp].position) for tp in parts}
    target._handle_response(response(parts), sent)


async def test_a_batch_over_the_whole_budget_fails_its_partition_only() -> None:
    target = fetcher(BUDGET)
    bombs = b"".join(zstd_batch(offset, [bytes(BOMB_SIZE)]) for offset in range(1, 5))
    healthy = zstd_batch(0, [b"a", b"b"])
    # First response: the record before the bombs is delivered; the first bomb does not fit what is left,
    # so it and everything compressed after it wait for the next fetch.
    peak = peak_allocation(lambda: handle(target, {HOSTILE: zstd_batch(0, [b"before"]) + bombs, HEALTHY: healthy}))
    # Four batches of 4 MiB each were decompressed at once before: at most one budget's worth now.
    assert peak < 4 * BUDGET
    assert [m.value for m in target.queue.take(100)] == [b"before"]
    assert (target.states[HOSTILE].position, target.states[HEALTHY].position) == (1, 0)
    # Next response, the bombs first: the first of them alone exceeds the budget and fails its partition.
    peak = peak_allocation(lambda: handle(target, {HOSTILE: bombs, HEALTHY: healthy}))
    assert peak < 4 * BUDGET
    assert target.states[HOSTILE].failed
    assert target.states[HOSTILE].position == 1
    assert not target.states[HEALTHY].failed
    assert target.states[HEALTHY].position == 2
    with pytest.raises(RecordBatchTooLargeError, match="fetch_max_decompressed_bytes"):
        target.queue.take(100)
    assert [(m.partition, m.value) for m in target.queue.take(100)] == [(1, b"a"), (1, b"b")]


async def test_records_before_an_oversized_batch_are_delivered_with_the_error() -> None:
    target = fetcher(BUDGET)
    plain = BatchBuilder()
    plain.append(1000, None, b"plain", ())
    handle(target, {HOSTILE: plain.build(0) + zstd_batch(1, [bytes(BOMB_SIZE)])})
    assert target.states[HOSTILE].failed
    assert target.states[HOSTILE].position == 1
    with pytest.raises(RecordBatchTooLargeError, match="seek past offset 1"):
        target.queue.take(100)
    assert [m.value for m in target.queue.take(100)] == [b"plain"]


async def test_a_batch_that_does_not_fit_what_is_left_waits_for_the_next_fetch() -> None:
    target = fetcher(BUDGET)
    big = (BUDGET * 3) // 4
    first = zstd_batch(0, [bytes(big)])
    second = zstd_batch(0, [bytes(big)])
    handle(target, {HOSTILE: first, HEALTHY: second})
    assert target.states[HOSTILE].position == 1
    assert target.states[HEALTHY].position == 0  # not delivered, not failed: fetched again
    assert not target.states[HEALTHY].failed
    assert [m.partition for m in target.queue.take(100)] == [0]
    handle(target, {HEALTHY: second})
    assert target.states[HEALTHY].position == 1
    assert [len(m.value or b"") for m in target.queue.take(100)] == [big]
