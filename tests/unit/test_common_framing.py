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


def read_through(splitter: LengthPrefixedSplitter, stream: bytes, read_sizes: list[int]) -> list[bytearray]:
    """Deliver ``stream`` as a transport does: each read fills at most what get_buffer offers."""
    frames: list[bytearray] = []
    position, turn = 0, 0
    while position < len(stream):
        target = splitter.get_buffer(-1)
        assert len(target) > 0
        wanted = read_sizes[turn % len(read_sizes)] if read_sizes else len(target)
        turn += 1
        count = min(len(target), wanted, len(stream) - position)
        target[:count] = stream[position : position + count]
        position += count
        frames += splitter.buffer_updated(count)
    return frames


@given(
    st.lists(st.one_of(st.binary(max_size=40), st.binary(min_size=100, max_size=3000)), max_size=12),
    st.lists(st.integers(min_value=1, max_value=5000), max_size=8),
    st.integers(min_value=8, max_value=600),
)
def test_reads_into_buffers_give_the_frames(frames: list[bytes], reads: list[int], read_size: int) -> None:
    # Small read buffers force every path: frames split off whole, tails compacted, frames too large for the
    # read buffer filled in a buffer of their own.
    stream = b"".join(struct.pack(">I", len(f)) + f for f in frames)
    splitter = LengthPrefixedSplitter(1 << 20, read_size=read_size)
    assert read_through(splitter, stream, reads) == frames
    assert splitter.pending_bytes() == 0


def test_a_large_frame_is_read_in_place() -> None:
    body = bytes(range(256)) * 400  # 102,400 bytes, over the own-buffer threshold
    following = b"next"
    stream = struct.pack(">I", len(body)) + body + struct.pack(">I", len(following)) + following
    splitter = LengthPrefixedSplitter(1 << 20)
    first = splitter.get_buffer(-1)
    first[:1000] = stream[:1000]
    assert splitter.buffer_updated(1000) == []
    assert splitter.pending_bytes() == 1000
    rest = splitter.get_buffer(-1)
    # The read goes into the frame's own buffer and stops at its end; the next frame is not read with it.
    assert len(rest) == len(body) - 996
    rest[:] = stream[1000 : 4 + len(body)]
    (frame,) = splitter.buffer_updated(len(rest))
    assert frame == body
    assert frame is rest.obj  # the buffer read into is the frame handed on: no copy after the read
    assert splitter.pending_bytes() == 0
    assert read_through(splitter, stream[4 + len(body) :], []) == [following]


def test_oversize_length_in_a_read_raises_before_allocating() -> None:
    splitter = LengthPrefixedSplitter(1 << 16)
    target = splitter.get_buffer(-1)
    target[:8] = struct.pack(">I", (1 << 16) + 1) + b"abcd"
    with pytest.raises(FrameTooLargeError):
        splitter.buffer_updated(8)
    assert splitter.pending_bytes() == 0


def large_frames_stream(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">I", len(body)) + body for body in bodies)


def test_a_released_buffer_is_reused_for_the_next_large_frame() -> None:
    first, second = bytes(range(256)) * 100, bytes(reversed(range(256))) * 90
    splitter = LengthPrefixedSplitter(1 << 20, read_size=1024)
    (frame,) = read_through(splitter, large_frames_stream(first), [])
    assert frame == first
    identity = id(frame)
    del frame  # nothing but the splitter refers to it now
    (frame,) = read_through(splitter, large_frames_stream(second), [])
    assert frame == second
    assert id(frame) == identity


def test_a_buffer_still_referred_to_is_never_reused() -> None:
    first, second = bytes(range(256)) * 100, bytes(reversed(range(256))) * 100
    splitter = LengthPrefixedSplitter(1 << 20, read_size=1024)
    (kept,) = read_through(splitter, large_frames_stream(first), [])
    view = memoryview(kept)[10:20]
    del kept  # only a view of it is left
    (frame,) = read_through(splitter, large_frames_stream(second), [])
    assert frame == second
    assert view.obj is not frame
    assert view == first[10:20]


@given(
    st.lists(
        st.tuples(st.binary(min_size=100, max_size=3000), st.sampled_from(["drop", "keep", "view"])),
        max_size=12,
    ),
    st.lists(st.integers(min_value=1, max_value=5000), max_size=8),
    st.integers(min_value=8, max_value=600),
)
def test_reused_buffers_never_change_a_frame_still_held(
    plan: list[tuple[bytes, str]], reads: list[int], read_size: int
) -> None:
    # Frames too large for the small read buffer each get a buffer of their own; some are let go at once
    # (their buffers may be reused), some are kept whole or through a view, and must not change after.
    splitter = LengthPrefixedSplitter(1 << 20, read_size=read_size)
    held: list[tuple[bytes, bytearray | memoryview]] = []
    for body, fate in plan:
        stream = struct.pack(">I", len(body)) + body
        (frame,) = read_through(splitter, stream, reads)
        assert frame == body
        if fate == "keep":
            held.append((body, frame))
        elif fate == "view":
            held.append((body, memoryview(frame)))
        del frame
    for body, kept in held:
        assert bytes(kept) == body
