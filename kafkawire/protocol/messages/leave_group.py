"""LeaveGroup (key 13): members leave a classic group without waiting for the session timeout."""

from __future__ import annotations

from kafkawire.protocol.schema import INT16, INT32, STRING, Array, Request, Response, Struct, field


class MemberIdentity(Struct):
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, nullable="0+", default=None)
    reason: str | None = field(STRING, "5+", nullable="5+", default=None)


class LeaveGroupRequest(Request, api_key=13, versions="0-5", flexible="4+"):
    group_id: str = field(STRING)
    member_id: str = field(STRING, "0-2")
    # v3+ removes several members (static membership) at once.
    members: list[MemberIdentity] = field(Array(MemberIdentity), "3+")


class MemberResponse(Struct):
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, nullable="0+")
    error_code: int = field(INT16)


class LeaveGroupResponse(Response, api_key=13, versions="0-5", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16)
    members: list[MemberResponse] = field(Array(MemberResponse), "3+")
