"""The registry's wire format, sans-IO: a magic byte 0, the schema id (4 bytes, big-endian), the payload.

Protobuf payloads carry, between the id and the message, the path of message indexes that names the message
type within its file: a count then each index, as zigzag varints; the common path ``[0]`` (the file's first
message) is the single byte 0.
"""

from __future__ import annotations

import struct

from mqwire.registry.errors import WireFormatError

__all__ = ["MAGIC", "decode_indexes", "encode_indexes", "frame", "unframe"]

MAGIC = 0
_HEADER = struct.Struct(">bI")
_MAX_INDEXES = 1024  # a path longer than this is garbage, not a nesting depth anyone writes


def frame(schema_id: int, payload: bytes) -> bytes:
    """``payload`` behind the magic byte and ``schema_id``."""
    return _HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, memoryview]:
    """The schema id and the rest of ``data``; raises WireFormatError for a short payload or a wrong magic byte."""
    if len(data) < _HEADER.size:
        raise WireFormatError(f"{len(data)} bytes is too short for the registry's wire format (5 bytes of header)")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireFormatError(f"magic byte {magic}, not {MAGIC}: not written by a registry serializer")
    return schema_id, memoryview(data)[_HEADER.size :]


def _zigzag_varint(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_zigzag_varint(data: memoryview, offset: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if offset >= len(data):
            raise WireFormatError("the message indexes end inside a varint")
        byte = data[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), offset
        shift += 7
        if shift > 63:
            raise WireFormatError("a message index varint is longer than 10 bytes")


def encode_indexes(indexes: list[int]) -> bytes:
    """The message-index path as written before a Protobuf payload."""
    if indexes == [0]:
        return b"\x00"
    return _zigzag_varint(len(indexes)) + b"".join(_zigzag_varint(i) for i in indexes)


def decode_indexes(data: memoryview) -> tuple[list[int], memoryview]:
    """The message-index path at the start of ``data`` and the Protobuf payload after it."""
    count, offset = _read_zigzag_varint(data, 0)
    if count == 0:
        return [0], data[offset:]
    if not 0 < count <= _MAX_INDEXES:
        raise WireFormatError(f"{count} message indexes is not a valid path")
    indexes = []
    for _ in range(count):
        index, offset = _read_zigzag_varint(data, offset)
        indexes.append(index)
    return indexes, data[offset:]
