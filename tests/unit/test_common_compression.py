"""Every codec round-trips, and no decompression exceeds its bound."""

from __future__ import annotations

import os
import tracemalloc
import zlib
from collections.abc import Callable

import pytest

from mqwire.common import compression
from mqwire.common.compression import CODECS, CompressionError, CompressionLimitError, compress, decompress

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


# ------------------------------------------------------------------ memory and work bounded by the output
def _peak_allocation(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_a_generous_limit_reserves_nothing(codec: str) -> None:
    # Five bytes of output under a 2 GiB limit: the review saw lz4 and zstd reserve the whole limit.
    packed = compress(codec, b"hello")
    peak = _peak_allocation(lambda: decompress(codec, packed, max_size=2**31 - 1))
    assert peak < 2 * 1024 * 1024


def test_an_lz4_block_declaring_more_than_it_can_expand_to_is_refused_before_allocating() -> None:
    # A bare LZ4 block of five literal bytes said to expand to 64 MiB.
    declared = 64 * 1024 * 1024

    def attempt() -> None:
        with pytest.raises(CompressionError):
            decompress("lz4-block", b"\x50hello", max_size=declared, uncompressed_size=declared)

    assert _peak_allocation(attempt) < 1024 * 1024


def test_a_declared_size_caps_the_output() -> None:
    # Decoding stops at the declared size instead of running on to the limit.
    packed = compress("zstd", b"x" * 100_000)
    with pytest.raises(CompressionLimitError):
        decompress("zstd", packed, max_size=10**9, uncompressed_size=10)


class _CountingZlib:
    """Stands in for the zlib module, counting the compressed bytes handed to every decompressor."""

    def __init__(self) -> None:
        self.fed = 0

    def decompressobj(self, wbits: int) -> object:
        real = zlib.decompressobj(wbits)
        counter = self

        class Counting:
            def decompress(self, data: bytes, max_length: int = 0) -> bytes:
                counter.fed += len(data)
                return real.decompress(data, max_length)

            def __getattr__(self, name: str) -> object:
                return getattr(real, name)

        return Counting()


def test_gzip_members_are_decoded_without_copying_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20,000 one-byte gzip members: handing each member's decoder the whole rest of the payload is
    # quadratic (about 4 GB of copying for these 420 KB).
    member = compress("gzip", b"x")
    packed = member * 20_000
    counting = _CountingZlib()
    monkeypatch.setattr(compression, "zlib", counting)
    assert decompress("gzip", packed, max_size=1_000_000) == b"x" * 20_000
    assert counting.fed <= 8 * len(packed)
