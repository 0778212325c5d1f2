"""The compiled record loops against the Python ones: the same bytes out, the same records back, the same refusals.

The Python implementation is the reference (it is what runs without a C compiler). The extension is
built by ``pip install`` with the package; a run where it is missing fails here rather than silently
measuring and testing the slow path.
"""

from __future__ import annotations

import gc
import importlib
import os
import time
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire.protocol import primitives as p
from kafkawire.protocol import records
from kafkawire.protocol.records import Record, append_record_py, decode_records_py
from mqwire.common.errors import ProtocolError

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))


def compiled() -> ModuleType:
    return importlib.import_module("kafkawire.protocol._records_speedups")


def test_the_extension_is_built_and_used() -> None:
    module = compiled()
    if not os.environ.get("MQWIRE_PURE_PYTHON"):
        assert records.COMPILED
        assert records._append_record is module.append_record


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Offsets, timestamps and timestamp deltas: the whole int64 range, its limits drawn often.
int64s = st.one_of(
    st.sampled_from([INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX]), st.integers(INT64_MIN, INT64_MAX)
)
optional_bytes = st.none() | st.binary(max_size=300)
headers_strategy = st.lists(st.tuples(st.text(max_size=20), optional_bytes), max_size=4)
record_strategy = st.tuples(
    int64s,  # timestamp delta (a varlong)
    optional_bytes,
    optional_bytes,
    headers_strategy,
)


def both_append(
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], limit: int
) -> tuple[bytes, list[bool]]:
    outputs = []
    for append in (append_record_py, compiled().append_record):
        buffer = bytearray(b"head")
        accepted = [
            append(buffer, limit, delta, ts, key, value, hdrs) for delta, (ts, key, value, hdrs) in enumerate(rows)
        ]
        outputs.append((bytes(buffer), accepted))
    assert outputs[0] == outputs[1]
    return outputs[0]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(record_strategy, max_size=20), st.integers(-1, 3000))
def test_append_writes_the_same_bytes(
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], limit: int
) -> None:
    both_append(rows, limit)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=20), int64s, int64s)
def test_decode_reads_back_what_was_appended(
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], base_offset: int, base_ts: int
) -> None:
    data, _ = both_append(rows, -1)
    payload = data[4:]
    expected = [
        Record(base_offset + delta, key, value, tuple(hdrs), base_ts + ts)
        for delta, (ts, key, value, hdrs) in enumerate(rows)
    ]
    fits = all(INT64_MIN <= r.offset <= INT64_MAX and INT64_MIN <= r.timestamp <= INT64_MAX for r in expected)
    for decode in (decode_records_py, compiled().decode_records):
        # An offset or timestamp past int64 is malformed: refused by both.
        assert outcome(decode, payload, len(rows), base_offset, base_ts) == (expected if fits else "refused")
    if base_offset + len(rows) - 1 > INT64_MAX:
        return  # the offsets alone pass int64, whatever the timestamps
    # With arguments around the record's own, and the broker's log-append time in place of each timestamp.
    wrapped = [("t", 3, r.offset, r.key, r.value, r.headers, 99, "x") for r in expected]
    for decode in (decode_records_py, compiled().decode_records):
        assert decode(payload, len(rows), base_offset, base_ts, 99, make_tuple, ("t", 3), ("x",)) == wrapped


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(st.tuples(int64s, optional_bytes, optional_bytes, headers_strategy), max_size=20),
    st.integers(0, 3000),
)
def test_the_compiled_appender_adds_and_counts_as_the_python_one(
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], max_size: int
) -> None:
    # The producer's per-record step: the same sizes returned (-1: refused), the same bytes and header counters.
    states = []
    for appender in (
        records.RecordAppenderPy(bytearray(b"head"), max_size),
        compiled().RecordAppender(bytearray(b"head"), max_size),
    ):
        sizes = [added(appender, ts, key, value, hdrs) for ts, key, value, hdrs in rows]
        states.append((sizes, bytes(appender.buffer), appender.count, appender.base_timestamp, appender.max_timestamp))
    assert states[0] == states[1]


def added(appender: object, *record: object) -> int | str:
    """The appender's answer to add(*record), or "overflow" for a timestamp too far from the batch's first."""
    try:
        size: int = appender.add(*record)  # type: ignore[attr-defined]
    except OverflowError:
        return "overflow"
    return size


def decoded(buffer: bytes, count: int, base_timestamp: int) -> list[Record]:
    return decode_records_py(buffer, count, 0, base_timestamp, None, Record)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(optional_bytes, max_size=20), st.integers(0, 3000))
def test_add_now_stamps_and_keeps_the_time_as_the_python_one(values: list[bytes | None], max_size: int) -> None:
    # The producer's plain send: a value alone, stamped with the wall clock (ms) and the stamp kept.
    states = []
    for appender, timestamps in (
        (records.RecordAppenderPy(bytearray(), max_size), []),
        (compiled().RecordAppender(bytearray(), max_size), compiled().RecordTimestamps()),
    ):
        before = time.time_ns() // 1_000_000
        sizes = [appender.add_now(value, timestamps) for value in values]
        after = time.time_ns() // 1_000_000
        stamps = list(timestamps)
        added = appender.count
        assert len(stamps) == added == len([size for size in sizes if size >= 0])
        assert all(before <= stamp <= after for stamp in stamps)
        got = decoded(bytes(appender.buffer), added, appender.base_timestamp)
        accepted = [value for value, size in zip(values, sizes, strict=True) if size >= 0]
        assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in got] == [
            (index, None, value, (), stamp) for index, (value, stamp) in enumerate(zip(accepted, stamps, strict=True))
        ]
        assert appender.max_timestamp == max(stamps, default=-1)
        states.append([size >= 0 for size in sizes])
    assert states[0] == states[1]


def test_add_now_refuses_what_add_refuses_and_keeps_nothing() -> None:
    for appender, timestamps in (
        (records.RecordAppenderPy(bytearray(), 100), []),
        (compiled().RecordAppender(bytearray(), 100), compiled().RecordTimestamps()),
    ):
        with pytest.raises(TypeError):
            appender.add_now("text", timestamps)
        assert (bytes(appender.buffer), appender.count, len(timestamps)) == (b"", 0, 0)
        assert appender.add_now(b"x" * 90, timestamps) > 0
        assert appender.add_now(b"y" * 20, timestamps) == -1  # past max_size: refused, no stamp kept
        assert (appender.count, len(timestamps)) == (1, 1)
    with pytest.raises(TypeError):
        compiled().RecordAppender(bytearray(), 100).add_now(b"x", [])  # the compiled one takes its own array


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.lists(st.integers(0, 2**50), max_size=5))))
def test_the_packed_timestamps_hold_what_a_list_holds(steps: list[int | list[int]]) -> None:
    packed, plain = compiled().RecordTimestamps(), []
    for step in steps:
        if isinstance(step, int):
            packed.append(step)
            plain.append(step)
        else:
            packed.extend(iter(step))
            plain.extend(step)
    assert len(packed) == len(plain)
    assert list(packed) == plain
    assert [packed[-i] for i in range(1, len(plain) + 1)] == [plain[-i] for i in range(1, len(plain) + 1)]
    for index in (len(plain), -len(plain) - 1):
        with pytest.raises(IndexError):
            packed[index]
    with pytest.raises(OverflowError):
        packed.append(2**63)
    with pytest.raises(TypeError):
        packed.append("1")
    assert len(packed) == len(plain)


@pytest.mark.parametrize(
    "bad", [("t", None, b"v", ()), (1, "key", b"v", ()), (1, None, 5, ()), (1, None, b"v", [("h",)])]
)
def test_the_compiled_appender_refuses_what_the_python_one_refuses(bad: tuple[object, ...]) -> None:
    refusals = []
    for appender in (records.RecordAppenderPy(bytearray(), 100), compiled().RecordAppender(bytearray(), 100)):
        with pytest.raises(TypeError) as raised:
            appender.add(*bad)
        refusals.append((bytes(appender.buffer), appender.count))
        assert raised.type is TypeError
    assert refusals == [(b"", 0), (b"", 0)]


class Tracked:
    """A record type whose instances the cycle collector tracks, as Message's are."""

    __slots__ = ("fields",)

    def __init__(self, *fields: object) -> None:
        self.fields = fields


def test_compiled_decoder_leaves_its_records_to_reference_counting() -> None:
    # Scanning every buffered message again and again was a third of a consumer's CPU per record; records hold
    # only bytes, ints, strings and tuples of them, so no cycle can pass through one.
    data, _ = both_append([(0, b"k", b"v", [("h", b"x")]), (1, None, b"w", [])], -1)
    assert gc.is_tracked(Tracked())
    python = decode_records_py(data[4:], 2, 0, 0, None, Tracked)
    ours = compiled().decode_records(data[4:], 2, 0, 0, None, Tracked, (), ())
    assert [r.fields for r in ours] == [r.fields for r in python]
    assert not any(gc.is_tracked(r) for r in ours)
    assert ours[1].fields[3] == ()  # no headers: an empty tuple (the shared one)


def make_tuple(*fields: object) -> tuple[object, ...]:
    return fields


def outcome(decode: object, payload: bytes, count: int, base_offset: int = 7, base_timestamp: int = 1000) -> object:
    try:
        return decode(payload, count, base_offset, base_timestamp, None, Record, (), ())  # type: ignore[operator]
    except (ProtocolError, *p.DECODE_ERRORS):
        return "refused"


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(record_strategy, min_size=1, max_size=6), st.data())
def test_damaged_records_are_refused_alike(
    rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]], data: st.DataObject
) -> None:
    payload = bytearray(both_append(rows, -1)[0][4:])
    for _ in range(data.draw(st.integers(1, 4))):
        if not payload:
            break
        where = data.draw(st.integers(0, len(payload) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            payload[where] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del payload[where:]
        else:
            payload[where:where] = data.draw(st.binary(min_size=1, max_size=6))
    count = data.draw(st.integers(0, len(rows) + 2))
    assert outcome(decode_records_py, bytes(payload), count) == outcome(
        compiled().decode_records, bytes(payload), count
    )


@pytest.mark.parametrize("count", [2**40, -1])
def test_a_claimed_count_beyond_the_data_is_refused_before_allocating(count: int) -> None:
    with pytest.raises((ValueError, OverflowError)):
        compiled().decode_records(b"\x00" * 14, count, 0, 0, None, Record, (), ())


def test_wrong_argument_types_are_type_errors() -> None:
    with pytest.raises(TypeError):
        compiled().append_record(b"not a bytearray", -1, 0, 0, None, b"v", ())
    with pytest.raises(TypeError):
        compiled().append_record(bytearray(), -1, 0, 0, "text", b"v", ())
    with pytest.raises(TypeError):
        compiled().append_record(bytearray(), -1, 0, 0, None, b"v", [("only-a-name",)])


def test_lazy_batches_give_the_records_of_eager_ones() -> None:
    rows = [(1_000 + i, b"k%d" % i, b"v" * i, [("h", b"%d" % i)]) for i in range(50)]
    control = records.BatchBuilder(control=True)
    control.append(5, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")
    data = (
        records.encode_batch(rows, base_offset=0)
        + records.encode_batch(rows, base_offset=50, compression="gzip")
        + control.build(100)
    )
    eager = records.decode_batches(data)
    lazy = records.decode_batches(data, lazy=True)
    assert [b.records for b in eager[:2]] == [b.decode_records(Record) for b in lazy[:2]]
    assert all(not b.records for b in lazy)
    assert lazy[2].control_type() == eager[2].control_type() == records.COMMIT_MARKER
    with pytest.raises(ProtocolError):
        broken = records.decode_batches(records.encode_batch(rows), lazy=True, verify_crc=False)[0]
        broken.payload = broken.payload[:-3]
        broken.decode_records(Record)


@pytest.mark.parametrize("limit", [256 * 1024, -1], ids=["batch-limit", "no-limit"])
def test_a_filling_buffer_is_reserved_by_doubling_not_reallocated_per_record(limit: int) -> None:
    # bytearray reserves an eighth more on its own: filled with 10 KB records, it was reallocated (and
    # often copied whole) at almost every record. ``__sizeof__`` shows the allocation.
    buffer = bytearray(61)
    value = bytes(10_000)
    allocations = {buffer.__sizeof__()}
    for delta in range(100):
        if not compiled().append_record(buffer, limit, delta, 0, None, value, ()):
            break
        allocations.add(buffer.__sizeof__())
    assert len(buffer) > 240_000
    assert len(allocations) <= 12
    if limit > 0:
        assert buffer.__sizeof__() <= limit + 100  # never reserved past the batch's limit
