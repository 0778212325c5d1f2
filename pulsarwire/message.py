"""What the application sees: message ids (send receipts) and consumed messages."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, NamedTuple

from google.protobuf.message import DecodeError

from mqwire.common.errors import ProtocolError
from pulsarwire.protocol.pulsar_api_pb2 import MessageIdData

if TYPE_CHECKING:
    from pulsarwire.acks import BatchAcks

__all__ = ["EARLIEST", "LATEST", "Message", "MessageId", "Receipt"]

_MAX_LONG = (1 << 63) - 1


class MessageId(NamedTuple):
    """Where a message is stored: ledger and entry, and its index when the entry is a batch.

    ``partition`` is the partition index (-1 for a topic without partitions). Ids of one partition order
    as the messages were stored. ``serialize`` gives the bytes the other Pulsar clients exchange
    (``MessageId.deserialize`` in the Python and Java clients reads them).
    """

    ledger_id: int
    entry_id: int
    batch_index: int = -1
    partition: int = -1
    batch_size: int = 0

    def serialize(self) -> bytes:
        """The id as the bytes the other Pulsar clients exchange (their ``MessageIdData`` encoding)."""
        data = MessageIdData(ledgerId=self.ledger_id & 0xFFFFFFFFFFFFFFFF, entryId=self.entry_id & 0xFFFFFFFFFFFFFFFF)
        if self.partition >= 0:
            data.partition = self.partition
        if self.batch_index >= 0:
            data.batch_index = self.batch_index
        if self.batch_size > 0:
            data.batch_size = self.batch_size
        return data.SerializeToString()

    @classmethod
    def deserialize(cls, data: bytes) -> MessageId:
        """The id that ``serialize`` (or another Pulsar client) turned into ``data``; ProtocolError if it is none."""
        parsed = MessageIdData()
        try:
            parsed.ParseFromString(data)
        except DecodeError as exc:
            raise ProtocolError(f"not a serialized message id: {exc}") from exc
        if not parsed.IsInitialized():
            raise ProtocolError("serialized message id lacks ledger or entry id")
        return cls.from_data(parsed)

    @classmethod
    def from_data(cls, data: MessageIdData, partition: int | None = None) -> MessageId:
        """The id in the protocol's ``MessageIdData``, with ``partition`` instead of its own when given."""
        return cls(
            _signed(data.ledgerId),
            _signed(data.entryId),
            data.batch_index,
            data.partition if partition is None else partition,
            data.batch_size,
        )

    def to_data(self) -> MessageIdData:
        """The protocol's MessageIdData (as sent in ACK, SEEK and SUBSCRIBE)."""
        data = MessageIdData(ledgerId=self.ledger_id & 0xFFFFFFFFFFFFFFFF, entryId=self.entry_id & 0xFFFFFFFFFFFFFFFF)
        if self.partition >= 0:
            data.partition = self.partition
        if self.batch_index >= 0:
            data.batch_index = self.batch_index
        return data

    @property
    def entry(self) -> MessageId:
        """The id of the whole entry (the batch) this message is in."""
        return MessageId(self.ledger_id, self.entry_id, -1, self.partition)

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}:{self.partition}:{self.batch_index}"


def _signed(value: int) -> int:
    # The earliest position is (-1, -1), which travels as the unsigned 2**64 - 1.
    return value - (1 << 64) if value > _MAX_LONG else value


class Receipt(MessageId):
    """What ``producer.send`` returns: the stored message's ``MessageId`` that also knows its ``topic``.

    It is a ``MessageId`` (equal to the id a consumer sees for that message, usable in ``seek`` and as a
    reader's ``start``) and satisfies the shared receipt contract: ``topic`` is the complete name of the
    producer's topic (for a partitioned topic, the topic itself, not the partition) and ``partition`` the
    partition index (-1 without partitions). ``message_id`` is the plain id.
    """

    topic: str

    @property
    def message_id(self) -> MessageId:
        """The plain ``MessageId`` (without the topic)."""
        return MessageId(*self)


def receipt(topic: str, ledger_id: int, entry_id: int, batch_index: int, partition: int, batch_size: int) -> Receipt:
    """A ``Receipt`` for ``topic`` (the producer's)."""
    made = Receipt(ledger_id, entry_id, batch_index, partition, batch_size)
    made.topic = topic
    return made


EARLIEST = MessageId(-1, -1)
LATEST = MessageId(_MAX_LONG, _MAX_LONG)


# Marks a key not replaced by a deserializer: ``Message.key`` then derives it from the partition key.
_RAW: Any = object()


class Message:
    """One consumed message.

    ``topic`` is the topic as given to the consumer and ``partition`` its partition (-1 when the topic has
    none); ``topic_name`` is the full name of the partition it came from. ``key`` is the partition key as
    bytes (``partition_key`` keeps the text form on the wire), or what the consumer's ``key_deserializer``
    made of it; ``value`` is the payload, or what the ``value_deserializer`` made of it (``payload`` keeps
    the bytes received). ``headers`` are the message properties. ``schema_version`` is the version of the
    topic's schema the producer wrote it with (None without a schema): ``client.get_schema(topic, version)``.
    ``timestamp`` is the publish time and ``event_time`` the producer's event time (None when unset), both in
    milliseconds since the epoch. ``encrypted`` is True for a message a consumer with
    ``crypto_failure_action="CONSUME"`` could not decrypt: its payload is as sent (encrypted, compressed).
    """

    __slots__ = (
        "_batch",
        "_chunks",
        "_key",
        "_owner",
        "encrypted",
        "event_time",
        "headers",
        "message_id",
        "null_value",
        "ordering_key",
        "partition",
        "partition_key",
        "partition_key_b64_encoded",
        "payload",
        "producer_name",
        "redelivery_count",
        "schema_version",
        "sequence_id",
        "timestamp",
        "topic",
        "topic_name",
        "value",
    )

    def __init__(
        self,
        topic: str,
        topic_name: str,
        partition: int,
        message_id: MessageId,
        value: bytes,
        headers: dict[str, bytes],
        partition_key: str | None = None,
        partition_key_b64_encoded: bool = False,
        ordering_key: bytes | None = None,
        timestamp: int = 0,
        event_time: int | None = None,
        redelivery_count: int = 0,
        producer_name: str = "",
        sequence_id: int = -1,
        null_value: bool = False,
        owner: Any = None,
        batch: BatchAcks | None = None,
        chunks: list[tuple[int, int]] | None = None,
        schema_version: int | None = None,
        encrypted: bool = False,
    ) -> None:
        self.topic = topic
        self.topic_name = topic_name
        self.partition = partition
        self.message_id = message_id
        # A null value (the producer sent None) reads as None, as a Kafka tombstone does; payload keeps the bytes.
        self.value: Any = None if null_value else value
        self.payload = value
        self._key: Any = _RAW
        self.headers = headers
        self.partition_key = partition_key
        self.partition_key_b64_encoded = partition_key_b64_encoded
        self.ordering_key = ordering_key
        self.timestamp = timestamp
        self.event_time = event_time
        self.redelivery_count = redelivery_count
        self.producer_name = producer_name
        self.sequence_id = sequence_id
        self.null_value = null_value
        self.schema_version = schema_version
        # Delivered undecrypted (crypto_failure_action "CONSUME"): the payload is as the producer sent it.
        self.encrypted = encrypted
        # The sub-consumer that received the message, and the batch it came in; used by acks.
        self._owner = owner
        self._batch = batch
        # The entries of a message that arrived in chunks; acknowledging it acknowledges each.
        self._chunks = chunks

    @property
    def key(self) -> Any:
        """The partition key as bytes (decoded from base64 when the producer sent binary key bytes).

        With a ``key_deserializer``, what it made of those bytes.
        """
        key = self._key
        if key is _RAW:
            return self.raw_key
        return key

    @key.setter
    def key(self, key: Any) -> None:
        self._key = key

    @property
    def raw_key(self) -> bytes | None:
        """The partition key as received, in bytes, whatever the consumer's ``key_deserializer``."""
        key = self.partition_key
        if key is None:
            return None
        if self.partition_key_b64_encoded:
            try:
                return base64.b64decode(key)
            except ValueError:
                return key.encode()
        return key.encode()

    @property
    def properties(self) -> dict[str, str]:
        """The properties as text, the way the other Pulsar clients show them."""
        return {name: value.decode(errors="replace") for name, value in self.headers.items()}

    def __repr__(self) -> str:
        value = self.value
        if isinstance(value, bytes) and len(value) > 64:
            shown = f"{value[:64]!r}...({len(value)} bytes)"
        else:
            shown = repr(value)
        return (
            f"Message(topic={self.topic!r}, partition={self.partition}, message_id={self.message_id}, "
            f"key={self.partition_key!r}, value={shown}, headers={self.headers!r}, timestamp={self.timestamp})"
        )
