"""Encoding what a partition producer sends, without I/O: SEND frames from a closed batch or from one message.

A message sent alone (batching off, a delayed or a transactional message) is compressed, encrypted when the
producer has encryption keys, and framed whole, or split into chunks when chunking is on and it is larger
than the chunk size. A batch from :mod:`pulsarwire.batch_builder` is compressed, encrypted and framed as
one SEND. The producer gives the sequence id, the producer name field and the publish time, and keeps what
comes out until its receipts arrive; nothing here touches asyncio or a connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mqwire.common.checksums import Buffer
from pulsarwire.batch_builder import Batch, batch_metadata, split_chunks
from pulsarwire.crypto import MessageEncryptor
from pulsarwire.errors import CryptoError, MessageTooBigError
from pulsarwire.protocol import commands
from pulsarwire.protocol.batch import compress_payload
from pulsarwire.protocol.frames import encode_payload_frame_pieces, encode_payload_frame_raw
from pulsarwire.protocol.metadata import PROPERTIES_TAG, encode_message_metadata
from pulsarwire.protocol.wire import key_values

__all__ = ["CHUNK_HEADROOM", "Encoded", "MessageEncoder", "OutgoingMessage", "chunk_size"]

Properties = list[tuple[bytes, bytes]]

# SEND command and metadata of a chunk must fit beside the chunk in the broker's frame limit.
CHUNK_HEADROOM = 1024


@dataclass(slots=True)
class OutgoingMessage:
    """The fields of one message sent alone; ``txn`` is the (most, least) bits of its transaction."""

    value: bytes
    properties: Properties | None = None
    partition_key: bytes | None = None
    partition_key_b64: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    deliver_at: int | None = None
    null_value: bool = False
    txn: tuple[int, int] | None = None


@dataclass(slots=True)
class Encoded:
    """The SEND frames of a message or a batch (several only for a chunked message), and, when encryption
    failed and ``crypto_failure_action`` is "SEND", the failure it went out unencrypted after."""

    frames: list[bytearray]
    unencrypted: CryptoError | None = None


def chunk_size(max_message_size: int, chunk_max_message_size: int | None) -> int:
    """The bytes in each chunk: ``chunk_max_message_size`` if given, never more than the broker's maximum
    less the room the command and metadata take."""
    limit = max_message_size - CHUNK_HEADROOM
    return min(chunk_max_message_size or limit, limit)


class MessageEncoder:
    """The frames of one producer's messages and batches, under its compression, encryption and chunking."""

    __slots__ = ("chunk_max_message_size", "chunking_enabled", "compression", "crypto_failure_action",
                 "encryptor", "producer_id")

    def __init__(
        self,
        producer_id: int,
        *,
        compression: int = 0,
        encryptor: MessageEncryptor | None = None,
        crypto_failure_action: str = "FAIL",
        chunking_enabled: bool = False,
        chunk_max_message_size: int | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.compression = compression
        self.encryptor = encryptor
        self.crypto_failure_action = crypto_failure_action
        self.chunking_enabled = chunking_enabled
        self.chunk_max_message_size = chunk_max_message_size

    def seal(self, body: bytes) -> tuple[bytes, bytes, CryptoError | None]:
        """The payload encrypted when there is an encryptor, the metadata fields that say how, and the
        failure when it went unencrypted ("SEND"); CryptoError when it failed and the action is "FAIL"."""
        encryptor = self.encryptor
        if encryptor is None:
            return body, b"", None
        try:
            sealed, fields = encryptor.encrypt(body)
        except CryptoError as exc:
            if self.crypto_failure_action == "SEND":
                return body, b"", exc
            raise
        return sealed, fields, None

    def encode_batch(
        self, batch: Batch[Any], producer_name: bytes, publish_time: int, max_message_size: int
    ) -> Encoded:
        """The SEND frame of a closed batch; ``producer_name`` is the encoded name (and schema version) field.

        Raises CryptoError (encryption failed, action "FAIL") or MessageTooBigError (the batch, compressed
        and encrypted, is above ``max_message_size``)."""
        compression = self.compression
        pieces: Sequence[Buffer]
        if not compression and self.encryptor is None:
            # The entries go into the frame as they are: one copy of the batch, not two.
            pieces, size, encryption, unencrypted = batch.entries, batch.size, b"", None
        else:
            body, encryption, unencrypted = self.seal(compress_payload(compression, batch.payload))
            pieces, size = (body,), len(body)
        if size > max_message_size:
            raise MessageTooBigError(f"batch of {size} bytes exceeds the broker's maximum of {max_message_size}")
        metadata = batch_metadata(batch, producer_name, publish_time, compression=compression, encryption=encryption)
        command = commands.send(self.producer_id, batch.first, batch.count, highest_sequence_id=batch.last)
        return Encoded([encode_payload_frame_pieces(command.SerializeToString(), metadata, pieces)], unencrypted)

    def encode_message(
        self,
        message: OutgoingMessage,
        sequence_id: int,
        producer_name: bytes,
        publish_time: int,
        max_message_size: int,
        *,
        chunk_uuid: str | None = None,
        producer_label: str | None = None,
    ) -> Encoded:
        """The SEND frame of one message, or the frames of its chunks.

        With chunking, a message above ``chunk_max_message_size`` (or the broker's maximum) goes in chunks,
        even one the broker would take whole, as in the Java client; every chunk carries the same sequence id
        and ``chunk_uuid`` (by default ``<producer_label>-<sequence id>-<8 random hex digits>``), by which the
        consumer joins them. Raises CryptoError (encryption failed, action "FAIL") or MessageTooBigError
        (above ``max_message_size`` without chunking)."""
        compression = self.compression
        value = message.value
        body, encryption, unencrypted = self.seal(compress_payload(compression, value))
        properties = key_values(PROPERTIES_TAG, message.properties) if message.properties else b""
        limit = max_message_size
        if self.chunking_enabled and self.chunk_max_message_size:
            limit = min(limit, self.chunk_max_message_size)
        if len(body) <= limit:
            metadata = self._metadata(
                message, sequence_id, producer_name, publish_time, properties, encryption=encryption
            )
            send = commands.send(self.producer_id, sequence_id)
            if message.txn is not None:
                send.send.txnid_most_bits, send.send.txnid_least_bits = message.txn
            return Encoded([encode_payload_frame_raw(send.SerializeToString(), metadata, body)], unencrypted)
        if not self.chunking_enabled:
            raise MessageTooBigError(
                f"message of {len(body)} bytes exceeds the broker's maximum of {max_message_size}"
            )
        pieces = split_chunks(body, chunk_size(max_message_size, self.chunk_max_message_size))
        if chunk_uuid is None:
            chunk_uuid = f"{producer_label}-{sequence_id}-{uuid.uuid4().hex[:8]}"
        send = commands.send(self.producer_id, sequence_id)
        send.send.is_chunk = True
        if message.txn is not None:
            send.send.txnid_most_bits, send.send.txnid_least_bits = message.txn
        command = send.SerializeToString()
        frames = []
        for chunk_id, piece in enumerate(pieces):
            metadata = self._metadata(
                message,
                sequence_id,
                producer_name,
                publish_time,
                properties,
                chunk=(chunk_uuid, chunk_id, len(pieces), len(body)),
            )
            frames.append(encode_payload_frame_raw(command, metadata, piece))
        return Encoded(frames, unencrypted)

    def _metadata(
        self,
        message: OutgoingMessage,
        sequence_id: int,
        producer_name: bytes,
        publish_time: int,
        properties: bytes,
        *,
        encryption: bytes = b"",
        chunk: tuple[str, int, int, int] | None = None,
    ) -> bytes:
        """The MessageMetadata of a message sent alone; ``properties`` already encoded; ``chunk``: (uuid,
        chunk id, chunks, total size)."""
        chunk_uuid, chunk_id, chunks, total = (None, None, None, None) if chunk is None else chunk
        return encode_message_metadata(
            producer_name,
            sequence_id,
            publish_time,
            properties=properties,
            partition_key=message.partition_key,
            compression=self.compression,
            uncompressed_size=len(message.value),
            event_time=message.event_time,
            partition_key_b64_encoded=message.partition_key_b64,
            ordering_key=message.ordering_key,
            deliver_at_time=message.deliver_at,
            null_value=message.null_value,
            uuid=chunk_uuid,
            num_chunks_from_msg=chunks,
            total_chunk_msg_size=total,
            chunk_id=chunk_id,
            txnid=message.txn,
            encryption=encryption,
        )
