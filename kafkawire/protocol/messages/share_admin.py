"""The share group offset APIs of KIP-932: DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92). A share group's "offset" is its start offset per partition: records before it
are never delivered to the group."""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    UUID,
    Array,
    Request,
    Response,
    Struct,
    field,
)


class DescribeShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = field(STRING)
    partitions: list[int] = field(Array(INT32))


class DescribeShareGroupOffsetsRequestGroup(Struct):
    group_id: str = field(STRING)
    # None: every topic the group has start offsets for.
    topics: list[DescribeShareGroupOffsetsRequestTopic] | None = field(
        Array(DescribeShareGroupOffsetsRequestTopic), nullable="0+"
    )


class DescribeShareGroupOffsetsRequest(Request, api_key=90, versions="0-1", flexible="0+"):
    groups: list[DescribeShareGroupOffsetsRequestGroup] = field(Array(DescribeShareGroupOffsetsRequestGroup))


class DescribeShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = field(INT32)
    start_offset: int = field(INT64)
    leader_epoch: int = field(INT32)
    lag: int = field(INT64, "1+", default=-1)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)


class DescribeShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = field(STRING)
    topic_id: uuid.UUID = field(UUID)
    partitions: list[DescribeShareGroupOffsetsResponsePartition] = field(
        Array(DescribeShareGroupOffsetsResponsePartition)
    )


class DescribeShareGroupOffsetsResponseGroup(Struct):
    group_id: str = field(STRING)
    topics: list[DescribeShareGroupOffsetsResponseTopic] = field(
        Array(DescribeShareGroupOffsetsResponseTopic)
    )
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)


class DescribeShareGroupOffsetsResponse(Response, api_key=90, versions="0-1", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    groups: list[DescribeShareGroupOffsetsResponseGroup] = field(
        Array(DescribeShareGroupOffsetsResponseGroup)
    )


class AlterShareGroupOffsetsRequestPartition(Struct):
    partition_index: int = field(INT32)
    start_offset: int = field(INT64)


class AlterShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = field(STRING)
    partitions: list[AlterShareGroupOffsetsRequestPartition] = field(
        Array(AlterShareGroupOffsetsRequestPartition)
    )


class AlterShareGroupOffsetsRequest(Request, api_key=91, versions="0", flexible="0+"):
    group_id: str = field(STRING)
    topics: list[AlterShareGroupOffsetsRequestTopic] = field(Array(AlterShareGroupOffsetsRequestTopic))


class AlterShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)


class AlterShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = field(STRING)
    topic_id: uuid.UUID = field(UUID)
    partitions: list[AlterShareGroupOffsetsResponsePartition] = field(
        Array(AlterShareGroupOffsetsResponsePartition)
    )


class AlterShareGroupOffsetsResponse(Response, api_key=91, versions="0", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)
    responses: list[AlterShareGroupOffsetsResponseTopic] = field(Array(AlterShareGroupOffsetsResponseTopic))


class DeleteShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = field(STRING)


class DeleteShareGroupOffsetsRequest(Request, api_key=92, versions="0", flexible="0+"):
    group_id: str = field(STRING)
    topics: list[DeleteShareGroupOffsetsRequestTopic] = field(Array(DeleteShareGroupOffsetsRequestTopic))


class DeleteShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = field(STRING)
    topic_id: uuid.UUID = field(UUID)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)


class DeleteShareGroupOffsetsResponse(Response, api_key=92, versions="0", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)
    responses: list[DeleteShareGroupOffsetsResponseTopic] = field(Array(DeleteShareGroupOffsetsResponseTopic))


class DeleteGroupsRequest(Request, api_key=42, versions="0-2", flexible="2+"):
    """Deletes empty groups of any type (a share group's state with it)."""

    groups_names: list[str] = field(Array(STRING))


class DeletableGroupResult(Struct):
    group_id: str = field(STRING)
    error_code: int = field(INT16)


class DeleteGroupsResponse(Response, api_key=42, versions="0-2", flexible="2+"):
    throttle_time_ms: int = field(INT32)
    results: list[DeletableGroupResult] = field(Array(DeletableGroupResult))
