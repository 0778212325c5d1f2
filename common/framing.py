"""Splitting a byte stream into frames.

A transport feeds whatever a read returned into a splitter and gets back the complete frames. Each
protocol supplies its splitter; the length-prefixed one here serves every protocol whose frames start
with a big-endian size field (Kafka, Pulsar). The claimed length is checked against the maximum before
anything is buffered for it.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from mqwire.common.errors import FrameTooLargeError, ProtocolError

FrameT = TypeVar("FrameT")


class FrameSplitter(Protocol[FrameT]):
    """Turns stream chunks into frames. Raises ProtocolError on malformed input."""

    def feed(self, data: bytes) -> list[FrameT]:
        """Consume one chunk as read from the socket; return every frame it completed, in order."""
        ...

    def pending_bytes(self) -> int:
        """Bytes held for an incomplete frame (non-zero at close means the peer closed mid-frame)."""
        ...


class LengthPrefixedSplitter:
    """Frames of ``uint32 size`` followed by ``size`` bytes; the frames returned exclude the prefix."""

    # The chunks of an incomplete frame are kept as they came and joined once the frame is whole: a large
    # frame (a 1 MB fetch response arrives in many reads) is copied twice, not once per read.
    __slots__ = ("_chunks", "_held", "_max_frame_size", "_min_frame_size", "_want")

    def __init__(self, max_frame_size: int, *, min_frame_size: int = 0) -> None:
        if max_frame_size <= 0:
            raise ValueError("max_frame_size must be positive")
        self._max_frame_size = max_frame_size
        self._min_frame_size = min_frame_size
        self._chunks: list[bytes] = []
        self._held = 0  # bytes in _chunks
        self._want = 0  # bytes _chunks must hold before the next frame (or its length) is complete

    @property
    def max_frame_size(self) -> int:
        """The largest frame accepted; a longer claimed length is a FrameTooLargeError."""
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        """The largest frame accepted; a longer claimed length is a FrameTooLargeError."""
        # Pulsar learns the broker's limit only after the handshake.
        if value <= 0:
            raise ValueError("max_frame_size must be positive")
        self._max_frame_size = value

    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return self._held

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the whole frames they complete, in order."""
        if type(data) is not bytes:
            data = bytes(data)
        chunks = self._chunks
        if chunks:
            chunks.append(data)
            self._held += len(data)
            if self._held < self._want:
                return []
            data = b"".join(chunks)
            chunks.clear()
            self._held = 0
        frames: list[bytes] = []
        start = 0
        end = len(data)
        want = 4
        while end - start >= 4:
            size = int.from_bytes(data[start : start + 4], "big")
            if size > self._max_frame_size:
                raise FrameTooLargeError(size, self._max_frame_size)
            if size < self._min_frame_size:
                raise ProtocolError(f"frame of {size} bytes is shorter than the minimum {self._min_frame_size}")
            if end - start - 4 < size:
                want = 4 + size
                break
            frames.append(data[start + 4 : start + 4 + size])
            start += 4 + size
        if start < end:
            rest = data[start:] if start else data
            chunks.append(rest)
            self._held = len(rest)
            self._want = want
        return frames
