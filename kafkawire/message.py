"""What the application sees: consumed messages and the receipts of produced records."""

from __future__ import annotations

import reprlib
from enum import IntEnum
from typing import Any, NamedTuple

from kafkawire.metadata import TopicPartition

__all__ = ["Message", "RecordMetadata", "TimestampType", "TopicPartition"]

RawHeaders = tuple[tuple[str, bytes | None], ...]


class TimestampType(IntEnum):
    """Who set ``Message.timestamp``: the producer (create time) or the broker (log append time)."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class RecordMetadata(NamedTuple):
    """Where the broker stored a record. ``offset`` is -1 when the broker does not tell (acks=0);
    ``timestamp`` (ms since the epoch) is the broker's when the topic uses log append time, else the
    record's own."""

    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's topic and partition."""
        return TopicPartition(self.topic, self.partition)


class Message:
    """One consumed record.

    ``headers`` maps each header name to its value; a name repeated keeps its last value and a null value
    reads as ``b""``. ``raw_headers`` is the exact sequence as stored, a tuple of ``(name, value)`` pairs.

    Messages decoded by the compiled decoder are not tracked by Python's cycle collector (as CPython does
    for tuples of plain values): none of their fields can refer back to them, and leaving a consumer's
    hundreds of thousands of messages per second out of its scans saves about a third of the CPU per
    record. So a message must not be made part of a reference cycle (say, by storing it inside its own
    ``value``): such a cycle would be freed only when broken.
    """

    __slots__ = (
        "_headers",
        "key",
        "leader_epoch",
        "offset",
        "partition",
        "raw_headers",
        "timestamp",
        "timestamp_type",
        "topic",
        "value",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        raw_headers: RawHeaders,
        timestamp: int,
        timestamp_type: TimestampType,
        leader_epoch: int | None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        # Any: a consumer's deserializers replace the bytes when it has them.
        self.key: Any = key
        self.value: Any = value
        self.raw_headers = raw_headers
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.leader_epoch = leader_epoch
        self._headers: dict[str, bytes] | None = None

    @property
    def headers(self) -> dict[str, bytes]:
        """The headers by name: a repeated name keeps its last value, a null value reads as ``b""``."""
        # Built on first use: most consumers never look at headers, and most records have none.
        headers = self._headers
        if headers is None:
            headers = {name: b"" if value is None else value for name, value in self.raw_headers}
            self._headers = headers
        return headers

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's topic and partition."""
        return TopicPartition(self.topic, self.partition)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, key={self.key!r}, "
            f"value={_preview(self.value)}, headers={self.headers!r}, timestamp={self.timestamp})"
        )


def _preview(value: object, limit: int = 64) -> str:
    if not isinstance(value, bytes):
        return reprlib.repr(value)  # a deserialized value: any object, shortened the same way
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}...({len(value)} bytes)"
