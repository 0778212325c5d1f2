"""The length-prefixed splitter against reads cut at every possible place."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqwire.common.errors import FrameTooLargeError, ProtocolError
from mqwire.common.framing import LengthPrefixedSplitter

FRAMES = [b"", b"a", b"hello world", bytes(range(256)) * 3]
STREAM = b"".join(struct.pack(">I", len(f)) + f for f in FRAMES)


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_every_single_cut(cut: int) -> None:
    splitter = LengthPrefixedSplitter(4096)
    frames = splitter.feed(STREAM[:cut]) + splitter.feed(STREAM[cut:])
    assert frames == FRAMES
    assert splitter.pending_bytes() == 0


def test_one_byte_at_a_time() -> None:
    splitter = LengthPrefixedSplitter(4096)
    frames = []
    for index in range(len(STREAM)):
        frames += splitter.feed(STREAM[index : index + 1])
    assert frames == FRAMES


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=30))
def test_arbitrary_cuts(cuts: list[int]) -> None:
    points = [*sorted(set(cuts)), len(STREAM)]
    splitter = LengthPrefixedSplitter(4096)
    frames, start = [], 0
    for point in points:
        frames += splitter.feed(STREAM[start:point])
        start = point
    assert frames == FRAMES


def test_oversize_length_raises_before_buffering() -> None:
    splitter = LengthPrefixedSplitter(1024)
    with pytest.raises(FrameTooLargeError) as info:
        splitter.feed(struct.pack(">I", 2**31 - 1) + b"x" * 10)
    assert info.value.claimed == 2**31 - 1
    assert splitter.pending_bytes() == 0


def test_minimum_frame_size() -> None:
    splitter = LengthPrefixedSplitter(1024, min_frame_size=4)
    with pytest.raises(ProtocolError):
        splitter.feed(struct.pack(">I", 2) + b"xx")


def test_partial_frame_is_pending() -> None:
    splitter = LengthPrefixedSplitter(1024)
    assert splitter.feed(struct.pack(">I", 10) + b"abc") == []
    assert splitter.pending_bytes() == 7
