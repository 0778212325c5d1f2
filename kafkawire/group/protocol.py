"""The "consumer" protocol type's member metadata, as the Java client lays it out (sans-IO).

Inside JoinGroup and SyncGroup the group coordinator passes these bytes along without reading them; every
member of a group must read what the others write, so the layout is the Java client's:

    Subscription: version int16, topics [string], user_data nullable bytes,
                  v1+ owned_partitions [topic string, partitions [int32]], v2+ generation_id int32,
                  v3+ rack_id nullable string
    Assignment:   version int16, assigned_partitions [topic string, partitions [int32]], user_data nullable bytes

Arrays have an int32 count, strings an int16 length, bytes an int32 length (-1 for null). A reader takes
the fields of the versions it knows and ignores what follows, so newer writers stay readable.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkawire.metadata import TopicPartition
from mqwire.common.errors import ProtocolError

SUBSCRIPTION_VERSION = 1  # with owned partitions, as cooperative assignors need
ASSIGNMENT_VERSION = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


# ------------------------------------------------------------------------------------------- writing
def _string(value: str) -> bytes:
    data = value.encode()
    return _I16.pack(len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    return _I32.pack(-1) if value is None else _I32.pack(len(value)) + value


def _partitions(partitions: Iterable[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_I32.pack(len(by_topic))]
    for topic, numbers in by_topic.items():
        out.append(_string(topic) + _I32.pack(len(numbers)) + b"".join(_I32.pack(n) for n in numbers))
    return b"".join(out)


def encode_subscription(subscription: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    out = [_I16.pack(version), _I32.pack(len(subscription.topics))]
    out += [_string(topic) for topic in subscription.topics]
    out.append(_bytes(subscription.user_data))
    if version >= 1:
        out.append(_partitions(subscription.owned_partitions))
    if version >= 2:
        out.append(_I32.pack(subscription.generation_id))
    if version >= 3:
        out.append(_I16.pack(-1) if subscription.rack_id is None else _string(subscription.rack_id))
    return b"".join(out)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    return _I16.pack(version) + _partitions(assignment.partitions) + _bytes(assignment.user_data)


# ------------------------------------------------------------------------------------------- reading
class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ProtocolError(f"{self.what}: needs {size} bytes at {self.pos}, has {len(self.data) - self.pos}")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    @property
    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def int16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def count(self) -> int:
        n = self.int32()
        # Every element takes at least two bytes: a count the rest cannot hold is refused before looping.
        if n < -1 or n * 2 > len(self.data) - self.pos:
            raise ProtocolError(f"{self.what}: array of {n} elements in {len(self.data) - self.pos} bytes")
        return max(n, 0)

    def string(self) -> str:
        size = self.int16()
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{self.what}: a string that is not UTF-8 ({exc})") from None

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        self.pos -= 2
        return self.string()

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        return None if size == -1 else self._take(size)

    def partitions(self) -> list[TopicPartition]:
        result = []
        for _ in range(self.count()):
            topic = self.string()
            result += [TopicPartition(topic, self.int32()) for _ in range(self.count())]
        return result


def decode_subscription(data: bytes) -> Subscription:
    reader = _Reader(data, "consumer subscription")
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"consumer subscription: version {version}")
    topics = [reader.string() for _ in range(reader.count())]
    user_data = reader.nullable_bytes()
    owned: list[TopicPartition] = []
    generation, rack = -1, None
    # Older writers stop early; a version-0 member's metadata may also simply end here.
    if version >= 1 and not reader.at_end:
        owned = reader.partitions()
    if version >= 2 and not reader.at_end:
        generation = reader.int32()
    if version >= 3 and not reader.at_end:
        rack = reader.nullable_string()
    return Subscription(topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment([])  # a member the leader gave nothing
    reader = _Reader(data, "consumer assignment")
    if reader.int16() < 0:
        raise ProtocolError("consumer assignment: negative version")
    partitions = reader.partitions()
    user_data = None if reader.at_end else reader.nullable_bytes()
    return Assignment(partitions, user_data)
