"""SyncGroup (key 14): the leader hands out assignments; every member receives its own."""

from __future__ import annotations

from kafkawire.protocol.schema import BYTES, INT16, INT32, STRING, Array, Request, Response, Struct, field


class SyncGroupRequestAssignment(Struct):
    member_id: str = field(STRING)
    assignment: bytes = field(BYTES)


class SyncGroupRequest(Request, api_key=14, versions="0-5", flexible="4+"):
    group_id: str = field(STRING)
    generation_id: int = field(INT32)
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    protocol_type: str | None = field(STRING, "5+", nullable="5+", default=None)
    protocol_name: str | None = field(STRING, "5+", nullable="5+", default=None)
    assignments: list[SyncGroupRequestAssignment] = field(Array(SyncGroupRequestAssignment))


class SyncGroupResponse(Response, api_key=14, versions="0-5", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16)
    protocol_type: str | None = field(STRING, "5+", nullable="5+", default=None)
    protocol_name: str | None = field(STRING, "5+", nullable="5+", default=None)
    assignment: bytes = field(BYTES)
