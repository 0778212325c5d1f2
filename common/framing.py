"""Splitting a byte stream into frames.

A transport asks its splitter where the next read should land (``get_buffer``), reads into it, and gets
back the frames that read completed (``buffer_updated``): the bytes go from the kernel into the splitter's
memory with no copy in between. Each protocol supplies its splitter; the length-prefixed one here serves
every protocol whose frames start with a big-endian size field (Kafka, Pulsar). A splitter that parses
chunks as they come (TubeMQ's) derives from ``ChunkSplitter`` and implements ``feed`` alone. The claimed
length is checked against the maximum before anything is allocated for it.
"""

from __future__ import annotations

import struct
import sys
from typing import Generic, Protocol, TypeVar

from mqwire.common.errors import FrameTooLargeError, ProtocolError

FrameT = TypeVar("FrameT")

_SIZE = struct.Struct(">I")
# Room for what one read brings; a frame that does not fit (or is large) gets a buffer of its own.
DEFAULT_READ_SIZE = 256 * 1024
# An incomplete frame at least this large is read straight into a buffer of its own instead of through the
# read buffer: one copy fewer for the fetch responses and message batches that make up the bulk of a read.
_OWN_BUFFER_AT = 16 * 1024
# The last own buffer is kept for the next large frame when nothing else refers to it any more, up to this
# size: a fresh buffer of this size costs page faults on every read into it (the allocator gives such blocks
# back to the system when they are freed), and that was a third of a 10 KB Pulsar consumer's CPU.
_KEEP_SPARE_UP_TO = 8 * 1024 * 1024
# CPython's reference count tells when nothing but the splitter holds a buffer; elsewhere none is reused.
_refcount = getattr(sys, "getrefcount", None)


class FrameSplitter(Protocol[FrameT]):
    """Turns a byte stream into frames. Raises ProtocolError on malformed input."""

    def get_buffer(self, sizehint: int) -> memoryview:
        """Where the next read should put its bytes (never empty)."""
        ...

    def buffer_updated(self, nbytes: int) -> list[FrameT]:
        """``nbytes`` were read into the last buffer; return every frame they completed, in order."""
        ...

    def feed(self, data: bytes | bytearray | memoryview) -> list[FrameT]:
        """Take a chunk read elsewhere (tests, fake servers); return every frame it completed, in order."""
        ...

    def pending_bytes(self) -> int:
        """Bytes held for an incomplete frame (non-zero at close means the peer closed mid-frame)."""
        ...


class ChunkSplitter(Generic[FrameT]):
    """Base of a splitter that parses chunks as they come: each read lands in a read buffer of its own and is
    handed to ``feed``, which must take what it needs before returning. Subclasses implement ``feed`` and
    ``pending_bytes``."""

    __slots__ = ("_read_view",)

    def __init__(self, read_size: int = DEFAULT_READ_SIZE) -> None:
        self._read_view = memoryview(bytearray(read_size))

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """The read buffer."""
        return self._read_view

    def buffer_updated(self, nbytes: int) -> list[FrameT]:
        """Feed the ``nbytes`` just read."""
        return self.feed(self._read_view[:nbytes])

    def feed(self, data: bytes | bytearray | memoryview) -> list[FrameT]:
        """Take a chunk; return every frame it completed, in order."""
        raise NotImplementedError

    def pending_bytes(self) -> int:
        """Bytes held for an incomplete frame."""
        raise NotImplementedError


class LengthPrefixedSplitter:
    """Frames of ``uint32 size`` followed by ``size`` bytes; the frames returned exclude the prefix.

    Reads land in a read buffer, from which whole small frames are copied out. A larger frame still incomplete
    at the end of a read gets a buffer of exactly its size, and the reads after it go straight into that
    buffer, which becomes the frame: its bytes are copied once, by the kernel.
    """

    __slots__ = (
        "_end",
        "_filled",
        "_frame",
        "_frame_view",
        "_max_frame_size",
        "_min_frame_size",
        "_read",
        "_read_view",
        "_spare",
        "_start",
    )

    def __init__(self, max_frame_size: int, *, min_frame_size: int = 0, read_size: int = DEFAULT_READ_SIZE) -> None:
        if max_frame_size <= 0:
            raise ValueError("max_frame_size must be positive")
        if read_size < 8:
            raise ValueError("read_size must be at least 8")
        self._max_frame_size = max_frame_size
        self._min_frame_size = min_frame_size
        self._read = bytearray(read_size)
        self._read_view = memoryview(self._read)
        self._start = 0  # the first byte of _read not yet split off
        self._end = 0  # the end of the bytes read into _read
        self._frame: bytearray | None = None  # the frame being read into a buffer of its own ...
        self._frame_view: memoryview | None = None
        self._filled = 0  # ... and how much of it has arrived
        self._spare: bytearray | None = None  # the last own buffer handed on, to reuse once released

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
        if self._frame is not None:
            return 4 + self._filled
        return self._end - self._start

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next read goes: the rest of the frame being filled, else the read buffer's free space."""
        if self._frame_view is not None:
            # Never past the frame's end: the next frame's bytes belong in the read buffer.
            return self._frame_view[self._filled :]
        if self._end == len(self._read):
            self._compact()
        return self._read_view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """``nbytes`` were read into the last buffer; return the frames now whole."""
        frame = self._frame
        if frame is not None:
            self._filled += nbytes
            if self._filled < len(frame):
                return []
            self._frame = None
            self._frame_view = None
            self._spare = frame if len(frame) <= _KEEP_SPARE_UP_TO else None
            return [frame]
        self._end += nbytes
        return self._split()

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """Take bytes read elsewhere; return the whole frames they complete, in order."""
        frames: list[bytearray] = []
        source = memoryview(data)
        taken = 0
        while taken < len(source):
            target = self.get_buffer()
            count = min(len(target), len(source) - taken)
            target[:count] = source[taken : taken + count]
            taken += count
            frames += self.buffer_updated(count)
        return frames

    def _split(self) -> list[bytearray]:
        """Copy the whole frames out of the read buffer; start an own buffer for a large incomplete one."""
        data = self._read
        start = self._start
        end = self._end
        frames: list[bytearray] = []
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(data, start)
            self._check(size)
            body = start + 4
            if end - body >= size:
                frames.append(data[body : body + size])
                start = body + size
                continue
            if size >= _OWN_BUFFER_AT or body + size > len(data):
                # The size was checked above, so this allocation is bounded by max_frame_size.
                frame = self._own_buffer(size)
                arrived = end - body
                frame[:arrived] = self._read_view[body:end]
                self._frame = frame
                self._frame_view = memoryview(frame)
                self._filled = arrived
                start = end
            break
        if start == end:
            start = end = 0
        self._start = start
        self._end = end
        return frames

    def _own_buffer(self, size: int) -> bytearray:
        """A buffer of exactly ``size`` bytes for a frame: the spare when only this splitter still refers to it
        and resizing it keeps its memory (at least half of it is used), else a new one."""
        spare = self._spare
        # Three references: the attribute, the local name and the call's argument.
        if spare is None or _refcount is None or _refcount(spare) > 3 or size < len(spare) // 2:
            return bytearray(size)
        if size < len(spare):
            del spare[size:]
        elif size > len(spare):
            spare.extend(bytes(size - len(spare)))
        return spare

    def _check(self, size: int) -> None:
        if size > self._max_frame_size:
            self._start = self._end = 0
            raise FrameTooLargeError(size, self._max_frame_size)
        if size < self._min_frame_size:
            self._start = self._end = 0
            raise ProtocolError(f"frame of {size} bytes is shorter than the minimum {self._min_frame_size}")

    def _compact(self) -> None:
        """Move the incomplete tail of the read buffer to its front."""
        held = self._end - self._start
        self._read[:held] = self._read[self._start : self._end]
        self._start = 0
        self._end = held
