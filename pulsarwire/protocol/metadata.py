"""MessageMetadata written by hand: once per SEND frame, without building a protobuf object.

The bytes equal what ``MessageMetadata.SerializeToString()`` gives for the same fields (fields in number
order, defaults left out), which the unit tests check.
"""

from __future__ import annotations

from pulsarwire.protocol.wire import LEN, VARINT, length_delimited, tag, varint

_PRODUCER_NAME = tag(1, LEN)
_SEQUENCE_ID = tag(2, VARINT)
_PUBLISH_TIME = tag(3, VARINT)
_SCHEMA_VERSION = tag(16, LEN)
PROPERTIES_TAG = tag(4, LEN)
_PARTITION_KEY = tag(6, LEN)
_COMPRESSION = tag(8, VARINT)
_UNCOMPRESSED_SIZE = tag(9, VARINT)
_NUM_MESSAGES_IN_BATCH = tag(11, VARINT)
_EVENT_TIME = tag(12, VARINT)
_PARTITION_KEY_B64 = tag(17, VARINT)
_ORDERING_KEY = tag(18, LEN)
_DELIVER_AT_TIME = tag(19, VARINT)
_HIGHEST_SEQUENCE_ID = tag(24, VARINT)
_NULL_VALUE = tag(25, VARINT)
_TXNID_LEAST_BITS = tag(22, VARINT)
_TXNID_MOST_BITS = tag(23, VARINT)
_UUID = tag(26, LEN)
_NUM_CHUNKS = tag(27, VARINT)
_TOTAL_CHUNK_SIZE = tag(28, VARINT)
_CHUNK_ID = tag(29, VARINT)
_TRUE = varint(1)


def producer_name_field(name: str) -> bytes:
    """The encoded ``producer_name`` field, computed once per producer and reused for every frame."""
    return length_delimited(_PRODUCER_NAME, name.encode())


def schema_version_field(version: bytes) -> bytes:
    """The encoded ``schema_version`` field (empty for a producer without a schema), sent with the name."""
    return length_delimited(_SCHEMA_VERSION, version) if version else b""


def encode_message_metadata(
    producer_name: bytes,
    sequence_id: int,
    publish_time: int,
    *,
    properties: bytes = b"",
    partition_key: bytes | None = None,
    compression: int = 0,
    uncompressed_size: int | None = None,
    num_messages_in_batch: int | None = None,
    event_time: int = 0,
    partition_key_b64_encoded: bool = False,
    ordering_key: bytes | None = None,
    deliver_at_time: int | None = None,
    highest_sequence_id: int = 0,
    null_value: bool = False,
    uuid: str | None = None,
    num_chunks_from_msg: int | None = None,
    total_chunk_msg_size: int | None = None,
    chunk_id: int | None = None,
    txnid: tuple[int, int] | None = None,
    encryption: bytes = b"",
) -> bytes:
    """The serialized MessageMetadata.

    ``producer_name`` is the field from :func:`producer_name_field`; ``properties`` are KeyValue entries
    already encoded under :data:`PROPERTIES_TAG` (see ``wire.key_values``); ``partition_key`` is UTF-8;
    ``txnid`` is the (most, least) bits of the transaction the message belongs to (the broker filters the
    messages of aborted transactions by it); ``encryption`` the encoded encryption_keys and encryption_param
    fields of an encrypted payload.
    """
    parts = [producer_name, _SEQUENCE_ID, varint(sequence_id), _PUBLISH_TIME, varint(publish_time), properties]
    if partition_key is not None:
        parts.append(length_delimited(_PARTITION_KEY, partition_key))
    if compression:
        parts += (_COMPRESSION, varint(compression))
    if uncompressed_size is not None:
        parts += (_UNCOMPRESSED_SIZE, varint(uncompressed_size))
    if num_messages_in_batch is not None:
        parts += (_NUM_MESSAGES_IN_BATCH, varint(num_messages_in_batch))
    if event_time:
        parts += (_EVENT_TIME, varint(event_time))
    if partition_key_b64_encoded:
        parts += (_PARTITION_KEY_B64, _TRUE)
    if ordering_key is not None:
        parts.append(length_delimited(_ORDERING_KEY, ordering_key))
    if deliver_at_time is not None:
        parts += (_DELIVER_AT_TIME, varint(deliver_at_time))
    if txnid is not None:
        parts += (_TXNID_LEAST_BITS, varint(txnid[1]), _TXNID_MOST_BITS, varint(txnid[0]))
    if highest_sequence_id:
        parts += (_HIGHEST_SEQUENCE_ID, varint(highest_sequence_id))
    if null_value:
        parts += (_NULL_VALUE, _TRUE)
    if uuid is not None:
        parts.append(length_delimited(_UUID, uuid.encode()))
    if num_chunks_from_msg is not None:
        parts += (_NUM_CHUNKS, varint(num_chunks_from_msg))
    if total_chunk_msg_size is not None:
        parts += (_TOTAL_CHUNK_SIZE, varint(total_chunk_msg_size))
    if chunk_id is not None:
        parts += (_CHUNK_ID, varint(chunk_id))
    if encryption:
        parts.append(encryption)
    return b"".join(parts)
