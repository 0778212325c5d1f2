"""OffsetFetch (key 9): a group's committed positions; v8+ asks for several groups at once."""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import BOOL, INT16, INT32, INT64, STRING, UUID, Array, Request, Response, Struct, field


class OffsetFetchRequestTopic(Struct):
    name: str = field(STRING)
    partition_indexes: list[int] = field(Array(INT32))


class OffsetFetchRequestGroupTopic(Struct):
    name: str = field(STRING, "8-9")
    topic_id: uuid.UUID = field(UUID, "10+")
    partition_indexes: list[int] = field(Array(INT32))


class OffsetFetchRequestGroup(Struct):
    group_id: str = field(STRING)
    member_id: str | None = field(STRING, "9+", nullable="9+", default=None)
    member_epoch: int = field(INT32, "9+", default=-1)
    # None asks for every partition the group has committed.
    topics: list[OffsetFetchRequestGroupTopic] | None = field(Array(OffsetFetchRequestGroupTopic), nullable="0+")


class OffsetFetchRequest(Request, api_key=9, versions="1-10", flexible="6+"):
    group_id: str = field(STRING, "0-7")
    topics: list[OffsetFetchRequestTopic] | None = field(Array(OffsetFetchRequestTopic), "0-7", nullable="2-7")
    groups: list[OffsetFetchRequestGroup] = field(Array(OffsetFetchRequestGroup), "8+")
    require_stable: bool = field(BOOL, "7+", default=False)


class OffsetFetchResponsePartition(Struct):
    partition_index: int = field(INT32)
    committed_offset: int = field(INT64)
    committed_leader_epoch: int = field(INT32, "5+", default=-1)
    metadata: str | None = field(STRING, nullable="0+")
    error_code: int = field(INT16)


class OffsetFetchResponseTopic(Struct):
    name: str = field(STRING)
    partitions: list[OffsetFetchResponsePartition] = field(Array(OffsetFetchResponsePartition))


class OffsetFetchResponseGroupPartition(Struct):
    partition_index: int = field(INT32)
    committed_offset: int = field(INT64)
    committed_leader_epoch: int = field(INT32, default=-1)
    metadata: str | None = field(STRING, nullable="0+")
    error_code: int = field(INT16)


class OffsetFetchResponseGroupTopic(Struct):
    name: str = field(STRING, "8-9")
    topic_id: uuid.UUID = field(UUID, "10+")
    partitions: list[OffsetFetchResponseGroupPartition] = field(Array(OffsetFetchResponseGroupPartition))


class OffsetFetchResponseGroup(Struct):
    group_id: str = field(STRING)
    topics: list[OffsetFetchResponseGroupTopic] = field(Array(OffsetFetchResponseGroupTopic))
    error_code: int = field(INT16, default=0)


class OffsetFetchResponse(Response, api_key=9, versions="1-10", flexible="6+"):
    throttle_time_ms: int = field(INT32, "3+")
    topics: list[OffsetFetchResponseTopic] = field(Array(OffsetFetchResponseTopic), "0-7")
    error_code: int = field(INT16, "2-7", default=0)
    groups: list[OffsetFetchResponseGroup] = field(Array(OffsetFetchResponseGroup), "8+")
