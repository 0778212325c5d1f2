"""Every codec round-trips, and no decompression exceeds its bound."""

from __future__ import annotations

import os

import pytest

from mqwire.common.compression import CODECS, CompressionError, compress, decompress

DATA = b"mqwire " * 5000 + os.urandom(1000)


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec: str) -> None:
    packed = compress(codec, DATA)
    assert decompress(codec, packed, max_size=len(DATA), uncompressed_size=len(DATA)) == DATA
    if codec != "lz4-block":
        assert decompress(codec, packed, max_size=len(DATA)) == DATA


@pytest.mark.parametrize("codec", CODECS)
def test_bomb_is_refused(codec: str) -> None:
    packed = compress(codec, b"\0" * 1_000_000)
    with pytest.raises(CompressionError):
        decompress(codec, packed, max_size=10_000, uncompressed_size=None if codec != "lz4-block" else 1_000_000)


@pytest.mark.parametrize("codec", CODECS)
def test_corrupt_input_is_a_protocol_error(codec: str) -> None:
    with pytest.raises(CompressionError):
        decompress(
            codec,
            b"\x82SNAPPY\x00garbage" if "snappy" in codec else b"garbage!",
            max_size=1000,
            uncompressed_size=100 if codec == "lz4-block" else None,
        )


def test_snappy_decodes_both_framings() -> None:
    framed = compress("snappy-xerial", DATA)
    raw = compress("snappy", DATA)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert decompress("snappy", framed, max_size=len(DATA)) == DATA
    assert decompress("snappy", raw, max_size=len(DATA)) == DATA


def test_gzip_with_several_members() -> None:
    packed = compress("gzip", b"abc") + compress("gzip", b"def")
    assert decompress("gzip", packed, max_size=10) == b"abcdef"


def test_unknown_codec() -> None:
    with pytest.raises(ValueError):
        compress("brotli", b"x")
