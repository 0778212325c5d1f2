"""Group listing and description: DescribeGroups (15), ListGroups (16)."""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, Array, Request, Response, Struct, field

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


class DescribeGroupsRequest(Request, api_key=15, versions="0-6", flexible="5+"):
    groups: list[str] = field(Array(STRING))
    include_authorized_operations: bool = field(BOOL, "3+")


class DescribedGroupMember(Struct):
    member_id: str = field(STRING)
    group_instance_id: str | None = field(STRING, "4+", nullable="4+", default=None)
    client_id: str = field(STRING)
    client_host: str = field(STRING)
    member_metadata: bytes = field(BYTES)
    member_assignment: bytes = field(BYTES)


class DescribedGroup(Struct):
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, "6+", nullable="6+", default=None)
    group_id: str = field(STRING)
    group_state: str = field(STRING)
    protocol_type: str = field(STRING)
    protocol_data: str = field(STRING)
    members: list[DescribedGroupMember] = field(Array(DescribedGroupMember))
    authorized_operations: int = field(INT32, "3+", default=AUTHORIZED_OPERATIONS_OMITTED)


class DescribeGroupsResponse(Response, api_key=15, versions="0-6", flexible="5+"):
    throttle_time_ms: int = field(INT32, "1+")
    groups: list[DescribedGroup] = field(Array(DescribedGroup))


class ListGroupsRequest(Request, api_key=16, versions="0-5", flexible="3+"):
    states_filter: list[str] = field(Array(STRING), "4+")
    types_filter: list[str] = field(Array(STRING), "5+")


class ListedGroup(Struct):
    group_id: str = field(STRING)
    protocol_type: str = field(STRING)
    group_state: str = field(STRING, "4+")
    group_type: str = field(STRING, "5+")


class ListGroupsResponse(Response, api_key=16, versions="0-5", flexible="3+"):
    throttle_time_ms: int = field(INT32, "1+")
    error_code: int = field(INT16)
    groups: list[ListedGroup] = field(Array(ListedGroup))
