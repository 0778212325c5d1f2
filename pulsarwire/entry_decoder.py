"""The messages of one stored entry, without I/O: a single message, or the messages of a batch.

Chunks are joined by :mod:`pulsarwire.chunks` and payloads decrypted and decompressed by
:mod:`pulsarwire.entry_payload`; this turns the entry's metadata and data into :class:`pulsarwire.Message`
objects, leaving out what the broker says is acknowledged (``ack_set``), what the producer's compaction
left out, and the indexes before ``start`` (a reader starting inside a batch).
"""

from __future__ import annotations

from typing import Any

from pulsarwire.acks import BatchAcks, Position
from pulsarwire.message import Message, MessageId
from pulsarwire.protocol.batch import decode_batch

__all__ = ["decode_entry"]


def decode_entry(
    metadata: Any,
    data: bytes,
    *,
    topic: str,
    topic_name: str,
    partition: int,
    ledger: int,
    entry: int,
    redelivery: int,
    owner: Any,
    ack_set: int = -1,
    start: int = 0,
    chunks: list[Position] | None = None,
    encrypted: bool = False,
) -> tuple[list[Message], int]:
    """The messages of the entry and how many of its messages were left out.

    ``metadata`` is its MessageMetadata; ``data`` the payload, decompressed (still encrypted when
    ``encrypted``: then the entry is one message, a batch included). ``ack_set`` is the bit set of batch
    indexes still to deliver (-1: all); ``owner`` goes into each message, for acknowledgements.
    """
    publish_time = metadata.publish_time
    producer_name = metadata.producer_name
    schema_version = int.from_bytes(metadata.schema_version, "big") if metadata.schema_version else None
    batched = metadata.HasField("num_messages_in_batch")
    if encrypted or not batched:
        message = Message(
            topic,
            topic_name,
            partition,
            MessageId(ledger, entry, -1, partition),
            data,
            {kv.key: kv.value.encode() for kv in metadata.properties},
            partition_key=metadata.partition_key if metadata.HasField("partition_key") else None,
            partition_key_b64_encoded=metadata.partition_key_b64_encoded,
            ordering_key=metadata.ordering_key if metadata.HasField("ordering_key") else None,
            timestamp=publish_time,
            event_time=metadata.event_time or None,
            redelivery_count=redelivery,
            producer_name=producer_name,
            sequence_id=metadata.sequence_id,
            null_value=metadata.null_value,
            owner=owner,
            chunks=chunks,
            schema_version=schema_version,
            encrypted=encrypted,
        )
        # An encrypted batch delivered as one message: the broker counted each of its messages.
        return [message], metadata.num_messages_in_batch - 1 if batched else 0
    count = metadata.num_messages_in_batch
    entries = decode_batch(data, count)
    first_sequence = metadata.sequence_id
    batch = BatchAcks()
    # Bit sets as bytes while the loop runs: shifting and or-ing one growing integer per message is
    # quadratic in the batch's size.
    delivered = bytearray((count + 7) // 8)
    acked = None if ack_set < 0 else ack_set.to_bytes((max(ack_set.bit_length(), count) + 7) // 8, "little")
    messages: list[Message] = []
    append = messages.append
    skipped = 0
    make_tuple = tuple.__new__  # a MessageId without its Python-level __new__: once per message
    for index, item in enumerate(entries):
        if item.compacted_out or index < start or (acked is not None and not acked[index >> 3] >> (index & 7) & 1):
            skipped += 1
            continue
        delivered[index >> 3] |= 1 << (index & 7)
        # Positional arguments: this runs once per message of every batch.
        append(Message(
            topic,
            topic_name,
            partition,
            make_tuple(MessageId, (ledger, entry, index, partition, count)),
            item.payload,
            item.properties,
            item.partition_key,
            item.partition_key_b64_encoded,
            item.ordering_key,
            publish_time,
            item.event_time or None,
            redelivery,
            producer_name,
            first_sequence + index if item.sequence_id is None else item.sequence_id,
            item.null_value,
            owner,
            batch,
            None,
            schema_version,
        ))
    batch.expect(int.from_bytes(delivered, "little"))
    return messages, skipped
