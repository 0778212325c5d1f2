"""FindCoordinator (key 10): the broker coordinating a group (key type 0) or a transaction (key type 1)."""

from __future__ import annotations

from kafkawire.protocol.schema import INT8, INT16, INT32, STRING, Array, Request, Response, Struct, field

GROUP_KEY = 0
TRANSACTION_KEY = 1


class FindCoordinatorRequest(Request, api_key=10, versions="0-6", flexible="3+"):
    key: str = field(STRING, "0-3")
    key_type: int = field(INT8, "1+", default=0)
    # v4+ looks up several keys at once.
    coordinator_keys: list[str] = field(Array(STRING), "4+")


class Coordinator(Struct):
    key: str = field(STRING)
    node_id: int = field(INT32)
    host: str = field(STRING)
    port: int = field(INT32)
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+")


class FindCoordinatorResponse(Response, api_key=10, versions="0-6", flexible="3+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16, "0-3")
    error_message: str | None = field(STRING, "1-3", nullable="1-3")
    node_id: int = field(INT32, "0-3")
    host: str = field(STRING, "0-3")
    port: int = field(INT32, "0-3")
    coordinators: list[Coordinator] = field(Array(Coordinator), "4+")
