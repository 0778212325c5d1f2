"""Checksums used on the wire: CRC-32C (Kafka record batches, Pulsar frames) and CRC-32 (TubeMQ)."""

from __future__ import annotations

import zlib

import crc32c as _crc32c

Buffer = bytes | bytearray | memoryview


def crc32c(data: Buffer, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value``; hardware accelerated when available."""
    return int(_crc32c.crc32c(data, value))


def crc32(data: Buffer, value: int = 0) -> int:
    """CRC-32 (IEEE, as zlib and java.util.zip.CRC32 compute it)."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
