"""DescribeCluster (key 60): cluster id, controller and brokers, without topic metadata."""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, INT8, INT16, INT32, STRING, Array, Request, Response, Struct, field

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# endpoint_type values (v1+): brokers or controllers.
BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2


class DescribeClusterRequest(Request, api_key=60, versions="0-2", flexible="0+"):
    include_cluster_authorized_operations: bool = field(BOOL)
    endpoint_type: int = field(INT8, "1+", default=BROKER_ENDPOINTS)
    include_fenced_brokers: bool = field(BOOL, "2+")


class DescribeClusterBroker(Struct):
    broker_id: int = field(INT32)
    host: str = field(STRING)
    port: int = field(INT32)
    rack: str | None = field(STRING, nullable="0+", default=None)
    is_fenced: bool = field(BOOL, "2+")


class DescribeClusterResponse(Response, api_key=60, versions="0-2", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+", default=None)
    endpoint_type: int = field(INT8, "1+", default=BROKER_ENDPOINTS)
    cluster_id: str = field(STRING)
    controller_id: int = field(INT32, default=-1)
    brokers: list[DescribeClusterBroker] = field(Array(DescribeClusterBroker))
    cluster_authorized_operations: int = field(INT32, default=AUTHORIZED_OPERATIONS_OMITTED)
