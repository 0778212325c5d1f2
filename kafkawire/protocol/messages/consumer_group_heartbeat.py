"""ConsumerGroupHeartbeat (key 68): the KIP-848 consumer group protocol, one request for join, sync and beat.

Fields that did not change since the last heartbeat are sent as null (or -1) to keep requests small.
"""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import INT16, INT32, STRING, UUID, Array, Request, Response, Struct, field


class ConsumerGroupTopicPartitions(Struct):
    topic_id: uuid.UUID = field(UUID)
    partitions: list[int] = field(Array(INT32))


class ConsumerGroupHeartbeatRequest(Request, api_key=68, versions="0-1", flexible="0+"):
    group_id: str = field(STRING)
    # Empty on the first heartbeat of v0; from v1 the client generates it (a UUID string).
    member_id: str = field(STRING)
    # 0 joins, -1 leaves, -2 leaves as a static member; otherwise the epoch last received.
    member_epoch: int = field(INT32)
    instance_id: str | None = field(STRING, nullable="0+", default=None)
    rack_id: str | None = field(STRING, nullable="0+", default=None)
    rebalance_timeout_ms: int = field(INT32, default=-1)
    subscribed_topic_names: list[str] | None = field(Array(STRING), nullable="0+", default=None)
    subscribed_topic_regex: str | None = field(STRING, "1+", nullable="1+", default=None)
    server_assignor: str | None = field(STRING, nullable="0+", default=None)
    topic_partitions: list[ConsumerGroupTopicPartitions] | None = field(
        Array(ConsumerGroupTopicPartitions), nullable="0+", default=None
    )


class ConsumerGroupAssignment(Struct):
    topic_partitions: list[ConsumerGroupTopicPartitions] = field(Array(ConsumerGroupTopicPartitions))


class ConsumerGroupHeartbeatResponse(Response, api_key=68, versions="0-1", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)
    member_id: str | None = field(STRING, nullable="0+", default=None)
    member_epoch: int = field(INT32)
    heartbeat_interval_ms: int = field(INT32)
    # None when the assignment did not change.
    assignment: ConsumerGroupAssignment | None = field(ConsumerGroupAssignment, nullable="0+", default=None)
