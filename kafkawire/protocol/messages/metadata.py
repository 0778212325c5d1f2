"""Metadata (key 3): brokers, topics, partitions and their leaders."""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import BOOL, INT16, INT32, STRING, UUID, Array, Request, Response, Struct, field

# Authorized operations are only filled in when asked for; this value means "not requested".
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


class MetadataRequestTopic(Struct):
    topic_id: uuid.UUID = field(UUID, "10+")
    name: str | None = field(STRING, nullable="10+")


class MetadataRequest(Request, api_key=3, versions="0-13", flexible="9+"):
    # None asks for every topic (v1+); an empty list asks for none.
    topics: list[MetadataRequestTopic] | None = field(Array(MetadataRequestTopic), nullable="1+")
    allow_auto_topic_creation: bool = field(BOOL, "4+", default=True)
    include_cluster_authorized_operations: bool = field(BOOL, "8-10")
    include_topic_authorized_operations: bool = field(BOOL, "8+")


class MetadataResponseBroker(Struct):
    node_id: int = field(INT32)
    host: str = field(STRING)
    port: int = field(INT32)
    rack: str | None = field(STRING, "1+", nullable="1+", default=None)


class MetadataResponsePartition(Struct):
    error_code: int = field(INT16)
    partition_index: int = field(INT32)
    leader_id: int = field(INT32)
    leader_epoch: int = field(INT32, "7+", default=-1)
    replica_nodes: list[int] = field(Array(INT32))
    isr_nodes: list[int] = field(Array(INT32))
    offline_replicas: list[int] = field(Array(INT32), "5+")


class MetadataResponseTopic(Struct):
    error_code: int = field(INT16)
    name: str | None = field(STRING, nullable="12+")
    topic_id: uuid.UUID = field(UUID, "10+")
    is_internal: bool = field(BOOL, "1+", default=False)
    partitions: list[MetadataResponsePartition] = field(Array(MetadataResponsePartition))
    topic_authorized_operations: int = field(INT32, "8+", default=AUTHORIZED_OPERATIONS_OMITTED)


class MetadataResponse(Response, api_key=3, versions="0-13", flexible="9+"):
    throttle_time_ms: int = field(INT32, "3+")
    brokers: list[MetadataResponseBroker] = field(Array(MetadataResponseBroker))
    cluster_id: str | None = field(STRING, "2+", nullable="2+", default=None)
    controller_id: int = field(INT32, "1+", default=-1)
    topics: list[MetadataResponseTopic] = field(Array(MetadataResponseTopic))
    cluster_authorized_operations: int = field(INT32, "8-10", default=AUTHORIZED_OPERATIONS_OMITTED)
    error_code: int = field(INT16, "13+")
