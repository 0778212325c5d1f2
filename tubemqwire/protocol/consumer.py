"""The consumer's conversation with the master under server-side balancing: register (method 4),
heartbeat (5) and close (6).

The master answers a heartbeat with at most one rebalance instruction (``EventProto``); the consumer
carries it out and sends it back in a later heartbeat with its status, which is how the master learns
that the instruction is done. Answers come back as plain values; a failed answer is data, not an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tubemqwire.protocol.constants import (
    ARRAY_SEP,
    DEFAULT_BROKER_PORT,
    MAX_BOOKED_TOPIC_COUNT,
    MAX_CLIENT_ID_LENGTH,
    MAX_HOST_NAME_LENGTH,
    SEGMENT_SEP,
    EventStatus,
)
from tubemqwire.protocol.master_service_pb2 import (
    CloseRequestC2M,
    CloseResponseM2C,
    EventProto,
    HeartRequestC2M,
    HeartResponseM2C,
    MasterAuthorizedInfo,
    MasterCertificateInfo,
    RegisterRequestC2M,
    RegisterResponseM2C,
)
from tubemqwire.protocol.metadata import SubscribeInfo, parse_subscribe_info
from tubemqwire.protocol.rpc import parse_message


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """One rebalance instruction: claim (CONNECT) or release (DISCONNECT) the partitions listed."""

    rebalance_id: int
    event_type: int
    status: int
    subscriptions: tuple[SubscribeInfo, ...] = ()

    def with_status(self, status: int) -> RebalanceEvent:
        return RebalanceEvent(self.rebalance_id, self.event_type, status, self.subscriptions)


@dataclass(frozen=True, slots=True)
class ConsumerMasterAnswer:
    success: bool
    err_code: int
    err_msg: str
    event: RebalanceEvent | None = None
    visit_token: int | None = None
    auth_token: str | None = None
    require_auth: bool = False


# -------------------------------------------------------------------------------------------- requests
def _check_identity(client_id: str, group: str) -> None:
    if not client_id.strip() or len(client_id) > MAX_CLIENT_ID_LENGTH:
        raise ValueError(f"client_id must be 1 to {MAX_CLIENT_ID_LENGTH} characters")
    if not group.strip():
        raise ValueError("group must not be blank")


def topic_conditions(filters: Mapping[str, Iterable[str]]) -> list[str]:
    """``topic#type1,type2`` for every topic consumed with a message-type filter."""
    conditions = []
    for topic in sorted(filters):
        types = sorted(set(filters[topic]))
        if types:
            conditions.append(f"{topic}{SEGMENT_SEP}{ARRAY_SEP.join(types)}")
    return conditions


def register_request(
    client_id: str,
    group: str,
    host_name: str,
    topics: Iterable[str],
    *,
    session_time_ms: int,
    subscriptions: Iterable[SubscribeInfo] = (),
    filters: Mapping[str, Iterable[str]] | None = None,
    client_description: str | None = None,
    auth: MasterCertificateInfo | None = None,
) -> RegisterRequestC2M:
    """RegisterRequestC2M of a consumer balanced by the server.

    ``subscriptions`` are the partitions this consumer already holds (on a re-registration), so the
    master does not hand them to someone else.
    """
    _check_identity(client_id, group)
    if not host_name.strip() or len(host_name) > MAX_HOST_NAME_LENGTH:
        raise ValueError(f"host_name must be 1 to {MAX_HOST_NAME_LENGTH} characters")
    names = sorted(set(topics))
    if not names or len(names) > MAX_BOOKED_TOPIC_COUNT:
        raise ValueError(f"a consumer subscribes 1 to {MAX_BOOKED_TOPIC_COUNT} topics")
    request = RegisterRequestC2M(
        clientId=client_id,
        groupName=group,
        hostName=host_name,
        topicList=names,
        subscribeInfo=[str(info) for info in subscriptions],
        topicCondition=topic_conditions(filters or {}),
        requireBound=False,
        sessionTime=session_time_ms,
    )
    if client_description is not None:
        request.jdkVersion = client_description
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def event_proto(event: RebalanceEvent) -> EventProto:
    return EventProto(
        rebalanceId=event.rebalance_id,
        opType=event.event_type,
        status=event.status,
        subscribeInfo=[str(info) for info in event.subscriptions],
    )


def heartbeat_request(
    client_id: str,
    group: str,
    *,
    subscriptions: Iterable[SubscribeInfo] | None = None,
    event: RebalanceEvent | None = None,
    auth: MasterCertificateInfo | None = None,
) -> HeartRequestC2M:
    """HeartRequestC2M; ``subscriptions`` (when given) reports the partitions held, ``event`` the outcome
    of the last instruction."""
    _check_identity(client_id, group)
    request = HeartRequestC2M(
        clientId=client_id,
        groupName=group,
        reportSubscribeInfo=subscriptions is not None,
        subscribeInfo=[str(info) for info in subscriptions or ()],
    )
    if event is not None:
        request.event.CopyFrom(event_proto(event))
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def close_request(client_id: str, group: str, *, auth: MasterCertificateInfo | None = None) -> CloseRequestC2M:
    _check_identity(client_id, group)
    request = CloseRequestC2M(clientId=client_id, groupName=group)
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


# --------------------------------------------------------------------------------------------- answers
def _tokens(response: RegisterResponseM2C | HeartResponseM2C) -> tuple[int | None, str | None]:
    if not response.HasField("authorizedInfo"):
        return None, None
    info: MasterAuthorizedInfo = response.authorizedInfo
    auth = info.authAuthorizedToken if info.HasField("authAuthorizedToken") and info.authAuthorizedToken else None
    return info.visitAuthorizedToken, auth


def parse_event(proto: EventProto, *, default_port: int = DEFAULT_BROKER_PORT) -> RebalanceEvent:
    """An instruction from the master; ProtocolError when a subscribe-info string is malformed."""
    return RebalanceEvent(
        proto.rebalanceId,
        proto.opType,
        proto.status if proto.HasField("status") else EventStatus.TODO,
        tuple(parse_subscribe_info(text, default_port=default_port) for text in proto.subscribeInfo),
    )


def parse_register_response(data: bytes) -> ConsumerMasterAnswer:
    response = parse_message(RegisterResponseM2C, data)
    visit, auth = _tokens(response)
    return ConsumerMasterAnswer(response.success, response.errCode, response.errMsg, None, visit, auth)


def parse_heartbeat_response(data: bytes, *, default_port: int = DEFAULT_BROKER_PORT) -> ConsumerMasterAnswer:
    """The master's heartbeat answer; ``event`` is set only for a real instruction (rebalance id > 0)."""
    response = parse_message(HeartResponseM2C, data)
    visit, auth = _tokens(response)
    event = None
    if response.HasField("event") and response.event.rebalanceId > 0:
        event = parse_event(response.event, default_port=default_port)
    return ConsumerMasterAnswer(
        response.success,
        response.errCode,
        response.errMsg,
        event,
        visit,
        auth,
        response.requireAuth,
    )


def parse_close_response(data: bytes) -> tuple[bool, int, str]:
    response = parse_message(CloseResponseM2C, data)
    return response.success, response.errCode, response.errMsg
