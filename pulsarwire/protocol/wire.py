"""The Protocol Buffers wire format, for the few messages the hot paths write and read by hand.

A batch of a thousand messages needs a thousand SingleMessageMetadata entries; building and parsing
protobuf objects for each costs more than the varints themselves. Only what those messages use is here.
"""

from __future__ import annotations

from collections.abc import Iterable

from mqwire.common.errors import ProtocolError

# Wire types.
VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5

_SMALL = [bytes((value,)) for value in range(128)]
_UINT64 = (1 << 64) - 1
_INT64_MIN = -(1 << 63)


def varint(value: int) -> bytes:
    """An unsigned varint; a negative value is written as its 64-bit two's complement, as protobuf does.

    A value that fits in no 64-bit field raises OverflowError (as the compiled encoders do): it is never
    cut down to its low 64 bits."""
    if 0 <= value < 128:
        return _SMALL[value]
    if not _INT64_MIN <= value <= _UINT64:
        raise OverflowError(f"{value} does not fit in 64 bits")
    value &= _UINT64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def length_delimited(field_tag: bytes, data: bytes) -> bytes:
    """``field_tag`` (from :func:`tag`) followed by the length of ``data`` and ``data``."""
    return field_tag + varint(len(data)) + data


_KEY_TAG = tag(1, LEN)
_VALUE_TAG = tag(2, LEN)


def key_values(field_tag: bytes, pairs: Iterable[tuple[bytes, bytes]]) -> bytes:
    """Repeated ``KeyValue`` messages (UTF-8 key and value) under ``field_tag``."""
    parts: list[bytes] = []
    for key, value in pairs:
        body = _KEY_TAG + varint(len(key)) + key + _VALUE_TAG + varint(len(value)) + value
        parts.append(field_tag + varint(len(body)) + body)
    return b"".join(parts)


def read_varint(data: bytes | memoryview, position: int, end: int) -> tuple[int, int]:
    """The varint at ``position`` and the position after it; ProtocolError when it is cut or too long."""
    result = 0
    shift = 0
    while position < end:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift >= 70:
            raise ProtocolError("varint longer than ten bytes")
    raise ProtocolError("truncated varint")


def skip_field(data: bytes | memoryview, wire_type: int, position: int, end: int) -> int:
    """The position after an unknown field's value, so newer writers' fields are ignored, not refused."""
    if wire_type == VARINT:
        return read_varint(data, position, end)[1]
    if wire_type == LEN:
        length, position = read_varint(data, position, end)
        position += length
    elif wire_type == FIXED64:
        position += 8
    elif wire_type == FIXED32:
        position += 4
    else:
        raise ProtocolError(f"unsupported protobuf wire type {wire_type}")
    if position > end:
        raise ProtocolError("protobuf field runs past the end of its message")
    return position


def read_key_value(data: bytes, position: int, end: int) -> tuple[bytes, bytes]:
    """One ``KeyValue`` message between ``position`` and ``end``, as raw UTF-8 key and value bytes."""
    key = value = b""
    while position < end:
        field_tag, position = read_varint(data, position, end)
        field, wire_type = field_tag >> 3, field_tag & 7
        if wire_type == LEN and field in (1, 2):
            length, position = read_varint(data, position, end)
            stop = position + length
            if stop > end:
                raise ProtocolError("KeyValue field runs past the end of its message")
            if field == 1:
                key = data[position:stop]
            else:
                value = data[position:stop]
            position = stop
        else:
            position = skip_field(data, wire_type, position, end)
    return key, value
