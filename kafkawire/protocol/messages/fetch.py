"""Fetch (key 1): records from partition leaders, optionally within an incremental fetch session."""

from __future__ import annotations

import uuid

from kafkawire.protocol.messages.common import LeaderIdAndEpoch, NodeEndpoint
from kafkawire.protocol.schema import (
    INT8,
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


class ReplicaState(Struct):
    replica_id: int = field(INT32, default=-1)
    replica_epoch: int = field(INT64, default=-1)


class FetchPartition(Struct):
    partition: int = field(INT32)
    current_leader_epoch: int = field(INT32, "9+", default=-1)
    fetch_offset: int = field(INT64)
    last_fetched_epoch: int = field(INT32, "12+", default=-1)
    log_start_offset: int = field(INT64, "5+", default=-1)
    partition_max_bytes: int = field(INT32)
    replica_directory_id: uuid.UUID = field(UUID, "17+", tag=0)
    high_watermark: int = field(INT64, "18+", tag=1, default=2**63 - 1)


class FetchTopic(Struct):
    topic: str = field(STRING, "0-12")
    topic_id: uuid.UUID = field(UUID, "13+")
    partitions: list[FetchPartition] = field(Array(FetchPartition))


class ForgottenTopic(Struct):
    topic: str = field(STRING, "7-12")
    topic_id: uuid.UUID = field(UUID, "13+")
    partitions: list[int] = field(Array(INT32), "7+")


class FetchRequest(Request, api_key=1, versions="4-18", flexible="12+"):
    cluster_id: str | None = field(STRING, "12+", nullable="12+", tag=0, default=None)
    # Consumers send -1; brokers replicating send their id (v15+ in replica_state instead).
    replica_id: int = field(INT32, "0-14", default=-1)
    replica_state: ReplicaState = field(ReplicaState, "15+", tag=1)
    max_wait_ms: int = field(INT32)
    min_bytes: int = field(INT32)
    max_bytes: int = field(INT32, "3+", default=0x7FFFFFFF)
    # 0: read uncommitted, 1: read committed.
    isolation_level: int = field(INT8, "4+", default=0)
    session_id: int = field(INT32, "7+", default=0)
    session_epoch: int = field(INT32, "7+", default=-1)
    topics: list[FetchTopic] = field(Array(FetchTopic))
    forgotten_topics_data: list[ForgottenTopic] = field(Array(ForgottenTopic), "7+")
    rack_id: str = field(STRING, "11+", default="")


class EpochEndOffset(Struct):
    epoch: int = field(INT32, default=-1)
    end_offset: int = field(INT64, default=-1)


class SnapshotId(Struct):
    end_offset: int = field(INT64, default=-1)
    epoch: int = field(INT32, default=-1)


class AbortedTransaction(Struct):
    producer_id: int = field(INT64)
    first_offset: int = field(INT64)


class FetchPartitionData(Struct):
    partition_index: int = field(INT32)
    error_code: int = field(INT16)
    high_watermark: int = field(INT64)
    last_stable_offset: int = field(INT64, "4+", default=-1)
    log_start_offset: int = field(INT64, "5+", default=-1)
    diverging_epoch: EpochEndOffset = field(EpochEndOffset, "12+", tag=0)
    current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "12+", tag=1)
    snapshot_id: SnapshotId = field(SnapshotId, "12+", tag=2)
    aborted_transactions: list[AbortedTransaction] | None = field(Array(AbortedTransaction), "4+", nullable="4+")
    preferred_read_replica: int = field(INT32, "11+", default=-1)
    records: bytes | memoryview | None = field(RECORDS, nullable="0+")


class FetchableTopicResponse(Struct):
    topic: str = field(STRING, "0-12")
    topic_id: uuid.UUID = field(UUID, "13+")
    partitions: list[FetchPartitionData] = field(Array(FetchPartitionData))


class FetchResponse(Response, api_key=1, versions="4-18", flexible="12+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16, "7+")
    session_id: int = field(INT32, "7+", default=0)
    responses: list[FetchableTopicResponse] = field(Array(FetchableTopicResponse))
    node_endpoints: list[NodeEndpoint] = field(Array(NodeEndpoint), "16+", tag=0)
