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

    __slots__ = ("_buffer", "_max_frame_size", "_min_frame_size")

    def __init__(self, max_frame_size: int, *, min_frame_size: int = 0) -> None:
        if max_frame_size <= 0:
            raise ValueError("max_frame_size must be positive")
        self._max_frame_size = max_frame_size
        self._min_frame_size = min_frame_size
        self._buffer = bytearray()

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
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the whole frames they complete, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        start = 0
        end = len(buffer)
        while end - start >= 4:
            size = int.from_bytes(buffer[start : start + 4], "big")
            if size > self._max_frame_size:
                del buffer[:]
                raise FrameTooLargeError(size, self._max_frame_size)
            if size < self._min_frame_size:
                del buffer[:]
                raise ProtocolError(f"frame of {size} bytes is shorter than the minimum {self._min_frame_size}")
            if end - start - 4 < size:
                break
            frames.append(bytes(buffer[start + 4 : start + 4 + size]))
            start += 4 + size
        if start:
            del buffer[:start]
        return frames
