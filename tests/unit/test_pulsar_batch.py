"""The batch payload codec, hand-written metadata and ACK frames, checked against protobuf and golden bytes."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqwire.common.errors import ProtocolError
from pulsarwire.protocol import commands, wire
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.ack import individual_ack_frame
from pulsarwire.protocol.batch import (
    COMPRESSION_TYPES,
    PROPERTIES_TAG,
    BatchEntry,
    compress_payload,
    decode_batch,
    decompress_payload,
    encode_batch,
    encode_entry,
)
from pulsarwire.protocol.frames import encode_command
from pulsarwire.protocol.metadata import PROPERTIES_TAG as METADATA_PROPERTIES_TAG
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field

_U32 = struct.Struct(">I")


def reference_entry(payload: bytes, **fields: Any) -> bytes:
    """The same entry written through protobuf, as the Java client's serializer lays it out."""
    properties = fields.pop("properties", {})
    metadata = pb.SingleMessageMetadata(payload_size=len(payload), **fields)
    for key, value in properties.items():
        metadata.properties.add(key=key, value=value)
    data = metadata.SerializeToString()
    return _U32.pack(len(data)) + data + payload


def pairs(properties: dict[str, str]) -> bytes:
    return wire.key_values(PROPERTIES_TAG, [(k.encode(), v.encode()) for k, v in properties.items()])


# -------------------------------------------------------------------------------------------- golden bytes
def test_entry_golden_bytes() -> None:
    entry = encode_entry(b"hi", properties=pairs({"a": "b"}), partition_key=b"k", sequence_id=5)
    assert entry == bytes.fromhex(
        "0000000f"  # metadata size 15
        " 0a06 0a0161 120162"  # properties {a: b}
        " 12016b"  # partition_key "k"
        " 1802"  # payload_size 2
        " 4005"  # sequence_id 5
        " 6869"  # payload "hi"
    )


def test_metadata_golden_bytes() -> None:
    metadata = encode_message_metadata(
        producer_name_field("p"), 300, 1, compression=COMPRESSION_TYPES["LZ4"], uncompressed_size=10,
        num_messages_in_batch=2, highest_sequence_id=301,
    )
    assert metadata == bytes.fromhex(
        "0a0170"  # producer_name "p"
        " 10ac02"  # sequence_id 300 (two-byte varint)
        " 1801"  # publish_time 1
        " 4001"  # compression LZ4
        " 480a"  # uncompressed_size 10
        " 5802"  # num_messages_in_batch 2
        " c001ad02"  # highest_sequence_id 301 (field 24: two-byte tag)
    )


def test_ack_frame_golden_bytes() -> None:
    frame = individual_ack_frame(3, [(7, 9)])
    assert frame == bytes.fromhex("00000012 0000000e 080a 520a 0803 1000 1a04 0807 1009")


# ------------------------------------------------------------------------------- equal to protobuf output
ENTRY_CASES: list[dict[str, Any]] = [
    {},
    {"sequence_id": 0},
    {"sequence_id": 2**40, "event_time": 1_700_000_000_000},
    {"partition_key": "key", "ordering_key": b"\x00order", "partition_key_b64_encoded": True},
    {"properties": {"x": "1", "longer-name": "é" * 100}, "null_value": True, "sequence_id": 9},
]


@pytest.mark.parametrize("fields", ENTRY_CASES)
def test_entry_matches_protobuf(fields: dict[str, Any]) -> None:
    payload = b"payload" * 30
    ours = dict(fields)
    properties = ours.pop("properties", {})
    if "partition_key" in ours:
        ours["partition_key"] = ours["partition_key"].encode()
    assert encode_entry(payload, properties=pairs(properties), **ours) == reference_entry(payload, **fields)


METADATA_CASES: list[dict[str, Any]] = [
    {},
    {"partition_key": "k", "event_time": 5, "ordering_key": b"o", "deliver_at_time": 1_800_000_000_000},
    {"compression": pb.ZSTD, "uncompressed_size": 70000, "num_messages_in_batch": 1000,
     "highest_sequence_id": 1999},
    {"null_value": True, "partition_key_b64_encoded": True, "partition_key": "AAE="},
    {"uuid": "p-1-abc", "num_chunks_from_msg": 3, "total_chunk_msg_size": 12_000_000, "chunk_id": 2},
]


@pytest.mark.parametrize("fields", METADATA_CASES)
def test_metadata_matches_protobuf(fields: dict[str, Any]) -> None:
    reference = pb.MessageMetadata(producer_name="standalone-0-7", sequence_id=1000, publish_time=1_700_000_000_123,
                                   **fields)
    reference.properties.add(key="a", value="b")
    ours = dict(fields)
    if "partition_key" in ours:
        ours["partition_key"] = ours["partition_key"].encode()
    encoded = encode_message_metadata(
        producer_name_field("standalone-0-7"), 1000, 1_700_000_000_123,
        properties=wire.key_values(METADATA_PROPERTIES_TAG, [(b"a", b"b")]), **ours,
    )
    assert encoded == reference.SerializeToString()


def test_ack_frame_matches_protobuf() -> None:
    positions = [(0, 0), (12345, 2**33), (2**64 - 1, 2**64 - 1)]
    ids = [pb.MessageIdData(ledgerId=ledger, entryId=entry) for ledger, entry in positions]
    assert individual_ack_frame(2**40, positions) == encode_command(commands.ack(2**40, ids))
    assert individual_ack_frame(1, [(-1, -1)]) == individual_ack_frame(1, [(2**64 - 1, 2**64 - 1)])


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31, 2**63 - 1, 2**64 - 1, -1, -(2**31)])
def test_varint_matches_protobuf(value: int) -> None:
    message = pb.MessageIdData(ledgerId=0, entryId=0, partition=value) if -(2**31) <= value < 2**31 else None
    if message is not None:
        # int32 field 3: the varint follows the one-byte tag 0x18.
        assert message.SerializeToString().split(b"\x18", 1)[1] == wire.varint(value)
    decoded, end = wire.read_varint(wire.varint(value), 0, 10)
    assert decoded == value & (2**64 - 1) and end == len(wire.varint(value))


# -------------------------------------------------------------------------------------------- round trips
def test_batch_round_trip_all_fields() -> None:
    entries = [
        encode_entry(b"one", properties=pairs({"h": "v"}), partition_key=b"k1", sequence_id=10, event_time=77),
        encode_entry(b"", null_value=True, sequence_id=11),
        encode_entry(b"three" * 100, partition_key=b"AAE=", partition_key_b64_encoded=True, ordering_key=b"o"),
    ]
    decoded = decode_batch(encode_batch(entries), 3)
    assert decoded == [
        BatchEntry(b"one", {"h": b"v"}, "k1", False, None, 77, 10, False, False),
        BatchEntry(b"", {}, None, False, None, 0, 11, True, False),
        BatchEntry(b"three" * 100, {}, "AAE=", True, b"o", 0, None, False, False),
    ]


def test_decode_reads_what_protobuf_writes_including_unknown_fields() -> None:
    first = reference_entry(b"a", properties={"k" * 200: "v" * 300}, partition_key="pk", compacted_out=True,
                            null_partition_key=True, sequence_id=2**50)
    # An unknown field of every wire type, as a newer writer might add.
    extra = wire.tag(99, wire.VARINT) + wire.varint(5) + wire.tag(98, wire.LEN) + b"\x02zz"
    extra += wire.tag(97, 1) + b"\x00" * 8 + wire.tag(96, 5) + b"\x00" * 4
    metadata = pb.SingleMessageMetadata(payload_size=1, partition_key="x").SerializeToString() + extra
    second = _U32.pack(len(metadata)) + metadata + b"b"
    decoded = decode_batch(first + second, 2)
    assert decoded[0] == BatchEntry(b"a", {"k" * 200: b"v" * 300}, "pk", False, None, 0, 2**50, False, True)
    assert decoded[1] == BatchEntry(b"b", {}, "x")


@pytest.mark.parametrize("name", list(COMPRESSION_TYPES))
def test_compression_round_trip(name: str) -> None:
    compression = COMPRESSION_TYPES[name]
    data = encode_batch(encode_entry(f"message {i}".encode() * 20, sequence_id=i) for i in range(200))
    compressed = compress_payload(compression, data)
    if compression:
        assert len(compressed) < len(data) // 4
    assert decompress_payload(compression, memoryview(compressed), len(data), 1 << 20) == data
    assert len(decode_batch(data, 200)) == 200


def test_lz4_is_the_bare_block() -> None:
    import lz4.block

    data = b"abc" * 1000
    compressed = compress_payload(COMPRESSION_TYPES["LZ4"], data)
    assert lz4.block.decompress(compressed, uncompressed_size=len(data)) == data


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_corrupt_or_oversized_compressed_payload_is_a_protocol_error(name: str) -> None:
    compression = COMPRESSION_TYPES[name]
    data = b"z" * 10_000
    compressed = compress_payload(compression, data)
    with pytest.raises(ProtocolError):
        decompress_payload(compression, compressed[: len(compressed) // 2], len(data), 1 << 20)
    with pytest.raises(ProtocolError):
        decompress_payload(compression, compressed, len(data), 1000)
    with pytest.raises(ProtocolError):
        decompress_payload(compression, compressed, len(data) + 1, 1 << 20)


def test_unknown_compression_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decompress_payload(9, b"x", 1, 10)


# ----------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("payload", "count"),
    [
        (b"", 1),
        (b"\x00\x00\x00", 1),
        (b"\x00\x00\x00\x05\x18\x01", 1),  # metadata size beyond the data
        (b"\x00\x00\x00\x02\x18\x05" + b"abc", 1),  # payload shorter than payload_size
        (b"\x00\x00\x00\x02\x40\x01", 1),  # no payload_size
        (b"\x00\x00\x00\x01\x18", 1),  # truncated varint
        (b"\x00\x00\x00\x03\x12\x01\xff\x18\x00", 1),  # partition key not UTF-8 (and size off)
        (b"\x00\x00\x00\x05\x12\x01\xff\x18\x00", 1),  # partition key not UTF-8
        (b"\x00\x00\x00\x02\x1b\x00", 1),  # group wire type
        (encode_entry(b"x"), 2),  # fewer entries than announced
        (encode_entry(b"x"), -1),
    ],
)
def test_malformed_batches_raise_protocol_error(payload: bytes, count: int) -> None:
    with pytest.raises(ProtocolError):
        decode_batch(payload, count)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=5))
def test_arbitrary_bytes_give_entries_or_protocol_error(data: bytes, count: int) -> None:
    try:
        entries = decode_batch(data, count)
    except ProtocolError:
        return
    assert len(entries) == count


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.binary(max_size=200),
            st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=200), max_size=3),
            st.none() | st.text(max_size=150),
            st.none() | st.binary(max_size=150),
            st.integers(min_value=0, max_value=2**64 - 1),
            st.none() | st.integers(min_value=0, max_value=2**64 - 1),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_round_trip_property(items: list[tuple[bytes, dict[str, str], str | None, bytes | None, int, int | None,
                                               bool]]) -> None:
    encoded = [
        encode_entry(
            payload,
            properties=pairs(properties),
            partition_key=None if key is None else key.encode(),
            ordering_key=ordering,
            event_time=event_time,
            sequence_id=sequence,
            null_value=null,
        )
        for payload, properties, key, ordering, event_time, sequence, null in items
    ]
    decoded = decode_batch(encode_batch(encoded), len(items))
    for entry, (payload, properties, key, ordering, event_time, sequence, null) in zip(decoded, items, strict=True):
        assert entry.payload == payload
        assert entry.properties == {k: v.encode() for k, v in properties.items()}
        assert (entry.partition_key, entry.ordering_key, entry.event_time) == (key, ordering, event_time)
        assert (entry.sequence_id, entry.null_value) == (sequence, null)
