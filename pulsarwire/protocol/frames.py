"""Pulsar frames: bytes to typed frames and back.

A frame on the wire is ``[uint32 totalSize][uint32 commandSize][BaseCommand]``; SEND and MESSAGE frames go
on with ``[0x0e01][uint32 crc32c][uint32 metadataSize][MessageMetadata][payload]``, where the CRC-32C covers
everything from ``metadataSize`` to the end. A broker may put ``[0x0e02][uint32 size][BrokerEntryMetadata]``
in front of the ``0x0e01`` magic. The decoder here takes a frame without its ``totalSize``, as
:class:`common.framing.LengthPrefixedSplitter` hands it out, and raises nothing but ``ProtocolError``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError

from mqwire.common.checksums import Buffer, crc32c
from mqwire.common.errors import ChecksumError, ProtocolError
from mqwire.common.framing import LengthPrefixedSplitter
from mqwire.common.protobuf import invalid_string_field
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, BrokerEntryMetadata, MessageMetadata

MAGIC_CHECKSUM = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02

# Pulsar's default maximum message size.
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
# Room for command and metadata on top of the message size, as the reference clients allow.
FRAME_SIZE_PADDING = 10 * 1024

_M = TypeVar("_M", BaseCommand, MessageMetadata, BrokerEntryMetadata)

_U32 = struct.Struct(">I")
_TWO_U32 = struct.Struct(">II")
_MAGIC = struct.Struct(">H")
_CHECKSUM_PLACE = bytes(4)


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame. ``payload`` is a view into the received bytes (no copy) and is empty, not None,
    for a payload frame without data; simple commands have neither metadata nor payload."""

    command: BaseCommand
    metadata: MessageMetadata | None = None
    payload: memoryview | None = None
    broker_entry_metadata: BrokerEntryMetadata | None = None
    # A MESSAGE whose metadata and payload fail the CRC-32C: neither is given, the consumer rejects it.
    checksum_mismatch: bool = False


# ------------------------------------------------------------------------------------------------ encode
def encode_command(command: BaseCommand) -> bytes:
    """A simple command frame, ``totalSize`` included."""
    body = command.SerializeToString()
    return _TWO_U32.pack(len(body) + 4, len(body)) + body


def encode_payload_frame(command: BaseCommand, metadata: MessageMetadata, payload: Buffer) -> bytearray:
    """A SEND (or MESSAGE) frame with metadata, payload and checksum, ``totalSize`` included."""
    return encode_payload_frame_raw(command.SerializeToString(), metadata.SerializeToString(), payload)


def encode_payload_frame_raw(
    command: bytes,
    metadata: bytes,
    payload: Buffer,
    *,
    broker_entry_metadata: bytes | None = None,
) -> bytearray:
    """A payload frame from already serialized command and metadata.

    The batching path builds the metadata bytes once per batch and calls this without protobuf objects.
    ``broker_entry_metadata`` is what a broker inserts before the checksum magic; clients never send it.
    """
    return encode_payload_frame_pieces(command, metadata, (payload,), broker_entry_metadata=broker_entry_metadata)


def encode_payload_frame_pieces(
    command: bytes,
    metadata: bytes,
    pieces: Sequence[Buffer],
    *,
    broker_entry_metadata: bytes | None = None,
) -> bytearray:
    """A payload frame whose payload is ``pieces`` one after the other: a plain batch's entries go into the
    frame with one copy, not joined first. The checksum is computed over the frame itself and written in."""
    entry = b""
    if broker_entry_metadata is not None:
        entry = _MAGIC.pack(MAGIC_BROKER_ENTRY_METADATA) + _U32.pack(len(broker_entry_metadata)) + broker_entry_metadata
    frame = bytearray().join(
        (
            _TWO_U32.pack(0, len(command)),
            command,
            entry,
            _MAGIC.pack(MAGIC_CHECKSUM),
            _CHECKSUM_PLACE,
            _U32.pack(len(metadata)),
            metadata,
            *pieces,
        )
    )
    _U32.pack_into(frame, 0, len(frame) - 4)
    checksum_at = 8 + len(command) + len(entry) + 2
    with memoryview(frame) as view:
        _U32.pack_into(frame, checksum_at, crc32c(view[checksum_at + 4 :]))
    return frame


# ------------------------------------------------------------------------------------------------ decode
def decode_frame(frame: Buffer, *, require_checksum: bool = True) -> Frame:
    """Decode one frame (without its ``totalSize``). Raises ProtocolError, ChecksumError on bad data.

    With ``require_checksum=False`` a payload section lacking the ``0x0e01`` magic is accepted, as entries
    written by producers older than protocol version 6 still are.
    """
    view = memoryview(frame)
    try:
        return _decode(view, require_checksum)
    except ProtocolError:
        raise
    except Exception as exc:
        # Every check above should catch bad bytes first; whatever slips through is still the peer's fault.
        raise ProtocolError(f"malformed Pulsar frame: {exc!r}") from exc


def _decode(view: memoryview, require_checksum: bool) -> Frame:
    size = len(view)
    if size < 4:
        raise ProtocolError(f"Pulsar frame of {size} bytes cannot hold its command size")
    (command_size,) = _U32.unpack_from(view, 0)
    if command_size > size - 4:
        raise ProtocolError(f"command size {command_size} exceeds the {size - 4} bytes left in the frame")
    command = _parse(BaseCommand, view[4 : 4 + command_size], "BaseCommand")
    offset = 4 + command_size
    if offset == size:
        return Frame(command)

    entry_metadata: BrokerEntryMetadata | None = None
    magic = _read_magic(view, offset)
    if magic == MAGIC_BROKER_ENTRY_METADATA:
        entry_size = _read_u32(view, offset + 2, "broker entry metadata size")
        start = offset + 6
        if entry_size > size - start:
            raise ProtocolError(f"broker entry metadata size {entry_size} exceeds the {size - start} bytes left")
        entry_metadata = _parse(BrokerEntryMetadata, view[start : start + entry_size], "BrokerEntryMetadata")
        offset = start + entry_size
        magic = _read_magic(view, offset)

    if magic == MAGIC_CHECKSUM:
        expected = _read_u32(view, offset + 2, "checksum")
        offset += 6
        actual = crc32c(view[offset:])
        if actual != expected:
            if command.type == BaseCommand.MESSAGE:
                # One corrupt message; the protocol has the consumer acknowledge it as such and go on.
                return Frame(command, broker_entry_metadata=entry_metadata, checksum_mismatch=True)
            raise ChecksumError(f"Pulsar frame checksum {actual:#010x} does not match {expected:#010x}")
    elif require_checksum:
        raise ProtocolError(f"payload section starts with {magic:#06x}, not the checksum magic 0x0e01")

    metadata_size = _read_u32(view, offset, "metadata size")
    start = offset + 4
    if metadata_size > size - start:
        raise ProtocolError(f"metadata size {metadata_size} exceeds the {size - start} bytes left in the frame")
    metadata = _parse(MessageMetadata, view[start : start + metadata_size], "MessageMetadata")
    return Frame(command, metadata, view[start + metadata_size :], entry_metadata)


def _read_magic(view: memoryview, offset: int) -> int:
    if len(view) - offset < 2:
        raise ProtocolError("payload section truncated before its magic number")
    (magic,) = _MAGIC.unpack_from(view, offset)
    return int(magic)


def _read_u32(view: memoryview, offset: int, what: str) -> int:
    if len(view) - offset < 4:
        raise ProtocolError(f"frame truncated inside the {what}")
    (value,) = _U32.unpack_from(view, offset)
    return int(value)


def _parse(cls: type[_M], data: memoryview, what: str) -> _M:
    message = cls()
    try:
        message.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise ProtocolError(f"malformed {what}: {exc}") from exc
    # The parser accepts messages lacking required fields; the broker never sends such a thing.
    if not message.IsInitialized():
        missing = ", ".join(message.FindInitializationErrors())  # type: ignore[attr-defined]
        raise ProtocolError(f"{what} lacks required fields: {missing}")
    bad = invalid_string_field(message)
    if bad is not None:
        raise ProtocolError(f"{what} field {bad} is not UTF-8")
    return message


# ---------------------------------------------------------------------------------------------- splitting
class PulsarFrameSplitter:
    """Stream chunks in, decoded :class:`Frame` objects out (a ``common.framing.FrameSplitter``).

    ``max_frame_size`` bounds ``totalSize`` before anything is buffered for it: the client's own limit (plus
    :data:`FRAME_SIZE_PADDING`), which the broker's ``max_message_size`` in CONNECTED may only lower.
    """

    __slots__ = ("_require_checksum", "_splitter")

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_MESSAGE_SIZE + FRAME_SIZE_PADDING, *, require_checksum: bool = True
    ) -> None:
        # Four bytes of commandSize is the least a frame can hold.
        self._splitter = LengthPrefixedSplitter(max_frame_size, min_frame_size=4)
        self._require_checksum = require_checksum

    @property
    def max_frame_size(self) -> int:
        return self._splitter.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        self._splitter.max_frame_size = value

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next read goes (see ``LengthPrefixedSplitter.get_buffer``)."""
        return self._splitter.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> list[Frame]:
        """``nbytes`` were read into the last buffer; return the frames now whole, decoded."""
        frames = self._splitter.buffer_updated(nbytes)
        return [decode_frame(raw, require_checksum=self._require_checksum) for raw in frames]

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Take bytes read elsewhere (tests, fake servers); return the frames they complete, decoded."""
        return [decode_frame(raw, require_checksum=self._require_checksum) for raw in self._splitter.feed(data)]

    def pending_bytes(self) -> int:
        return self._splitter.pending_bytes()
