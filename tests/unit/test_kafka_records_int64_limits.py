"""Record offsets and timestamps at the int64 limits: the compiled loops give exactly what the Python ones give.

Offsets and timestamps are int64s on the wire, offset deltas int32s and timestamp deltas int64s. A record
whose ``base + delta`` passes int64 is malformed: both decoders refuse it with ProtocolError (as the
consumer reads it, through ``RecordBatch.decode_records``) instead of wrapping around or returning a number
no offset can be. Encoding, both refuse an offset delta or timestamp that the format cannot hold
(OverflowError) and write nothing.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire.protocol import records
from kafkawire.protocol.records import Record, RecordBatch, append_record_py, decode_records_py
from mqwire.common.errors import ProtocolError

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# The values around each limit and zero, where a sum passes int64 or just stays inside.
INT64_EDGES = [INT64_MIN, INT64_MIN + 1, INT64_MIN + 2**31, -1, 0, 1, INT64_MAX - 2**31, INT64_MAX - 1, INT64_MAX]
INT32_EDGES = [INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX]
int64s = st.one_of(st.sampled_from(INT64_EDGES), st.integers(INT64_MIN, INT64_MAX))
int32s = st.one_of(st.sampled_from(INT32_EDGES), st.integers(INT32_MIN, INT32_MAX))


def compiled() -> ModuleType:
    return importlib.import_module("kafkawire.protocol._records_speedups")


def decoders() -> dict[str, Callable[..., list[Any]]]:
    return {"python": decode_records_py, "compiled": compiled().decode_records}


def payload_of(rows: list[tuple[int, int]]) -> bytes:
    """Records of (offset delta, timestamp delta), written by the Python encoder (the reference)."""
    buffer = bytearray()
    for offset_delta, timestamp_delta in rows:
        assert append_record_py(buffer, -1, offset_delta, timestamp_delta, b"k", b"v", [("h", None)])
    return bytes(buffer)


def consumed(
    decoder: Callable[..., list[Any]],
    payload: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[tuple[int, int]] | str:
    """What a consumer gets from the batch with ``decoder`` as the record loop: (offset, timestamp) pairs,
    or "refused" for a ProtocolError (anything else escapes and fails the test)."""
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=0,
        attributes=records.TIMESTAMP_TYPE_LOG_APPEND if log_append_time is not None else 0,
        last_offset_delta=max(count - 1, 0),
        base_timestamp=base_timestamp,
        max_timestamp=log_append_time if log_append_time is not None else base_timestamp,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records=[],
        payload=payload,
        record_count=count,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records, "_decode_records", decoder)
        try:
            return [(r.offset, r.timestamp) for r in batch.decode_records(Record)]
        except ProtocolError:
            return "refused"


def expected(
    rows: list[tuple[int, int]], base_offset: int, base_timestamp: int, log_append_time: int | None
) -> list[tuple[int, int]] | str:
    """The exact sums, or "refused" when one of them passes int64."""
    out = []
    for offset_delta, timestamp_delta in rows:
        offset = base_offset + offset_delta
        timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
        if not (INT64_MIN <= offset <= INT64_MAX and INT64_MIN <= timestamp <= INT64_MAX):
            return "refused"
        out.append((offset, timestamp))
    return out


def check_both(
    rows: list[tuple[int, int]], base_offset: int, base_timestamp: int, log_append_time: int | None
) -> list[tuple[int, int]] | str:
    payload = payload_of(rows)
    want = expected(rows, base_offset, base_timestamp, log_append_time)
    for name, decoder in decoders().items():
        got = consumed(decoder, payload, len(rows), base_offset, base_timestamp, log_append_time)
        assert got == want, name
    return want


@pytest.mark.parametrize("base_offset", INT64_EDGES)
@pytest.mark.parametrize("offset_delta", INT32_EDGES)
def test_offsets_at_the_limits_are_exact_or_refused_alike(base_offset: int, offset_delta: int) -> None:
    check_both([(0, 0), (offset_delta, 0)], base_offset, 0, None)


@pytest.mark.parametrize("base_timestamp", INT64_EDGES)
@pytest.mark.parametrize("timestamp_delta", [*INT64_EDGES, -64, 63, 64, -65])
def test_timestamps_at_the_limits_are_exact_or_refused_alike(base_timestamp: int, timestamp_delta: int) -> None:
    check_both([(0, 0), (1, timestamp_delta)], 0, base_timestamp, None)


def test_the_edges_reach_both_answers() -> None:
    # The limits are met from both sides: the largest offset and timestamp are given, one more is refused.
    assert check_both([(1, 1)], INT64_MAX - 1, INT64_MAX - 1, None) == [(INT64_MAX, INT64_MAX)]
    assert check_both([(-1, -1)], INT64_MIN + 1, INT64_MIN + 1, None) == [(INT64_MIN, INT64_MIN)]
    assert check_both([(1, 0)], INT64_MAX, 0, None) == "refused"
    assert check_both([(0, -1)], 0, INT64_MIN, None) == "refused"
    assert check_both([(0, INT64_MAX)], 0, 1, None) == "refused"
    # The broker's log-append time replaces every sum: no timestamp sum is made, so none can overflow.
    assert check_both([(0, INT64_MAX)], 0, 1, 5) == [(0, 5)]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    rows=st.lists(st.tuples(int32s, int64s), min_size=1, max_size=5),
    base_offset=int64s,
    base_timestamp=int64s,
    log_append_time=st.none() | int64s,
)
def test_any_int64_bases_and_deltas_decode_alike(
    rows: list[tuple[int, int]], base_offset: int, base_timestamp: int, log_append_time: int | None
) -> None:
    check_both(rows, base_offset, base_timestamp, log_append_time)


# A record whose timestamp delta is a ten-byte varlong ending in ``last``: its tenth byte holds bit 63 alone.
def ten_byte_delta_record(last: int) -> bytes:
    body = bytes([0x00, *([0xFF] * 9), last, 0x00, 0x01, 0x01, 0x00])  # attributes, delta, offset, key, value, headers
    return bytes([len(body) << 1]) + body


@pytest.mark.parametrize("last", [0x00, 0x01, 0x02, 0x03, 0x7F, 0x80, 0xFF])
def test_a_tenth_varlong_byte_past_bit_63_is_refused_alike(last: int) -> None:
    payload = ten_byte_delta_record(last)
    outcomes = {name: consumed(decoder, payload, 1, 0, 0, None) for name, decoder in decoders().items()}
    assert outcomes["python"] == outcomes["compiled"]
    if last == 0x01:  # 2**64 - 1 zig-zag decoded: the smallest int64 delta
        assert outcomes["python"] == [(0, INT64_MIN)]
    elif last == 0x00:  # 2**63 - 1: bit 63 clear
        assert outcomes["python"] == [(0, -(2**62))]
    else:
        assert outcomes["python"] == "refused"


# ------------------------------------------------------------------------------------------------- encoding


def appended(append: Callable[..., bool], offset_delta: int, timestamp_delta: int) -> tuple[bytes, bool] | str:
    buffer = bytearray(b"head")
    try:
        accepted = append(buffer, -1, offset_delta, timestamp_delta, None, b"v", ())
    except OverflowError:
        assert buffer == b"head"  # nothing written
        return "overflow"
    return bytes(buffer), accepted


@pytest.mark.parametrize("offset_delta", [INT32_MIN - 1, INT32_MIN, 0, INT32_MAX, INT32_MAX + 1, INT64_MAX])
@pytest.mark.parametrize("timestamp_delta", [INT64_MIN - 1, INT64_MIN, 0, INT64_MAX, INT64_MAX + 1])
def test_deltas_the_format_cannot_hold_are_refused_alike(offset_delta: int, timestamp_delta: int) -> None:
    python = appended(append_record_py, offset_delta, timestamp_delta)
    assert python == appended(compiled().append_record, offset_delta, timestamp_delta)
    fits = INT32_MIN <= offset_delta <= INT32_MAX and INT64_MIN <= timestamp_delta <= INT64_MAX
    assert (python != "overflow") is fits


@pytest.mark.parametrize("first_delta", [INT32_MAX - 3, INT32_MAX - 2, INT32_MIN, INT32_MAX + 1])
def test_a_run_of_records_whose_last_delta_passes_int32_appends_none(first_delta: int) -> None:
    values: list[bytes | None] = [b"a", b"b", b"c"]
    outcomes = []
    for append_records in (records.append_records_py, compiled().append_records):
        buffer = bytearray(b"head")
        try:
            outcomes.append((append_records(buffer, -1, first_delta, 0, None, values, None, 0, 3), bytes(buffer)))
        except OverflowError:
            outcomes.append(("overflow", bytes(buffer)))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0][0] == "overflow") is (not INT32_MIN <= first_delta <= INT32_MAX - 2)
    if outcomes[0][0] == "overflow":
        assert outcomes[0][1] == b"head"


def appender_steps(appender: Any, timestamps: list[int]) -> tuple[list[int | str], tuple[Any, ...]]:
    steps: list[int | str] = []
    for timestamp in timestamps:
        try:
            steps.append(appender.add(timestamp, None, b"v", ()))
        except OverflowError:
            steps.append("overflow")
    return steps, (bytes(appender.buffer), appender.count, appender.base_timestamp, appender.max_timestamp)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(
        st.one_of(int64s, st.sampled_from([INT64_MIN - 1, INT64_MAX + 1, 2**70])),
        min_size=1,
        max_size=8,
    )
)
def test_appenders_take_and_refuse_the_same_timestamps(timestamps: list[int]) -> None:
    python = appender_steps(records.RecordAppenderPy(bytearray(b"head"), 10_000), timestamps)
    assert python == appender_steps(compiled().RecordAppender(bytearray(b"head"), 10_000), timestamps)


def test_a_timestamp_too_far_from_the_first_is_refused_and_changes_nothing() -> None:
    for appender in (records.RecordAppenderPy(bytearray(), 1000), compiled().RecordAppender(bytearray(), 1000)):
        assert appender.add(INT64_MIN, None, b"", ()) > 0
        before = (bytes(appender.buffer), appender.count, appender.max_timestamp)
        with pytest.raises(OverflowError):
            appender.add(INT64_MAX, None, b"", ())  # a delta of 2**64 - 1
        assert (bytes(appender.buffer), appender.count, appender.max_timestamp) == before
        assert appender.add(-1, None, b"", ()) > 0  # a delta of 2**63 - 1: the largest there is
