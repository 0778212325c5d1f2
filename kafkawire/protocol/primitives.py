"""Kafka's primitive wire encodings: big-endian fixed-width numbers and the two varint families.

Decoders take a buffer and an offset and return ``(value, new_offset)``. A decoder that runs past the end
raises ``struct.error`` or ``IndexError``; the message decoder turns those into ProtocolError in one place
instead of checking before every fixed-width read. Lengths are different: a claimed length is compared with
the bytes that remain before anything is sliced or allocated for it.
"""

from __future__ import annotations

import struct

from mqwire.common.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

BOOL = struct.Struct(">?")
INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

# Exceptions a decoder may raise on malformed input; decode entry points map them to ProtocolError.
DECODE_ERRORS = (struct.error, IndexError, ValueError, OverflowError)

# Varints of one byte are by far the most common (lengths, counts, empty tag buffers).
_SMALL = tuple(bytes((n,)) for n in range(128))


def uvarint(value: int) -> bytes:
    """Unsigned varint: 7 bits per byte, least significant group first, high bit set on all but the last."""
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """Signed 32-bit varint with zig-zag encoding (0, -1, 1, -2 ... become 0, 1, 2, 3 ...)."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise ValueError(f"varint cannot hold {value}")
    return uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    """Signed 64-bit varint with zig-zag encoding."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"varlong cannot hold {value}")
    return uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def zigzag(value: int) -> bytes:
    """Zig-zag varint of a value the caller knows to fit in 64 bits (the same bytes as ``varint`` for 32-bit
    values); no range check, for the record hot path."""
    raw = (value << 1) ^ (value >> 63)
    if raw < 0x80:
        return _SMALL[raw]
    return uvarint(raw & 0xFFFFFFFFFFFFFFFF)


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    for index in range(pos, pos + max_bytes):
        byte = buf[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    raise ProtocolError(f"varint longer than {max_bytes} bytes at offset {pos}")


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes, as Kafka's readUnsignedVarint accepts."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    return _read_unsigned(buf, pos, 5)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    second = buf[pos + 1]
    if second < 0x80:  # two bytes: record lengths, value sizes and offset deltas up to 8191
        raw = (byte & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _read_unsigned(buf, pos, 5)
    if raw > 0xFFFFFFFF:
        raise ProtocolError("varint exceeds 32 bits")
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zig-zag signed 64-bit varint."""
    raw, pos = _read_unsigned(buf, pos, 10)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise ProtocolError("varlong exceeds 64 bits")
    return (raw >> 1) ^ -(raw & 1), pos


def truncated(what: str, claimed: int, remaining: int) -> ProtocolError:
    """The error for a length that claims more bytes than the buffer holds."""
    return ProtocolError(f"{what} claims {claimed} bytes but only {remaining} remain")


def read_slice(buf: memoryview, pos: int, length: int, what: str) -> tuple[memoryview, int]:
    """``length`` bytes from ``pos`` without copying; the length is checked before slicing."""
    end = pos + length
    if length < 0 or end > len(buf):
        raise truncated(what, length, len(buf) - pos)
    return buf[pos:end], end


def skip_tags(buf: Buffer, pos: int) -> int:
    """Skip a tag buffer whose fields this code does not read (header tags are all optional)."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise truncated("tagged field", size, len(buf) - pos)
        pos += size
    return pos
