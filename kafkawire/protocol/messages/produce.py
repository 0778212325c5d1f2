"""Produce (key 0): record batches to partition leaders."""

from __future__ import annotations

import uuid

from kafkawire.protocol.messages.common import LeaderIdAndEpoch, NodeEndpoint
from kafkawire.protocol.schema import (
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    Array,
    Request,
    Response,
    Struct,
    field,
)


class PartitionProduceData(Struct):
    index: int = field(INT32)
    records: bytes | bytearray | memoryview | None = field(RECORDS, nullable="0+")


class TopicProduceData(Struct):
    name: str = field(STRING, "0-12")
    topic_id: uuid.UUID = field(UUID, "13+")
    partition_data: list[PartitionProduceData] = field(Array(PartitionProduceData))


class ProduceRequest(Request, api_key=0, versions="3-13", flexible="9+"):
    transactional_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    # 0: no response at all, 1: leader only, -1: all in-sync replicas.
    acks: int = field(INT16)
    timeout_ms: int = field(INT32)
    topic_data: list[TopicProduceData] = field(Array(TopicProduceData))


class BatchIndexAndErrorMessage(Struct):
    batch_index: int = field(INT32)
    batch_index_error_message: str | None = field(STRING, nullable="0+", default=None)


class PartitionProduceResponse(Struct):
    index: int = field(INT32)
    error_code: int = field(INT16)
    base_offset: int = field(INT64)
    log_append_time_ms: int = field(INT64, "2+", default=-1)
    log_start_offset: int = field(INT64, "5+", default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = field(Array(BatchIndexAndErrorMessage), "8+")
    error_message: str | None = field(STRING, "8+", nullable="8+", default=None)
    current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "10+", tag=0)


class TopicProduceResponse(Struct):
    name: str = field(STRING, "0-12")
    topic_id: uuid.UUID = field(UUID, "13+")
    partition_responses: list[PartitionProduceResponse] = field(Array(PartitionProduceResponse))


class ProduceResponse(Response, api_key=0, versions="3-13", flexible="9+"):
    responses: list[TopicProduceResponse] = field(Array(TopicProduceResponse))
    throttle_time_ms: int = field(INT32, "1+", default=0)
    node_endpoints: list[NodeEndpoint] = field(Array(NodeEndpoint), "10+", tag=0)
