"""JoinGroup (key 11): the classic group protocol's first step; the leader receives every member's metadata."""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, Array, Request, Response, Struct, field


class JoinGroupRequestProtocol(Struct):
    name: str = field(STRING)
    metadata: bytes = field(BYTES)


class JoinGroupRequest(Request, api_key=11, versions="0-9", flexible="6+"):
    group_id: str = field(STRING)
    session_timeout_ms: int = field(INT32)
    rebalance_timeout_ms: int = field(INT32, "1+", default=-1)
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, "5+", nullable="5+", default=None)
    protocol_type: str = field(STRING)
    protocols: list[JoinGroupRequestProtocol] = field(Array(JoinGroupRequestProtocol))
    reason: str | None = field(STRING, "8+", nullable="8+", default=None)


class JoinGroupResponseMember(Struct):
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, "5+", nullable="5+", default=None)
    metadata: bytes = field(BYTES)


class JoinGroupResponse(Response, api_key=11, versions="0-9", flexible="6+"):
    throttle_time_ms: int = field(INT32, "2+")
    error_code: int = field(INT16)
    generation_id: int = field(INT32, default=-1)
    protocol_type: str | None = field(STRING, "7+", nullable="7+", default=None)
    protocol_name: str | None = field(STRING, nullable="7+")
    leader: str = field(STRING)
    skip_assignment: bool = field(BOOL, "9+", default=False)
    member_id: str = field(STRING)
    members: list[JoinGroupResponseMember] = field(Array(JoinGroupResponseMember))
