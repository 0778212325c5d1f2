"""The compiled batch-entry loops against the Python reference: the same bytes out, the same entries back.

The extension is built by ``pip install`` with the package; a run where it is missing fails here.
"""

from __future__ import annotations

import importlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqwire.common.errors import ProtocolError
from pulsarwire.protocol import batch
from pulsarwire.protocol.batch import BatchEntry, decode_batch, decode_batch_py, encode_entry, encode_entry_fields
from pulsarwire.protocol.wire import key_values

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))


def test_the_extension_is_built_and_used() -> None:
    module = importlib.import_module("pulsarwire.protocol._batch_speedups")
    if not os.environ.get("MQWIRE_PURE_PYTHON"):
        assert batch.COMPILED
        assert batch.encode_entry_fast is module.encode_entry


entry_strategy = st.tuples(
    st.binary(max_size=200),
    st.lists(st.tuples(st.text(max_size=10), st.binary(max_size=20)), max_size=3),
    st.none() | st.text(max_size=20).map(str.encode),
    st.booleans(),
    st.none() | st.binary(max_size=20),
    st.integers(0, 2**64 - 1),
    st.none() | st.integers(0, 2**64 - 1),
    st.booleans(),
)

Fields = tuple[bytes, list[tuple[str, bytes]], bytes | None, bool, bytes | None, int, int | None, bool]


def encoded(fields: Fields) -> tuple[bytes, bytes]:
    payload, pairs, key, b64, ordering, event_time, sequence_id, null_value = fields
    properties = key_values(batch.PROPERTIES_TAG, [(k.encode(), v) for k, v in pairs]) if pairs else b""
    args = (payload, properties, key, b64, ordering, event_time, sequence_id, null_value)
    return encode_entry_fields(*args), batch.encode_entry_fast(*args)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(entry_strategy, max_size=8))
def test_entries_encode_alike_and_decode_back(rows: list[Fields]) -> None:
    data = b""
    for fields in rows:
        reference, fast = encoded(fields)
        assert reference == fast
        data += fast
    decoded = decode_batch(data, len(rows))
    assert decoded == decode_batch_py(data, len(rows))
    for entry, (payload, pairs, key, b64, ordering, event_time, sequence_id, null_value) in zip(
        decoded, rows, strict=True
    ):
        assert (entry.payload, entry.properties, entry.partition_key) == (
            payload,
            {k: v for k, v in pairs},
            None if key is None else key.decode(),
        )
        assert (entry.partition_key_b64_encoded, entry.ordering_key, entry.event_time) == (b64, ordering, event_time)
        assert (entry.sequence_id, entry.null_value, entry.compacted_out) == (sequence_id, null_value, False)


def outcome(decode: object, data: bytes, count: int) -> object:
    try:
        return [tuple(entry) for entry in decode(data, count)]  # type: ignore[operator]
    except ProtocolError:
        return "refused"


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(entry_strategy, min_size=1, max_size=4), st.data())
def test_damaged_batches_read_alike(rows: list[Fields], data: st.DataObject) -> None:
    payload = bytearray(b"".join(encoded(fields)[1] for fields in rows))
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
    count = data.draw(st.integers(-1, len(rows) + 2))
    assert outcome(decode_batch, bytes(payload), count) == outcome(decode_batch_py, bytes(payload), count)


def test_an_unusual_layout_is_read_by_the_reference() -> None:
    # A KeyValue with only its key: the reference reads the value as empty.
    metadata = b"\x0a\x03\x0a\x01k" + b"\x18\x01"
    data = len(metadata).to_bytes(4, "big") + metadata + b"v"
    assert decode_batch(data, 1) == [BatchEntry(b"v", {"k": b""})]


def test_keyword_encoder_matches() -> None:
    assert encode_entry(b"p", sequence_id=3, event_time=9) == batch.encode_entry_fast(
        b"p", b"", None, False, None, 9, 3, False
    )


@pytest.mark.parametrize("field", ["event_time", "sequence_id"])
@pytest.mark.parametrize("value", [-1, -(2**63), 2**64, 2**70])
def test_values_outside_an_unsigned_64_bit_field_are_refused_on_both_paths(field: str, value: int) -> None:
    fields: dict[str, int] = {"event_time": 0, "sequence_id": 3, field: value}
    with pytest.raises(OverflowError):
        encode_entry(b"p", **fields)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        batch.encode_entry_fast(b"p", b"", None, False, None, fields["event_time"], fields["sequence_id"], False)


@pytest.mark.parametrize("value", [0, 1, 2**63, 2**64 - 1])
def test_both_paths_agree_up_to_the_unsigned_64_bit_limit(value: int) -> None:
    expected = encode_entry(b"p", event_time=value, sequence_id=value)
    assert batch.encode_entry_fast(b"p", b"", None, False, None, value, value, False) == expected
    for decode in (decode_batch, decode_batch_py):
        entry = decode(expected, 1)[0]
        assert (entry.event_time, entry.sequence_id) == (value, value)
