"""ListOffsets (key 2): the offset for a timestamp, or the earliest / latest offset of partitions."""

from __future__ import annotations

from kafkawire.protocol.schema import INT8, INT16, INT32, INT64, STRING, Array, Request, Response, Struct, field

# Special timestamps of ListOffsetsPartition.timestamp.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


class ListOffsetsPartition(Struct):
    partition_index: int = field(INT32)
    current_leader_epoch: int = field(INT32, "4+", default=-1)
    timestamp: int = field(INT64)


class ListOffsetsTopic(Struct):
    name: str = field(STRING)
    partitions: list[ListOffsetsPartition] = field(Array(ListOffsetsPartition))


class ListOffsetsRequest(Request, api_key=2, versions="1-11", flexible="6+"):
    replica_id: int = field(INT32, default=-1)
    isolation_level: int = field(INT8, "2+")
    topics: list[ListOffsetsTopic] = field(Array(ListOffsetsTopic))
    timeout_ms: int = field(INT32, "10+")


class ListOffsetsPartitionResponse(Struct):
    partition_index: int = field(INT32)
    error_code: int = field(INT16)
    timestamp: int = field(INT64, "1+", default=-1)
    offset: int = field(INT64, "1+", default=-1)
    leader_epoch: int = field(INT32, "4+", default=-1)


class ListOffsetsTopicResponse(Struct):
    name: str = field(STRING)
    partitions: list[ListOffsetsPartitionResponse] = field(Array(ListOffsetsPartitionResponse))


class ListOffsetsResponse(Response, api_key=2, versions="1-11", flexible="6+"):
    throttle_time_ms: int = field(INT32, "2+")
    topics: list[ListOffsetsTopicResponse] = field(Array(ListOffsetsTopicResponse))
