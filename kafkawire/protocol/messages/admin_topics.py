"""Topic administration: CreateTopics (19), DeleteTopics (20), CreatePartitions (37), DeleteRecords (21)."""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import (
    BOOL,
    INT8,
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


class CreatableReplicaAssignment(Struct):
    partition_index: int = field(INT32)
    broker_ids: list[int] = field(Array(INT32))


class CreatableTopicConfig(Struct):
    name: str = field(STRING)
    value: str | None = field(STRING, nullable="0+")


class CreatableTopic(Struct):
    name: str = field(STRING)
    # -1 takes the broker default (as does replication_factor -1), and so do empty assignments.
    num_partitions: int = field(INT32)
    replication_factor: int = field(INT16)
    assignments: list[CreatableReplicaAssignment] = field(Array(CreatableReplicaAssignment))
    configs: list[CreatableTopicConfig] = field(Array(CreatableTopicConfig))


class CreateTopicsRequest(Request, api_key=19, versions="2-7", flexible="5+"):
    topics: list[CreatableTopic] = field(Array(CreatableTopic))
    timeout_ms: int = field(INT32, default=60000)
    validate_only: bool = field(BOOL, "1+", default=False)


class CreatableTopicConfigs(Struct):
    name: str = field(STRING)
    value: str | None = field(STRING, nullable="0+")
    read_only: bool = field(BOOL)
    config_source: int = field(INT8, default=-1)
    is_sensitive: bool = field(BOOL)


class CreatableTopicResult(Struct):
    name: str = field(STRING)
    topic_id: uuid.UUID = field(UUID, "7+")
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, "1+", nullable="0+")
    topic_config_error_code: int = field(INT16, "5+", tag=0)
    num_partitions: int = field(INT32, "5+", default=-1)
    replication_factor: int = field(INT16, "5+", default=-1)
    configs: list[CreatableTopicConfigs] | None = field(Array(CreatableTopicConfigs), "5+", nullable="5+")


class CreateTopicsResponse(Response, api_key=19, versions="2-7", flexible="5+"):
    throttle_time_ms: int = field(INT32, "2+")
    topics: list[CreatableTopicResult] = field(Array(CreatableTopicResult))


class DeleteTopicState(Struct):
    name: str | None = field(STRING, nullable="0+", default=None)
    topic_id: uuid.UUID = field(UUID)


class DeleteTopicsRequest(Request, api_key=20, versions="1-6", flexible="4+"):
    topics: list[DeleteTopicState] = field(Array(DeleteTopicState), "6+")
    topic_names: list[str] = field(Array(STRING), "0-5")
    timeout_ms: int = field(INT32)


class DeletableTopicResult(Struct):
    name: str | None = field(STRING, nullable="6+")
    topic_id: uuid.UUID = field(UUID, "6+")
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, "5+", nullable="5+", default=None)


class DeleteTopicsResponse(Response, api_key=20, versions="1-6", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+")
    responses: list[DeletableTopicResult] = field(Array(DeletableTopicResult))


class CreatePartitionsAssignment(Struct):
    broker_ids: list[int] = field(Array(INT32))


class CreatePartitionsTopic(Struct):
    name: str = field(STRING)
    # The new total number of partitions, not the number added.
    count: int = field(INT32)
    assignments: list[CreatePartitionsAssignment] | None = field(Array(CreatePartitionsAssignment), nullable="0+")


class CreatePartitionsRequest(Request, api_key=37, versions="0-3", flexible="2+"):
    topics: list[CreatePartitionsTopic] = field(Array(CreatePartitionsTopic))
    timeout_ms: int = field(INT32)
    validate_only: bool = field(BOOL)


class CreatePartitionsTopicResult(Struct):
    name: str = field(STRING)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)


class CreatePartitionsResponse(Response, api_key=37, versions="0-3", flexible="2+"):
    throttle_time_ms: int = field(INT32)
    results: list[CreatePartitionsTopicResult] = field(Array(CreatePartitionsTopicResult))


class DeleteRecordsPartition(Struct):
    partition_index: int = field(INT32)
    # Records before this offset are deleted; -1 means the high watermark.
    offset: int = field(INT64)


class DeleteRecordsTopic(Struct):
    name: str = field(STRING)
    partitions: list[DeleteRecordsPartition] = field(Array(DeleteRecordsPartition))


class DeleteRecordsRequest(Request, api_key=21, versions="0-2", flexible="2+"):
    topics: list[DeleteRecordsTopic] = field(Array(DeleteRecordsTopic))
    timeout_ms: int = field(INT32)


class DeleteRecordsPartitionResult(Struct):
    partition_index: int = field(INT32)
    low_watermark: int = field(INT64)
    error_code: int = field(INT16)


class DeleteRecordsTopicResult(Struct):
    name: str = field(STRING)
    partitions: list[DeleteRecordsPartitionResult] = field(Array(DeleteRecordsPartitionResult))


class DeleteRecordsResponse(Response, api_key=21, versions="0-2", flexible="2+"):
    throttle_time_ms: int = field(INT32)
    topics: list[DeleteRecordsTopicResult] = field(Array(DeleteRecordsTopicResult))
