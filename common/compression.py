"""Compression codecs shared by the three protocols, every decompression bounded in size.

Codec names:
  ``gzip``          gzip members (Kafka).
  ``zlib``          zlib stream (Pulsar ZLIB).
  ``snappy``        raw snappy block (Pulsar). Decoding also accepts the framed form below.
  ``snappy-xerial`` snappy in the xerial stream framing that Kafka's Java client writes.
  ``lz4``           LZ4 frame format (Kafka).
  ``lz4-block``     a bare LZ4 block whose uncompressed size travels elsewhere (Pulsar).
  ``zstd``          a Zstandard frame.

``decompress`` never returns more than ``max_size`` bytes: a compressed bomb or a lying size raises
CompressionLimitError instead of exhausting memory. Output grows as it is decoded, in pieces that start
small, so a generous ``max_size`` costs nothing until data actually fills it; a declared size is checked
against ``max_size`` (and against what the codec can expand a payload of that length to) before anything is
reserved for it.
"""

from __future__ import annotations

import gzip as _gzip
import struct
import zlib
from collections.abc import Callable

import cramjam
import lz4.block
import lz4.frame
import zstandard

from mqwire.common.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

CODECS = ("gzip", "zlib", "snappy", "snappy-xerial", "lz4", "lz4-block", "zstd")

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

_zstd_compressor = zstandard.ZstdCompressor(level=3, write_content_size=True)
_zstd_decompressor = zstandard.ZstdDecompressor()


class CompressionError(ProtocolError):
    """Compressed data is corrupt, or expands beyond the allowed size."""


class CompressionLimitError(CompressionError):
    """Compressed data expands, or declares that it expands, beyond the allowed size."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


# Output is produced in pieces: the first small, each next one twice the last up to the largest.
_FIRST_PIECE = 64 * 1024
_LARGEST_PIECE = 4 * 1024 * 1024
# Compressed input is fed to zlib in pieces too: each leftover it copies out is at most one piece long.
_FIRST_INPUT_PIECE = 64
_LARGEST_INPUT_PIECE = 1024 * 1024
# The most a format can expand one compressed byte to: an LZ4 sequence's length bytes add 255 output bytes
# each; a snappy copy op of 3 bytes writes 64.
_LZ4_BLOCK_RATIO = 256
_SNAPPY_RATIO = 22


def compress(codec: str, data: Buffer, *, level: int | None = None) -> bytes:
    """Compress ``data`` with the named codec."""
    try:
        encoder = _ENCODERS[codec]
    except KeyError:
        raise ValueError(f"unknown compression codec {codec!r}; expected one of {CODECS}") from None
    return encoder(bytes(data), level)


def decompress(codec: str, data: Buffer, *, max_size: int, uncompressed_size: int | None = None) -> bytes:
    """Decompress ``data``; raise CompressionError when it is corrupt or would exceed ``max_size``.

    ``uncompressed_size`` is required for ``lz4-block`` and checked against the result otherwise.
    """
    try:
        decoder = _DECODERS[codec]
    except KeyError:
        raise ValueError(f"unknown compression codec {codec!r}; expected one of {CODECS}") from None
    if uncompressed_size is not None:
        if uncompressed_size < 0:
            raise CompressionError(f"declared uncompressed size {uncompressed_size} is negative")
        if uncompressed_size > max_size:
            raise CompressionLimitError(
                f"declared uncompressed size {uncompressed_size} exceeds the limit {max_size}", limit=max_size
            )
        # Never decode past the declared size: a payload that runs on is wrong whatever it holds.
        max_size = uncompressed_size
    try:
        result = decoder(data if isinstance(data, bytes) else bytes(data), max_size, uncompressed_size)
    except CompressionError:
        raise
    except Exception as exc:  # each codec library raises its own error types
        raise CompressionError(f"corrupt {codec} data: {exc}") from exc
    if uncompressed_size is not None and len(result) != uncompressed_size:
        raise CompressionError(f"{codec} data expanded to {len(result)} bytes, {uncompressed_size} declared")
    return result


def _too_large(codec: str, max_size: int) -> CompressionLimitError:
    return CompressionLimitError(f"{codec} data expands beyond the limit of {max_size} bytes", limit=max_size)


def _next_piece(piece: int, largest: int) -> int:
    return piece * 2 if piece < largest else largest


def _bounded_zlib(data: bytes, max_size: int, wbits: int, codec: str) -> bytes:
    out = bytearray()
    view = memoryview(data)
    position = 0
    end = len(data)
    # A gzip payload may hold several members; Kafka's Java client writes one, others may write more. The
    # input goes in growing pieces so that what zlib copies out at a member's end (``unused_data``) stays
    # in proportion to that member, never the rest of the payload: linear in the payload however many
    # members it holds.
    while position < end:
        decoder = zlib.decompressobj(wbits)
        piece = _FIRST_INPUT_PIECE
        while not decoder.eof:
            if position >= end:
                raise CompressionError(f"truncated {codec} data")
            chunk = view[position : position + piece]
            out += decoder.decompress(chunk, max_size - len(out) + 1)
            if len(out) > max_size or decoder.unconsumed_tail:
                raise _too_large(codec, max_size)
            position += len(chunk) - len(decoder.unused_data)
            piece = _next_piece(piece, _LARGEST_INPUT_PIECE)
        if wbits != 31:
            break
    return bytes(out)


def _snappy_raw_length(data: bytes) -> int:
    # The raw snappy block starts with the uncompressed length as an unsigned varint.
    result = shift = 0
    for index, byte in enumerate(data[:5]):
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result
        shift += 7
        if index == 4:
            break
    raise CompressionError("snappy block has no valid length preamble")


def _snappy_raw(data: bytes, max_size: int) -> bytes:
    declared = _snappy_raw_length(data)
    if declared > max_size:
        raise _too_large("snappy", max_size)
    if declared > _SNAPPY_RATIO * len(data):
        raise CompressionError(f"snappy block of {len(data)} bytes cannot expand to the {declared} it declares")
    return bytes(cramjam.snappy.decompress_raw(data))


def _snappy_xerial(data: bytes, max_size: int) -> bytes:
    if len(data) < _XERIAL_HEADER.size:
        raise CompressionError("truncated xerial snappy header")
    out = bytearray()
    position = _XERIAL_HEADER.size
    while position < len(data):
        if position + 4 > len(data):
            raise CompressionError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise CompressionError("xerial snappy block length exceeds the data")
        out += _snappy_raw(data[position : position + length], max_size - len(out))
        position += length
    return bytes(out)


def _decode_snappy(data: bytes, max_size: int, _size: int | None) -> bytes:
    if data.startswith(_XERIAL_MAGIC):
        return _snappy_xerial(data, max_size)
    return _snappy_raw(data, max_size)


def _encode_snappy_xerial(data: bytes, _level: int | None) -> bytes:
    parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _decode_lz4_frame(data: bytes, max_size: int, _size: int | None) -> bytes:
    decoder = lz4.frame.LZ4FrameDecompressor()
    out = bytearray()
    piece = _FIRST_PIECE
    pending: bytes = data
    while not decoder.eof:
        out += decoder.decompress(pending, max_length=min(piece, max_size - len(out) + 1))
        pending = b""
        if len(out) > max_size:
            raise _too_large("lz4", max_size)
        if decoder.needs_input and not decoder.eof:
            raise CompressionError("truncated lz4 frame")
        piece = _next_piece(piece, _LARGEST_PIECE)
    return bytes(out)


def _decode_lz4_block(data: bytes, max_size: int, size: int | None) -> bytes:
    if size is None:
        raise ValueError("lz4-block needs uncompressed_size")
    if size > _LZ4_BLOCK_RATIO * len(data) + 16:
        raise CompressionError(f"lz4 block of {len(data)} bytes cannot expand to the {size} it declares")
    return bytes(lz4.block.decompress(data, uncompressed_size=size))


def _decode_zstd(data: bytes, max_size: int, _size: int | None) -> bytes:
    reader = _zstd_decompressor.stream_reader(data, read_across_frames=True)
    out = bytearray()
    piece = _FIRST_PIECE
    while True:
        chunk = reader.read(min(piece, max_size - len(out) + 1))
        if not chunk:
            break
        out += chunk
        if len(out) > max_size:
            raise _too_large("zstd", max_size)
        piece = _next_piece(piece, _LARGEST_PIECE)
    return bytes(out)


_ENCODERS: dict[str, Callable[[bytes, int | None], bytes]] = {
    "gzip": lambda data, level: _gzip.compress(data, compresslevel=6 if level is None else level, mtime=0),
    "zlib": lambda data, level: zlib.compress(data, 6 if level is None else level),
    "snappy": lambda data, _level: bytes(cramjam.snappy.compress_raw(data)),
    "snappy-xerial": _encode_snappy_xerial,
    "lz4": lambda data, level: bytes(lz4.frame.compress(data, compression_level=level or 0)),
    "lz4-block": lambda data, level: bytes(lz4.block.compress(data, store_size=False)),
    "zstd": lambda data, level: (
        _zstd_compressor if level is None else zstandard.ZstdCompressor(level=level)
    ).compress(data),
}

_DECODERS: dict[str, Callable[[bytes, int, int | None], bytes]] = {
    "gzip": lambda data, max_size, _size: _bounded_zlib(data, max_size, 31, "gzip"),
    "zlib": lambda data, max_size, _size: _bounded_zlib(data, max_size, 15, "zlib"),
    "snappy": _decode_snappy,
    "snappy-xerial": _decode_snappy,
    "lz4": _decode_lz4_frame,
    "lz4-block": _decode_lz4_block,
    "zstd": _decode_zstd,
}
