"""Requests to a TubeMQ broker and their answers: send (method 13), and the consumer's register /
unregister (15), heartbeat (16), get message (17) and commit (18).

Builders return the protobuf request; parsers return plain values. A failed answer (``success`` false) is
data, not an exception: the caller decides what its ``err_code`` means in context (404 from a fetch is
"no data yet", from elsewhere it is an error).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mqwire.common.errors import ProtocolError
from tubemqwire.protocol.broker_service_pb2 import (
    AuthorizedInfo,
    CommitOffsetRequestC2B,
    CommitOffsetResponseB2C,
    GetMessageRequestC2B,
    GetMessageResponseB2C,
    HeartBeatRequestC2B,
    HeartBeatResponseB2C,
    RegisterRequestC2B,
    RegisterResponseB2C,
    SendMessageRequestP2B,
    SendMessageResponseB2P,
    TransferedMessage,
)
from tubemqwire.protocol.constants import (
    ATTR_SEP,
    CHECKSUM_NOT_SET,
    CONFIG_ID_UNDEFINED,
    DEFAULT_BROKER_PORT,
    OpType,
)
from tubemqwire.protocol.metadata import PartitionInfo, parse_partition
from tubemqwire.protocol.rpc import parse_message

# RegisterRequestC2B.readStatus: where a group without a stored offset starts, or (2) always the end.
READ_NORMAL = 0
READ_FROM_MAX = 1
READ_FROM_MAX_ALWAYS = 2
# The same field on an unregister says whether the last fetched batch counts as consumed (0) or not (1).
UNREGISTER_CONSUMED = 0
UNREGISTER_NOT_CONSUMED = 1
# The visit token before the master has handed one out.
VISIT_TOKEN_UNDEFINED = CONFIG_ID_UNDEFINED


def authorized_info(visit_token: int, auth_token: str | None = None) -> AuthorizedInfo:
    """The token pair shown to brokers: the master's visit token and, with authentication, the signature."""
    info = AuthorizedInfo(visitAuthorizedToken=visit_token)
    if auth_token:
        info.authAuthorizedToken = auth_token
    return info


# ----------------------------------------------------------------------------------------------- produce
@dataclass(frozen=True, slots=True)
class SendAnswer:
    success: bool
    err_code: int
    err_msg: str
    message_id: int | None = None
    append_time: int | None = None
    append_offset: int | None = None
    require_auth: bool = False


def send_message_request(
    client_id: str,
    topic: str,
    partition_id: int,
    payload: bytes,
    flag: int,
    sent_addr: int,
    *,
    msg_type: str | None = None,
    msg_time: str | None = None,
    auth: AuthorizedInfo | None = None,
    checksum: int = CHECKSUM_NOT_SET,
) -> SendMessageRequestP2B:
    """SendMessageRequestP2B for an encoded payload (``messages.encode_payload``).

    ``msg_type`` goes in its own field as well as in the attribute: the broker indexes the type's hash
    for server-side filtering.
    """
    request = SendMessageRequestP2B(
        clientId=client_id,
        topicName=topic,
        partitionId=partition_id,
        data=payload,
        flag=flag,
        checkSum=checksum,
        sentAddr=sent_addr,
    )
    if msg_type:
        request.msgType = msg_type
    if msg_time:
        request.msgTime = msg_time
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def parse_send_response(data: bytes) -> SendAnswer:
    response = parse_message(SendMessageResponseB2P, data)
    message_id = response.messageId if response.HasField("messageId") else None
    if response.success and message_id is None:
        # Brokers before 1.0 put the message id in errMsg.
        text = response.errMsg.strip()
        if text.lstrip("-").isdigit():
            message_id = int(text)
    return SendAnswer(
        success=response.success,
        err_code=response.errCode,
        err_msg=response.errMsg,
        message_id=message_id,
        append_time=response.appendTime if response.HasField("appendTime") else None,
        append_offset=response.appendOffset if response.HasField("appendOffset") else None,
        require_auth=response.requireAuth,
    )


# -------------------------------------------------------------------------------------- partition claim
@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """The answer to a partition register or a commit: the group's offset and the partition's end."""

    success: bool
    err_code: int
    err_msg: str
    curr_offset: int | None = None
    max_offset: int | None = None


def register_request(
    client_id: str,
    group: str,
    topic: str,
    partition_id: int,
    *,
    read_status: int = READ_NORMAL,
    filters: Iterable[str] = (),
    auth: AuthorizedInfo | None = None,
    offset: int | None = None,
) -> RegisterRequestC2B:
    """Claim a partition for this consumer (opType 31). ``filters`` are the message types wanted."""
    request = RegisterRequestC2B(
        opType=OpType.REGISTER,
        clientId=client_id,
        groupName=group,
        topicName=topic,
        partitionId=partition_id,
        readStatus=read_status,
        filterCondStr=sorted(set(filters)),
    )
    if offset is not None:
        request.currOffset = offset
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def unregister_request(
    client_id: str,
    group: str,
    topic: str,
    partition_id: int,
    *,
    last_pack_consumed: bool,
    auth: AuthorizedInfo | None = None,
) -> RegisterRequestC2B:
    """Release a partition (opType 32); the broker commits the last batch when it was consumed."""
    request = RegisterRequestC2B(
        opType=OpType.UNREGISTER,
        clientId=client_id,
        groupName=group,
        topicName=topic,
        partitionId=partition_id,
        readStatus=UNREGISTER_CONSUMED if last_pack_consumed else UNREGISTER_NOT_CONSUMED,
    )
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def parse_register_response(data: bytes) -> OffsetAnswer:
    response = parse_message(RegisterResponseB2C, data)
    return OffsetAnswer(
        response.success,
        response.errCode,
        response.errMsg,
        response.currOffset if response.HasField("currOffset") else None,
        response.maxOffset if response.HasField("maxOffset") else None,
    )


# --------------------------------------------------------------------------------------------- heartbeat
@dataclass(frozen=True, slots=True)
class BrokerHeartbeatAnswer:
    success: bool
    err_code: int
    err_msg: str
    # (errCode, partition) for every partition the broker no longer counts as ours.
    failures: tuple[tuple[int, PartitionInfo], ...] = ()
    require_auth: bool = False


def heartbeat_request(
    client_id: str,
    group: str,
    partitions: Iterable[PartitionInfo],
    *,
    read_status: int = READ_NORMAL,
    auth: AuthorizedInfo | None = None,
) -> HeartBeatRequestC2B:
    request = HeartBeatRequestC2B(
        clientId=client_id,
        groupName=group,
        readStatus=read_status,
        partitionInfo=[str(partition) for partition in partitions],
    )
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def parse_failure_info(text: str, *, default_port: int = DEFAULT_BROKER_PORT) -> tuple[int, PartitionInfo]:
    """``errCode:brokerId:host:port#topic:partitionId`` of a broker heartbeat answer."""
    code, sep, rest = text.partition(ATTR_SEP)
    if not sep or not code.lstrip("-").isdigit() or len(code) > 11:
        raise ProtocolError(f"heartbeat failure {text!r} is not errCode:partition")
    return int(code), parse_partition(rest, default_port=default_port)


def parse_heartbeat_response(data: bytes, *, default_port: int = DEFAULT_BROKER_PORT) -> BrokerHeartbeatAnswer:
    response = parse_message(HeartBeatResponseB2C, data)
    failures: tuple[tuple[int, PartitionInfo], ...] = ()
    if response.hasPartFailure:
        failures = tuple(parse_failure_info(text, default_port=default_port) for text in response.failureInfo)
    return BrokerHeartbeatAnswer(
        response.success, response.errCode, response.errMsg, failures, response.requireAuth
    )


# ------------------------------------------------------------------------------------------------- fetch
@dataclass(frozen=True, slots=True)
class FetchAnswer:
    success: bool
    err_code: int
    err_msg: str
    messages: tuple[TransferedMessage, ...] = ()
    curr_offset: int | None = None
    max_offset: int | None = None
    # How long the broker asks us to wait before the next fetch (speed limit), in milliseconds.
    min_limit_time: int = 0
    require_slow: bool = False


def get_message_request(
    client_id: str,
    group: str,
    topic: str,
    partition_id: int,
    *,
    last_pack_consumed: bool,
    escape_flow_control: bool = False,
) -> GetMessageRequestC2B:
    """Fetch the next batch. ``last_pack_consumed`` false makes the broker serve the last batch again."""
    return GetMessageRequestC2B(
        clientId=client_id,
        partitionId=partition_id,
        groupName=group,
        topicName=topic,
        lastPackConsumed=last_pack_consumed,
        manualCommitOffset=False,
        escFlowCtrl=escape_flow_control,
    )


def parse_get_message_response(data: bytes) -> FetchAnswer:
    response = parse_message(GetMessageResponseB2C, data)
    return FetchAnswer(
        success=response.success,
        err_code=response.errCode,
        err_msg=response.errMsg,
        messages=tuple(response.messages),
        curr_offset=response.currOffset if response.HasField("currOffset") else None,
        max_offset=response.maxOffset if response.HasField("maxOffset") else None,
        min_limit_time=max(0, response.minLimitTime),
        require_slow=response.requireSlow,
    )


# ------------------------------------------------------------------------------------------------ commit
def commit_request(
    client_id: str, group: str, topic: str, partition_id: int, *, last_pack_consumed: bool = True
) -> CommitOffsetRequestC2B:
    """Confirm (or, with ``last_pack_consumed`` false, give back) the batch fetched last."""
    return CommitOffsetRequestC2B(
        clientId=client_id,
        topicName=topic,
        partitionId=partition_id,
        groupName=group,
        lastPackConsumed=last_pack_consumed,
    )


def parse_commit_response(data: bytes) -> OffsetAnswer:
    response = parse_message(CommitOffsetResponseB2C, data)
    return OffsetAnswer(
        response.success,
        response.errCode,
        response.errMsg,
        response.currOffset if response.HasField("currOffset") else None,
        response.maxOffset if response.HasField("maxOffset") else None,
    )
