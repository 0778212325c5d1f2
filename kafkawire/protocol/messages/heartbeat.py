"""Heartbeat (key 12): a classic group member stays alive and learns of rebalances."""

from __future__ import annotations

from kafkawire.protocol.schema import INT16, INT32, STRING, Request, Response, field


class HeartbeatRequest(Request, api_key=12, versions="0-4", flexible="4+"):
    group_id: str = field(STRING)
    generation_id: int = field(INT32)
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)


class HeartbeatResponse(Response, api_key=12, versions="0-4", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16)
