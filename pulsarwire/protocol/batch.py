"""Batch payloads and payload compression, without I/O.

A batch is one SEND frame whose payload holds several messages, each written as
``[uint32 size][SingleMessageMetadata][payload]``; the frame's MessageMetadata carries
``num_messages_in_batch``. When compression is on, the whole batch payload is compressed at once and the
metadata records the codec and the uncompressed size (which Pulsar's bare LZ4 block needs to decode).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import NamedTuple, cast

from mqwire.common import compression as codecs
from mqwire.common.errors import ProtocolError
from mqwire.common.speedups import load_speedups
from pulsarwire.protocol.wire import LEN, VARINT, read_key_value, read_varint, skip_field, tag, varint

# CompressionType values of the protocol, by the names the reference clients use.
COMPRESSION_TYPES = {"NONE": 0, "LZ4": 1, "ZLIB": 2, "ZSTD": 3, "SNAPPY": 4}
_CODECS = {1: "lz4-block", 2: "zlib", 3: "zstd", 4: "snappy"}

PROPERTIES_TAG = tag(1, LEN)
_PARTITION_KEY = tag(2, LEN)
_PAYLOAD_SIZE = tag(3, VARINT)
_EVENT_TIME = tag(5, VARINT)
_PARTITION_KEY_B64 = tag(6, VARINT)
_ORDERING_KEY = tag(7, LEN)
_SEQUENCE_ID = tag(8, VARINT)
_NULL_VALUE = tag(9, VARINT)
_TRUE = varint(1)

_U32 = struct.Struct(">I")


class BatchEntry(NamedTuple):
    """One message unpacked from a batch payload."""

    payload: bytes
    properties: dict[str, bytes]
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    sequence_id: int | None = None
    null_value: bool = False
    compacted_out: bool = False


# ----------------------------------------------------------------------------------------- compression
def compress_payload(compression: int, data: bytes) -> bytes:
    """``data`` compressed with the protocol's CompressionType ``compression`` (0 returns it as is)."""
    if not compression:
        return data
    codec = _CODECS.get(compression)
    if codec is None:
        raise ValueError(f"unknown Pulsar compression type {compression}")
    return codecs.compress(codec, data)


def decompress_payload(compression: int, data: bytes | memoryview, uncompressed_size: int, max_size: int) -> bytes:
    """The payload of a frame whose metadata names ``compression``; ProtocolError when it is corrupt."""
    if not compression:
        return bytes(data)
    codec = _CODECS.get(compression)
    if codec is None:
        raise ProtocolError(f"unknown Pulsar compression type {compression}")
    return codecs.decompress(codec, data, max_size=max_size, uncompressed_size=uncompressed_size)


# -------------------------------------------------------------------------------------------- encoding
def encode_entry(
    payload: bytes,
    *,
    properties: bytes = b"",
    partition_key: bytes | None = None,
    partition_key_b64_encoded: bool = False,
    ordering_key: bytes | None = None,
    event_time: int = 0,
    sequence_id: int | None = None,
    null_value: bool = False,
) -> bytes:
    """One message of a batch payload: size, SingleMessageMetadata, payload.

    ``properties`` are KeyValue entries already encoded under :data:`PROPERTIES_TAG`
    (``wire.key_values(PROPERTIES_TAG, pairs)``); ``partition_key`` is UTF-8.
    """
    if event_time < 0 or (sequence_id is not None and sequence_id < 0):
        # Unsigned fields: refused as the compiled encoder refuses them, not written as two's complement.
        raise OverflowError("can't convert negative int to unsigned")
    # Plain concatenation: cheaper than a list and a join for the three or four pieces of most entries.
    metadata = properties
    if partition_key is not None:
        metadata += _PARTITION_KEY + varint(len(partition_key)) + partition_key
    metadata += _PAYLOAD_SIZE + varint(len(payload))
    if event_time:
        metadata += _EVENT_TIME + varint(event_time)
    if partition_key_b64_encoded:
        metadata += _PARTITION_KEY_B64 + _TRUE
    if ordering_key is not None:
        metadata += _ORDERING_KEY + varint(len(ordering_key)) + ordering_key
    if sequence_id is not None:
        metadata += _SEQUENCE_ID + varint(sequence_id)
    if null_value:
        metadata += _NULL_VALUE + _TRUE
    return _U32.pack(len(metadata)) + metadata + payload


def encode_entry_fields(
    payload: bytes,
    properties: bytes,
    partition_key: bytes | None,
    partition_key_b64_encoded: bool,
    ordering_key: bytes | None,
    event_time: int,
    sequence_id: int | None,
    null_value: bool,
) -> bytes:
    """:func:`encode_entry` with positional arguments, for the producer's per-message path."""
    return encode_entry(
        payload,
        properties=properties,
        partition_key=partition_key,
        partition_key_b64_encoded=partition_key_b64_encoded,
        ordering_key=ordering_key,
        event_time=event_time,
        sequence_id=sequence_id,
        null_value=null_value,
    )


def encode_batch(entries: Iterable[bytes]) -> bytes:
    """A batch payload from entries made by :func:`encode_entry`."""
    return b"".join(entries)


# -------------------------------------------------------------------------------------------- decoding
def decode_batch(payload: bytes, count: int) -> list[BatchEntry]:
    """The ``count`` messages of a batch payload. Raises ProtocolError when the bytes do not hold them."""
    if _speedups is not None and type(payload) is bytes:
        entries = _speedups.decode_entries(payload, count)
        if entries is not None:
            return cast(list[BatchEntry], entries)
    return decode_batch_py(payload, count)


def decode_batch_py(payload: bytes, count: int) -> list[BatchEntry]:
    """The Python reference of :func:`decode_batch` (the compiled one hands it whatever is unusual)."""
    if count < 0:
        raise ProtocolError(f"negative batch size {count}")
    entries: list[BatchEntry] = []
    position = 0
    end = len(payload)
    append = entries.append
    try:
        for _ in range(count):
            if end - position < 4:
                raise ProtocolError(f"batch payload truncated after {len(entries)} of {count} messages")
            (size,) = _U32.unpack_from(payload, position)
            start = position + 4
            stop = start + size
            if stop > end:
                raise ProtocolError("SingleMessageMetadata runs past the end of the batch payload")
            entry, position = _decode_entry(payload, start, stop, end)
            append(entry)
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"batch message has a string field that is not UTF-8: {exc}") from None
    return entries


def _decode_entry(data: bytes, position: int, stop: int, end: int) -> tuple[BatchEntry, int]:
    # Tags of fields 1 to 15 fit one byte, so the common fields are told apart by that byte alone, and a
    # one-byte varint is read inline; anything else takes the general path.
    properties: dict[str, bytes] = {}
    partition_key: str | None = None
    b64 = compacted = null_value = False
    ordering_key: bytes | None = None
    event_time = 0
    sequence_id: int | None = None
    payload_size = -1
    while position < stop:
        field_tag = data[position]
        position += 1
        if field_tag in _VARINT_TAGS:
            value = data[position] if position < stop else 0x80
            if value < 0x80:
                position += 1
            else:
                value, position = read_varint(data, position, stop)
            if field_tag == 0x18:
                payload_size = value
            elif field_tag == 0x40:
                sequence_id = value
            elif field_tag == 0x28:
                event_time = value
            elif field_tag == 0x30:
                b64 = bool(value)
            elif field_tag == 0x48:
                null_value = bool(value)
            elif field_tag == 0x20:
                compacted = bool(value)
        elif field_tag in _BYTES_TAGS:
            length = data[position] if position < stop else 0x80
            if length < 0x80:
                position += 1
            else:
                length, position = read_varint(data, position, stop)
            value_end = position + length
            if value_end > stop:
                raise ProtocolError("SingleMessageMetadata field runs past the end of its message")
            if field_tag == 0x0A:
                # KeyValue as every writer lays it out, short key and value: 0a len key 12 len value.
                key_end = position + 2 + data[position + 1] if length >= 4 else 0
                if (
                    data[position] == 0x0A
                    and data[position + 1] < 0x80
                    and key_end + 2 <= value_end
                    and data[key_end] == 0x12
                    and key_end + 2 + data[key_end + 1] == value_end
                ):
                    properties[data[position + 2 : key_end].decode()] = data[key_end + 2 : value_end]
                else:
                    key, value_bytes = read_key_value(data, position, value_end)
                    properties[key.decode()] = value_bytes
            elif field_tag == 0x12:
                partition_key = data[position:value_end].decode()
            else:
                ordering_key = data[position:value_end]
            position = value_end
        else:
            if field_tag >= 0x80:
                field_tag, position = read_varint(data, position - 1, stop)
            position = skip_field(data, field_tag & 7, position, stop)
    if payload_size < 0:
        raise ProtocolError("SingleMessageMetadata lacks payload_size")
    if payload_size >= 1 << 31:
        raise ProtocolError(f"SingleMessageMetadata payload_size {payload_size} is out of range")
    payload_end = stop + payload_size
    if payload_end > end:
        raise ProtocolError("batch message payload runs past the end of the batch payload")
    entry = BatchEntry(
        data[stop:payload_end], properties, partition_key, b64, ordering_key, event_time, sequence_id, null_value,
        compacted,
    )
    return entry, payload_end


# One-byte tags of the SingleMessageMetadata fields read above.
_VARINT_TAGS = frozenset((0x18, 0x20, 0x28, 0x30, 0x40, 0x48))
_BYTES_TAGS = frozenset((0x0A, 0x12, 0x3A))


# The compiled loops (built with the package when a C compiler is present); MQWIRE_PURE_PYTHON=1 turns
# them off. They write the same bytes and read the same entries as the Python code above.
_speedups = load_speedups("pulsarwire.protocol._batch_speedups")
COMPILED = _speedups is not None
encode_entry_fast: Callable[[bytes, bytes, bytes | None, bool, bytes | None, int, int | None, bool], bytes] = (
    _speedups.encode_entry if _speedups is not None else encode_entry_fields
)
