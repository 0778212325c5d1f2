"""A share consumer decompresses one ShareFetch response within its budget: batches past it are released to
the group unread, to come again in a later fetch; memory stays bounded whatever the producer compressed."""

from __future__ import annotations

import tracemalloc

import pytest

from kafkawire.metadata import TopicPartition
from kafkawire.protocol.messages import AcquiredRecords
from kafkawire.protocol.records import BatchBuilder, DecompressionBudget, RecordBatchTooLargeError
from kafkawire.share.acks import AcknowledgeType, ShareAcks
from kafkawire.share.session import acquired_messages

MIB = 1024 * 1024
TP = TopicPartition("shared", 0)
OTHER = TopicPartition("shared", 1)


def zstd_batch(base_offset: int, size: int) -> bytes:
    builder = BatchBuilder(compression="zstd")
    builder.append(1000, None, bytes(size), ())
    return builder.build(base_offset)


# Four one-record batches of 2 MiB of zeros: a few KB on the wire.
RESPONSE = b"".join(zstd_batch(offset, 2 * MIB) for offset in range(4))
ACQUIRED = [AcquiredRecords(first_offset=0, last_offset=3, delivery_count=1)]


def test_batches_past_the_budget_are_released_not_decompressed() -> None:
    acks = ShareAcks()
    budget = DecompressionBudget(5 * MIB)
    tracemalloc.start()
    try:
        messages = acquired_messages(TP, RESPONSE, ACQUIRED, 50.0, acks, budget=budget)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(RESPONSE) < 4096
    assert [m.offset for m in messages] == [0, 1]
    assert [len(m.value or b"") for m in messages] == [2 * MIB, 2 * MIB]
    # Two batches inflated and their two values handed out (8 MiB); all four would take twice that.
    assert peak < 12 * MIB
    # The two left are given back with the next request, so the group hands them out again.
    assert acks.take([TP], now=0.0)[0] == {TP: {2: AcknowledgeType.RELEASE, 3: AcknowledgeType.RELEASE}}


def test_the_budget_is_shared_by_the_partitions_of_one_response() -> None:
    acks = ShareAcks()
    budget = DecompressionBudget(5 * MIB)
    first = acquired_messages(TP, RESPONSE, ACQUIRED, 50.0, acks, budget=budget)
    second = acquired_messages(OTHER, RESPONSE, ACQUIRED, 50.0, acks, budget=budget)
    assert (len(first), len(second)) == (2, 0)
    released = acks.take([TP, OTHER], now=0.0)[0]
    assert released[OTHER] == dict.fromkeys(range(4), AcknowledgeType.RELEASE)


def test_a_batch_larger_than_the_whole_budget_is_a_typed_error() -> None:
    with pytest.raises(RecordBatchTooLargeError):
        acquired_messages(TP, zstd_batch(0, 2 * MIB), ACQUIRED, 50.0, ShareAcks(), budget=DecompressionBudget(MIB))
