"""What the application gets back: a send receipt and a consumed message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Receipt:
    """The broker's acknowledgement of one message.

    ``message_id`` is the id the broker gave the message (-1 when it gave none); ``append_time`` (when the
    broker stored it, ms since the epoch) and ``append_offset`` (where in the partition) are None from
    brokers that do not report them. Partition ids are unique only within a broker, so ``partition_key``
    (``brokerId:topic:partitionId``) names the partition in the whole cluster.
    """

    topic: str
    partition: int
    broker_id: int
    message_id: int
    append_time: int | None = None
    append_offset: int | None = None

    @property
    def partition_key(self) -> str:
        """``brokerId:topic:partitionId``, the partition's name in the whole cluster."""
        return f"{self.broker_id}:{self.topic}:{self.partition}"


# Not frozen: a frozen dataclass sets each field through object.__setattr__, which costs more than the
# rest of decoding a fetched message. (Its headers are a dict, so it was never hashable anyway.)
@dataclass(slots=True)
class Message:
    """A consumed message.

    ``headers`` are the message's attributes without the system keys; ``msg_type`` and ``msg_time`` are
    those. ``timestamp`` is ``msg_time`` (``yyyyMMddHHmm``, the producer's local time) in milliseconds since
    the epoch, read in this machine's time zone as the Java client does, or None. TubeMQ messages carry no
    key of their own: ``key`` is what a tubemqwire producer carried in the attribute ``mqwire.key``, or
    None. ``key`` and ``value`` are bytes unless the consumer has deserializers. ``message_id`` is the id
    the broker gave the message; ``partition`` and ``broker_id`` name its partition (see ``partition_key``).
    """

    topic: str
    partition: int
    broker_id: int
    value: Any
    headers: dict[str, bytes]
    message_id: int
    msg_type: str | None = None
    msg_time: str | None = None
    timestamp: int | None = None
    key: Any = None
    # The fetched batch this message belongs to; acknowledging every message of it confirms the batch.
    batch: Any = field(default=None, repr=False, compare=False)
    index: int = field(default=0, repr=False, compare=False)

    @property
    def partition_key(self) -> str:
        """``brokerId:topic:partitionId``, the partition's name in the whole cluster."""
        return f"{self.broker_id}:{self.topic}:{self.partition}"
