"""Record batch v2: golden bytes, round trips with every codec, truncation, CRC, control batches, fuzzing."""

from __future__ import annotations

import contextlib
import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire.protocol.records import (
    ABORT_MARKER,
    COMMIT_MARKER,
    BatchBuilder,
    application_records,
    decode_batches,
    encode_batch,
)
from mqwire.common.errors import ChecksumError, ProtocolError


def test_golden_single_record_batch() -> None:
    batch = encode_batch([(1000, None, b"v", [])])
    # Record: length 7 (zig-zag 0x0e), attributes, timestamp delta 0, offset delta 0, null key (-1 -> 0x01),
    # value length 1 (0x02) "v", no headers.
    records = bytes.fromhex("0e 00 00 00 01 02 76 00")
    tail = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, -1, -1, -1, 1) + records
    crc = crc32c.crc32c(tail)
    expected = struct.pack(">qiibI", 0, 49 + len(records), -1, 2, crc) + tail
    assert batch == expected
    [decoded] = decode_batches(batch)
    assert decoded.base_offset == 0 and decoded.next_offset == 1
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded.records] == [(0, 1000, None, b"v", ())]


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_round_trip(codec: str | None) -> None:
    rows = [
        (1_700_000_000_000 + i, None if i % 3 == 0 else f"k{i}".encode(), b"value %d " % i * (i % 7), [("h", b"x")])
        for i in range(500)
    ]
    rows.append((1_700_000_000_000, b"", None, [("a", None), ("ü", b"")]))
    data = encode_batch(
        rows, base_offset=1000, compression=codec, producer_id=7, producer_epoch=2, base_sequence=10, transactional=True
    )
    [batch] = decode_batches(data)
    assert batch.compression == codec
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 10)
    assert batch.max_timestamp == max(row[0] for row in rows)
    assert batch.next_offset == 1000 + len(rows)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records] == [
        (1000 + i, ts, key, value, tuple(headers)) for i, (ts, key, value, headers) in enumerate(rows)
    ]


def test_builder_respects_max_size_and_rebuilds() -> None:
    builder = BatchBuilder(max_size=250)
    assert builder.append(1, None, b"x" * 150) == 0  # the first record always fits
    assert builder.append(2, None, b"x" * 100) is None
    assert builder.append(2, None, b"y") == 1
    first = builder.build(base_offset=5)
    builder.base_sequence = 3
    again = decode_batches(builder.build(base_offset=5))[0]
    assert again.base_sequence == 3 and len(again.records) == 2
    assert decode_batches(first)[0].records[1].value == b"y"
    with pytest.raises(ValueError):
        BatchBuilder().build()
    with pytest.raises(ValueError):
        BatchBuilder(compression="brotli")


def test_several_batches_and_a_truncated_tail() -> None:
    first = encode_batch([(1, b"a", b"1", [])], base_offset=0)
    second = encode_batch([(2, b"b", b"2", []), (3, b"c", b"3", [])], base_offset=1)
    stream = first + second
    assert [b.base_offset for b in decode_batches(stream)] == [0, 1]
    for cut in range(len(first), len(stream)):
        assert [b.base_offset for b in decode_batches(stream[:cut])] == [0]
    assert decode_batches(b"") == [] and decode_batches(None) == []


def test_crc_mismatch() -> None:
    data = bytearray(encode_batch([(1, b"k", b"value", [])]))
    data[-2] ^= 0xFF
    with pytest.raises(ChecksumError):
        decode_batches(bytes(data))
    assert decode_batches(bytes(data), verify_crc=False)[0].records[0].key == b"k"


def test_control_batches_are_exposed_but_skipped() -> None:
    data = encode_batch([(1, b"k", b"v", [])], base_offset=0, producer_id=9, transactional=True)
    marker = BatchBuilder(producer_id=9, transactional=True, control=True)
    marker.append(2, struct.pack(">hh", 0, COMMIT_MARKER), struct.pack(">hi", 0, 5))
    batches = decode_batches(data + marker.build(base_offset=1))
    assert [b.is_control for b in batches] == [False, True]
    assert batches[1].control_type() == COMMIT_MARKER != ABORT_MARKER
    assert batches[0].control_type() is None
    assert [r.value for r in application_records(batches)] == [b"v"]


def test_decompression_is_bounded() -> None:
    data = encode_batch([(1, None, b"\x00" * 100_000, [])], compression="zstd")
    with pytest.raises(ProtocolError):
        decode_batches(data, max_uncompressed_size=10_000)


def test_wrong_magic_and_short_length() -> None:
    data = bytearray(encode_batch([(1, None, b"v", [])]))
    data[16] = 1
    with pytest.raises(ProtocolError, match="magic"):
        decode_batches(bytes(data))
    with pytest.raises(ProtocolError):
        decode_batches(struct.pack(">qiib", 0, 10, 0, 2) + b"\x00" * 10)


VALID = encode_batch([(5, b"key", b"value", [("h", b"v")]), (6, None, None, [])], base_offset=3)
VALID_GZIP = encode_batch([(5, b"key", b"value" * 20, [])], compression="gzip")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.booleans())
def test_random_bytes(data: bytes, verify: bool) -> None:
    with contextlib.suppress(ProtocolError):
        decode_batches(data, verify_crc=verify)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([VALID, VALID_GZIP]),
    st.lists(st.tuples(st.integers(min_value=0, max_value=1000), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_mutated_batches(data: bytes, edits: list[tuple[int, int]]) -> None:
    mutated = bytearray(data)
    for position, value in edits:
        mutated[position % len(mutated)] = value
    with contextlib.suppress(ProtocolError):
        decode_batches(bytes(mutated), verify_crc=False)
