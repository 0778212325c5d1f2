"""The bulk record append (``enqueue_many``'s one pass): compiled and Python, against one record at a time.

Both implementations of ``append_records`` run on the same inputs and must write the same bytes, take the
same number of records under a limit and refuse the same bad records; and what they write must equal
``append_record`` called once per record, the reference.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire.protocol.records import BatchBuilder, append_record_py, append_records_py, decode_batches

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))
Header = tuple[str, bytes | None]


def compiled() -> Callable[..., int]:
    function: Callable[..., int] = importlib.import_module("kafkawire.protocol._records_speedups").append_records
    return function


def implementations() -> list[Callable[..., int]]:
    return [append_records_py, compiled()]


optional_bytes = st.none() | st.binary(max_size=200)
headers_strategy = st.lists(st.tuples(st.text(max_size=10), optional_bytes), max_size=3)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    rows=st.lists(st.tuples(optional_bytes, optional_bytes, headers_strategy), min_size=1, max_size=30),
    keyed=st.booleans(),
    with_headers=st.booleans(),
    limit=st.integers(-1, 3000),
    first_delta=st.integers(0, 1000),
    timestamp_delta=st.integers(-(2**40), 2**40),
    data=st.data(),
)
def test_both_write_what_one_at_a_time_writes(
    rows: list[tuple[bytes | None, bytes | None, list[Header]]],
    keyed: bool,
    with_headers: bool,
    limit: int,
    first_delta: int,
    timestamp_delta: int,
    data: st.DataObject,
) -> None:
    keys: list[bytes | None] | None = [r[0] for r in rows] if keyed else None
    values = [r[1] for r in rows]
    headers: list[Sequence[Header]] | None = [r[2] for r in rows] if with_headers else None
    start = data.draw(st.integers(0, len(rows)))
    stop = data.draw(st.integers(start, len(rows)))

    reference = bytearray(b"head")
    expected = 0
    for i in range(start, stop):
        key = None if keys is None else keys[i]
        record_headers = () if headers is None else headers[i]
        delta = first_delta + expected
        if not append_record_py(reference, limit, delta, timestamp_delta, key, values[i], record_headers):
            break
        expected += 1

    for append in implementations():
        buffer = bytearray(b"head")
        assert append(buffer, limit, first_delta, timestamp_delta, keys, values, headers, start, stop) == expected
        assert buffer == reference


# Keys, values and header values that are not bytes. (Header pairs of the wrong shape are refused by the
# producer before they get here, as for append_record.)
BAD_ROWS: list[tuple[Any, Any, Any]] = [
    (None, "text", None),
    (5, b"v", None),
    (None, b"v", [("h", "text")]),
    (None, b"v", 7),
]


@pytest.mark.parametrize("bad", BAD_ROWS, ids=range(len(BAD_ROWS)))
def test_both_refuse_the_same_bad_records(bad: tuple[Any, Any, Any]) -> None:
    key, value, record_headers = bad
    keys = [b"k", key, b"k"]
    values = [b"v", value, b"v"]
    headers = [(), () if record_headers is None else record_headers, ()]
    refused = []
    for append in implementations():
        buffer = bytearray(b"head")
        with pytest.raises(TypeError) as raised:
            append(buffer, -1, 0, 0, keys, values, headers, 0, 3)
        refused.append(type(raised.value))
    assert refused[0] is refused[1]


@pytest.mark.parametrize("arguments", [
    ((b"k",), [b"v"], None, 0, 1),  # keys not a list
    (None, [b"v"], None, 0, 2),  # past the end
    (None, [b"v", b"w"], [()], 0, 2),  # headers of another length
    (None, [b"v"], None, 1, 0),  # start after stop
])
def test_both_refuse_the_same_bad_calls(arguments: tuple[Any, ...]) -> None:
    keys, values, headers, start, stop = arguments
    refused = []
    for append in implementations():
        with pytest.raises((TypeError, ValueError)) as raised:
            append(bytearray(), -1, 0, 0, keys, values, headers, start, stop)
        refused.append(type(raised.value))
    assert refused[0] is refused[1]


def test_a_builder_filled_in_bulk_decodes_to_its_records() -> None:
    values: list[bytes | None] = [b"%04d" % i for i in range(1000)]
    keys: list[bytes | None] = [None if i % 2 else b"k%d" % i for i in range(1000)]
    builder = BatchBuilder(max_size=4096)
    taken = builder.append_many(1_700_000_000_000, keys, values, None, 0, 1000)
    assert 0 < taken < 1000  # stopped at the size limit
    assert builder.append_many(1_700_000_000_000, keys, values, None, taken, 1000) == 0
    empty = BatchBuilder(max_size=10)
    assert empty.append_many(5, None, [b"x" * 100, b"y"], None, 0, 2) == 1  # the first always goes in
    (batch,) = decode_batches(builder.build(0))
    decoded = batch.records
    assert [(r.key, r.value) for r in decoded] == list(zip(keys[:taken], values[:taken], strict=True))
    assert [r.offset for r in decoded] == list(range(taken))
