"""OffsetCommit (key 8): a group's consumed positions, stored by its coordinator."""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import INT16, INT32, INT64, STRING, UUID, Array, Request, Response, Struct, field


class OffsetCommitRequestPartition(Struct):
    partition_index: int = field(INT32)
    committed_offset: int = field(INT64)
    committed_leader_epoch: int = field(INT32, "6+", default=-1)
    committed_metadata: str | None = field(STRING, nullable="0+")


class OffsetCommitRequestTopic(Struct):
    name: str = field(STRING, "0-9")
    topic_id: uuid.UUID = field(UUID, "10+")
    partitions: list[OffsetCommitRequestPartition] = field(Array(OffsetCommitRequestPartition))


class OffsetCommitRequest(Request, api_key=8, versions="2-10", flexible="8+"):
    group_id: str = field(STRING)
    # The classic protocol's generation, or the member epoch of a KIP-848 consumer group; -1 outside a group.
    generation_id_or_member_epoch: int = field(INT32, "1+", default=-1)
    member_id: str = field(STRING, "1+")
    group_instance_id: str | None = field(STRING, "7+", nullable="7+", default=None)
    retention_time_ms: int = field(INT64, "2-4", default=-1)
    topics: list[OffsetCommitRequestTopic] = field(Array(OffsetCommitRequestTopic))


class OffsetCommitResponsePartition(Struct):
    partition_index: int = field(INT32)
    error_code: int = field(INT16)


class OffsetCommitResponseTopic(Struct):
    name: str = field(STRING, "0-9")
    topic_id: uuid.UUID = field(UUID, "10+")
    partitions: list[OffsetCommitResponsePartition] = field(Array(OffsetCommitResponsePartition))


class OffsetCommitResponse(Response, api_key=8, versions="2-10", flexible="8+"):
    throttle_time_ms: int = field(INT32, "3+")
    topics: list[OffsetCommitResponseTopic] = field(Array(OffsetCommitResponseTopic))
