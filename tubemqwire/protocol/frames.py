"""TubeMQ frames: ``int32 0xFF7FF4FE, int32 serial, int32 listSize`` then listSize blocks of
``int32 length + bytes``.

The blocks are one byte stream cut at :data:`BLOCK_SIZE` bytes with no regard for what it contains, so a
message (even its length varint) may straddle two blocks; a frame's payload is the blocks joined.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mqwire.common.checksums import Buffer
from mqwire.common.errors import FrameTooLargeError, ProtocolError
from mqwire.common.framing import ChunkSplitter
from tubemqwire.protocol.constants import BLOCK_SIZE, MAX_FRAME_BYTES, MAX_LIST_SIZE, RPC_PROTOCOL_BEGIN_TOKEN

_HEADER = struct.Struct(">IIi")
_LENGTH = struct.Struct(">i")
HEADER_SIZE = _HEADER.size


@dataclass(frozen=True, slots=True)
class TubeFrame:
    """One frame: the serial number that pairs a response with its request, and the joined blocks."""

    serial: int
    payload: bytes


def encode_frame(serial: int, payload: Buffer) -> bytes:
    """A whole frame. ``serial`` is taken modulo 2**32 (the servers echo the 32 bits unchanged).

    An empty payload is sent as one empty block, as the Java client does: its decoder cannot read a
    frame of zero blocks.
    """
    view = memoryview(payload)
    count = max(1, -(-len(view) // BLOCK_SIZE))
    parts: list[Buffer] = [_HEADER.pack(RPC_PROTOCOL_BEGIN_TOKEN, serial & 0xFFFFFFFF, count)]
    for start in range(0, count * BLOCK_SIZE, BLOCK_SIZE):
        block = view[start : start + BLOCK_SIZE]
        parts.append(_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


class TubeFrameSplitter(ChunkSplitter[TubeFrame]):
    """Stream chunks in, :class:`TubeFrame` out (a ``common.framing.FrameSplitter``).

    The begin token, the list size and every block length are checked as soon as they arrive, before any
    byte is waited for on their account: a hostile or confused peer cannot make us hold more than
    ``max_frame_bytes`` of payload (plus framing) for one frame.
    """

    __slots__ = (
        "_blocks",
        "_buffer",
        "_frame_bytes",
        "_max_block_size",
        "_max_frame_bytes",
        "_max_list_size",
        "_payload_bytes",
        "_remaining",
        "_serial",
    )

    def __init__(
        self,
        *,
        max_list_size: int = MAX_LIST_SIZE,
        max_block_size: int = BLOCK_SIZE,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        if max_list_size <= 0 or max_block_size <= 0 or max_frame_bytes <= 0:
            raise ValueError("frame limits must be positive")
        super().__init__()
        self._max_list_size = max_list_size
        self._max_block_size = max_block_size
        self._max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._blocks: list[bytes] = []
        # Blocks still expected for the current frame; -1 while waiting for a frame header.
        self._remaining = -1
        self._serial = 0
        # Bytes of the current frame already taken out of the buffer (header, lengths, blocks) ...
        self._frame_bytes = 0
        # ... and of those, the block contents, which max_frame_bytes bounds.
        self._payload_bytes = 0

    def pending_bytes(self) -> int:
        return self._frame_bytes + len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[TubeFrame]:
        buffer = self._buffer
        buffer += data
        frames: list[TubeFrame] = []
        position = 0
        end = len(buffer)
        try:
            while True:
                if self._remaining < 0:
                    if end - position < HEADER_SIZE:
                        break
                    token, serial, count = _HEADER.unpack_from(buffer, position)
                    self._check_header(token, count)
                    position += HEADER_SIZE
                    self._serial = serial
                    self._remaining = count
                    self._frame_bytes = HEADER_SIZE
                    self._payload_bytes = 0
                if self._remaining == 0:
                    frames.append(TubeFrame(self._serial, b"".join(self._blocks)))
                    self._blocks = []
                    self._remaining = -1
                    self._frame_bytes = 0
                    self._payload_bytes = 0
                    continue
                if end - position < 4:
                    break
                (length,) = _LENGTH.unpack_from(buffer, position)
                self._check_block(length)
                if end - position - 4 < length:
                    break
                self._blocks.append(bytes(buffer[position + 4 : position + 4 + length]))
                position += 4 + length
                self._frame_bytes += 4 + length
                self._payload_bytes += length
                self._remaining -= 1
        except ProtocolError:
            self._reset()
            raise
        del buffer[:position]
        return frames

    def _check_header(self, token: int, count: int) -> None:
        if token != RPC_PROTOCOL_BEGIN_TOKEN:
            raise ProtocolError(f"TubeMQ frame starts with {token:#010x}, not the begin token 0xff7ff4fe")
        if count < 0 or count > self._max_list_size:
            raise ProtocolError(f"TubeMQ frame claims {count} blocks; at most {self._max_list_size} are allowed")

    def _check_block(self, length: int) -> None:
        if length < 0 or length > self._max_block_size:
            raise ProtocolError(f"TubeMQ block claims {length} bytes; blocks are at most {self._max_block_size}")
        claimed = self._payload_bytes + length
        if claimed > self._max_frame_bytes:
            raise FrameTooLargeError(claimed, self._max_frame_bytes)

    def _reset(self) -> None:
        # The connection is closed after a protocol error; drop everything rather than resynchronise.
        self._buffer.clear()
        self._blocks = []
        self._remaining = -1
        self._frame_bytes = 0
        self._payload_bytes = 0
