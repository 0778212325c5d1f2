"""The broker-ceiling benchmark client's own arithmetic: how it splits records into requests and what it reads
from batch headers, checked against batches kafkawire's encoder builds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from ceiling import batch_plan, scan_batches

from kafkawire.protocol.records import decode_batches, encode_batch


def batch(base_offset: int, count: int) -> bytes:
    return encode_batch([(1_700_000_000_000, None, b"v" * 10, ())] * count, base_offset=base_offset)


@given(count=st.integers(1, 5_000), partitions=st.integers(1, 8), per_batch=st.integers(1, 300))
def test_the_plan_sends_every_record_once_and_no_batch_above_its_size(
    count: int, partitions: int, per_batch: int
) -> None:
    plan = batch_plan(count, partitions, per_batch)
    assert sum(map(sum, plan)) == count
    assert all(len(request) == partitions and max(request) <= per_batch for request in plan)
    assert all(request == [per_batch] * partitions for request in plan[:-1])


def test_the_scan_counts_records_and_finds_the_next_offset() -> None:
    data = batch(0, 3) + batch(3, 5) + batch(8, 1)
    assert scan_batches(data) == (9, 9)
    assert [b.base_offset for b in decode_batches(data)] == [0, 3, 8]


def test_a_batch_cut_by_the_fetch_size_is_left_for_the_next_fetch() -> None:
    whole = batch(10, 4) + batch(14, 6)
    for cut in (len(whole) - 1, len(batch(10, 4)) + 61, len(batch(10, 4)) + 5):
        assert scan_batches(whole[:cut]) == (4, 14)
    assert scan_batches(whole[:30]) == (0, -1)


@pytest.mark.parametrize("empty", [None, b"", memoryview(b"")])
def test_no_records_means_no_position(empty: bytes | memoryview | None) -> None:
    assert scan_batches(empty) == (0, -1)
