"""The metadata strings the master sends inside its protobuf answers, parsed and checked.

Formats, as the servers write them (``#`` separates segments, ``:`` attributes, ``,`` list items):

- broker info ``brokerId:host:port``; the master sends ``brokerId:host: `` (blank port) when the broker
  listens on the default port;
- topic info (producer heartbeat) ``topic#brokerId:partitionCount:storeCount[,...]#[maxMessageSize]``;
- partition ``brokerId:host:port#topic:partitionId`` and its key ``brokerId:topic:partitionId``;
- subscribe info ``consumerId@group#brokerId:host:port#topic:partitionId``.

The comments of the .proto files show ``-`` where the servers actually write ``#``. Everything malformed
raises ProtocolError: these strings come from the wire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mqwire.common.errors import ProtocolError
from tubemqwire.protocol.constants import (
    ARRAY_SEP,
    ATTR_SEP,
    DEFAULT_BROKER_PORT,
    GROUP_SEP,
    PARTITION_STORE_BASE,
    SEGMENT_SEP,
)

_INT = re.compile(r"-?[0-9]{1,10}")
# Names that may sit between separators: no separator, no white space.
_NAME = re.compile(r"[^\s#:,@]+")
_INT32_MAX = 2**31 - 1


def _int(text: str, what: str, minimum: int = 0, maximum: int = _INT32_MAX) -> int:
    if not _INT.fullmatch(text):
        raise ProtocolError(f"{what} {text!r} is not a number")
    value = int(text)
    if not minimum <= value <= maximum:
        raise ProtocolError(f"{what} {value} is outside {minimum}..{maximum}")
    return value


def _name(text: str, what: str) -> str:
    if not _NAME.fullmatch(text):
        raise ProtocolError(f"{what} {text!r} is empty or holds a separator or white space")
    return text


# ----------------------------------------------------------------------------------------------- brokers
@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def __str__(self) -> str:
        return f"{self.broker_id}{ATTR_SEP}{self.host}{ATTR_SEP}{self.port}"


def parse_broker_info(text: str, *, default_port: int = DEFAULT_BROKER_PORT) -> BrokerInfo:
    """``brokerId:host:port``; a blank or missing port means ``default_port`` (8124 over TLS)."""
    parts = text.split(ATTR_SEP)
    if len(parts) not in (2, 3):
        raise ProtocolError(f"broker info {text!r} is not brokerId:host:port")
    broker_id = _int(parts[0], "broker id")
    host = _name(parts[1], "broker host")
    port_text = parts[2].strip() if len(parts) == 3 else ""
    port = _int(port_text, "broker port", 1, 65535) if port_text else default_port
    return BrokerInfo(broker_id, host, port)


# ------------------------------------------------------------------------------------------------ topics
@dataclass(frozen=True, slots=True)
class TopicOnBroker:
    """How many partitions (in how many stores) one broker holds for a topic."""

    broker_id: int
    partition_count: int
    store_count: int

    def partition_ids(self) -> list[int]:
        """The partition ids on the wire: store * 10000 + partition, for every store."""
        return [
            store * PARTITION_STORE_BASE + index
            for store in range(self.store_count)
            for index in range(self.partition_count)
        ]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """Where a published topic lives, from the producer heartbeat's ``topicInfos``."""

    topic: str
    brokers: tuple[TopicOnBroker, ...]
    max_message_size: int | None = None


def parse_topic_info(text: str) -> TopicInfo:
    """``topic#brokerId:partitionCount:storeCount[,...]#[maxMessageSize]``."""
    segments = text.strip().split(SEGMENT_SEP)
    if len(segments) not in (2, 3):
        raise ProtocolError(f"topic info {text!r} is not topic#brokers[#maxSize]")
    topic = _name(segments[0], "topic")
    brokers: list[TopicOnBroker] = []
    for item in segments[1].split(ARRAY_SEP):
        fields = item.split(ATTR_SEP)
        if len(fields) != 3:
            raise ProtocolError(f"topic info entry {item!r} is not brokerId:partitionCount:storeCount")
        brokers.append(
            TopicOnBroker(
                _int(fields[0], "broker id"),
                _int(fields[1], "partition count", 1, PARTITION_STORE_BASE),
                _int(fields[2], "store count", 1),
            )
        )
    max_size = None
    if len(segments) == 3 and segments[2].strip():
        max_size = _int(segments[2].strip(), "max message size", 1)
    return TopicInfo(topic, tuple(brokers), max_size)


# -------------------------------------------------------------------------------------------- partitions
@dataclass(frozen=True, slots=True)
class PartitionInfo:
    broker: BrokerInfo
    topic: str
    partition_id: int

    @property
    def key(self) -> str:
        """``brokerId:topic:partitionId``, the name of a partition in the servers' bookkeeping."""
        return f"{self.broker.broker_id}{ATTR_SEP}{self.topic}{ATTR_SEP}{self.partition_id}"

    def __str__(self) -> str:
        return f"{self.broker}{SEGMENT_SEP}{self.topic}{ATTR_SEP}{self.partition_id}"


def _topic_partition(text: str) -> tuple[str, int]:
    fields = text.split(ATTR_SEP)
    if len(fields) != 2:
        raise ProtocolError(f"{text!r} is not topic:partitionId")
    return _name(fields[0], "topic"), _int(fields[1], "partition id")


def parse_partition(text: str, *, default_port: int = DEFAULT_BROKER_PORT) -> PartitionInfo:
    """``brokerId:host:port#topic:partitionId``."""
    segments = text.split(SEGMENT_SEP)
    if len(segments) != 2:
        raise ProtocolError(f"partition {text!r} is not brokerId:host:port#topic:partitionId")
    topic, partition_id = _topic_partition(segments[1])
    return PartitionInfo(parse_broker_info(segments[0], default_port=default_port), topic, partition_id)


def parse_partition_key(text: str) -> tuple[int, str, int]:
    """``brokerId:topic:partitionId`` as ``(broker_id, topic, partition_id)``."""
    fields = text.split(ATTR_SEP)
    if len(fields) != 3:
        raise ProtocolError(f"partition key {text!r} is not brokerId:topic:partitionId")
    return _int(fields[0], "broker id"), _name(fields[1], "topic"), _int(fields[2], "partition id")


# ----------------------------------------------------------------------------------------- subscriptions
@dataclass(frozen=True, slots=True)
class SubscribeInfo:
    consumer_id: str
    group: str
    partition: PartitionInfo

    def __str__(self) -> str:
        return f"{self.consumer_id}{GROUP_SEP}{self.group}{SEGMENT_SEP}{self.partition}"


def parse_subscribe_info(text: str, *, default_port: int = DEFAULT_BROKER_PORT) -> SubscribeInfo:
    """``consumerId@group#brokerId:host:port#topic:partitionId``."""
    segments = text.split(SEGMENT_SEP)
    if len(segments) != 3:
        raise ProtocolError(f"subscribe info {text!r} is not consumerId@group#broker#topic:partitionId")
    owner = segments[0].split(GROUP_SEP)
    if len(owner) != 2:
        raise ProtocolError(f"subscribe info {text!r} does not start with consumerId@group")
    consumer_id = _name(owner[0], "consumer id")
    group = _name(owner[1], "group")
    topic, partition_id = _topic_partition(segments[2])
    broker = parse_broker_info(segments[1], default_port=default_port)
    return SubscribeInfo(consumer_id, group, PartitionInfo(broker, topic, partition_id))


# ------------------------------------------------------------------------- partition meta (client balance)
@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """A partition offered to client-side balancing, and whether it may be consumed now."""

    partition: PartitionInfo
    subscribable: bool


def parse_topic_meta(text: str, brokers: dict[int, BrokerInfo]) -> list[PartitionMeta]:
    """``topic#brokerId:storeCount:partitionCount:status[,...]`` (status 1: subscribable).

    Note the order: store count before partition count, the reverse of the producer's topic info.
    Entries naming a broker not in ``brokers`` are left out, as the reference client does: the broker
    list and the topic list are versioned separately and may be a heartbeat apart.
    """
    segments = text.strip().split(SEGMENT_SEP)
    if len(segments) != 2:
        raise ProtocolError(f"topic meta {text!r} is not topic#brokerId:storeCount:partitionCount:status[,...]")
    topic = _name(segments[0], "topic")
    found: list[PartitionMeta] = []
    for item in segments[1].split(ARRAY_SEP):
        fields = item.split(ATTR_SEP)
        if len(fields) != 4:
            raise ProtocolError(f"topic meta entry {item!r} is not brokerId:storeCount:partitionCount:status")
        broker_id = _int(fields[0], "broker id")
        on_broker = TopicOnBroker(
            broker_id,
            _int(fields[2], "partition count", 1, PARTITION_STORE_BASE),
            _int(fields[1], "store count", 1),
        )
        status = _int(fields[3], "partition status", -1)
        broker = brokers.get(broker_id)
        if broker is None:
            continue
        found += [PartitionMeta(PartitionInfo(broker, topic, pid), status == 1) for pid in on_broker.partition_ids()]
    return found


def format_subscribed(partitions: list[PartitionInfo]) -> list[str]:
    """The partitions held, as the client-balance heartbeat reports them: ``topic#brokerId:partitionId,...``."""
    by_topic: dict[str, list[str]] = {}
    for partition in partitions:
        by_topic.setdefault(partition.topic, []).append(
            f"{partition.broker.broker_id}{ATTR_SEP}{partition.partition_id}"
        )
    return [f"{topic}{SEGMENT_SEP}{ARRAY_SEP.join(items)}" for topic, items in sorted(by_topic.items())]
