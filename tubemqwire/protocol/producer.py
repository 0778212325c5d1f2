"""The producer's conversation with the master: register (method 1), heartbeat (2) and close (3).

The requests carry what the Java producer sends; the answers come back as plain values with the broker
and topic strings already parsed. A failed answer (``success`` false) is kept as data, not raised: the
caller decides, with ``tubemqwire.errors.error_for_code``, whether to retry or give up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tubemqwire.protocol.constants import (
    BROKER_CHECKSUM_UNKNOWN,
    CONFIG_ID_UNDEFINED,
    DEFAULT_BROKER_PORT,
    DEFAULT_RPC_TIMEOUT_MS,
    MAX_BOOKED_TOPIC_COUNT,
    MAX_CLIENT_ID_LENGTH,
    MAX_HOST_NAME_LENGTH,
    Method,
    ServiceType,
)
from tubemqwire.protocol.master_service_pb2 import (
    ApprovedClientConfig,
    CloseRequestP2M,
    CloseResponseM2P,
    HeartRequestP2M,
    HeartResponseM2P,
    MasterAuthorizedInfo,
    MasterCertificateInfo,
    RegisterRequestP2M,
    RegisterResponseM2P,
)
from tubemqwire.protocol.metadata import BrokerInfo, TopicInfo, parse_broker_info, parse_topic_info
from tubemqwire.protocol.rpc import encode_request, parse_message


@dataclass(frozen=True, slots=True)
class ProducerMasterAnswer:
    """The common part of the master's register and heartbeat answers to a producer."""

    success: bool
    err_code: int
    err_msg: str
    broker_checksum: int
    # A heartbeat answer leaves it empty when broker_checksum equals the producer's: the list is unchanged.
    brokers: tuple[BrokerInfo, ...] = ()
    topics: tuple[TopicInfo, ...] = ()
    visit_token: int | None = None
    auth_token: str | None = None
    config_id: int | None = None
    max_message_size: int | None = None
    require_auth: bool = False


def _check_identity(client_id: str, host_name: str) -> None:
    if not client_id.strip() or len(client_id) > MAX_CLIENT_ID_LENGTH:
        raise ValueError(f"client_id must be 1 to {MAX_CLIENT_ID_LENGTH} characters")
    if not host_name.strip() or len(host_name) > MAX_HOST_NAME_LENGTH:
        raise ValueError(f"host_name must be 1 to {MAX_HOST_NAME_LENGTH} characters")


def _topic_list(topics: Iterable[str]) -> list[str]:
    names = sorted({topic.strip() for topic in topics if topic.strip()})
    if len(names) > MAX_BOOKED_TOPIC_COUNT:
        raise ValueError(f"a producer may publish at most {MAX_BOOKED_TOPIC_COUNT} topics")
    return names


# -------------------------------------------------------------------------------------------- requests
def register_request(
    client_id: str,
    topics: Iterable[str],
    host_name: str,
    *,
    broker_checksum: int = BROKER_CHECKSUM_UNKNOWN,
    config_id: int = CONFIG_ID_UNDEFINED,
    client_description: str | None = None,
    auth: MasterCertificateInfo | None = None,
) -> RegisterRequestP2M:
    """RegisterRequestP2M as the Java producer fills it.

    ``host_name`` is the producer's IPv4 address; ``client_description`` goes in the field the Java
    client fills with its JDK version (the master only logs it).
    """
    _check_identity(client_id, host_name)
    request = RegisterRequestP2M(
        clientId=client_id,
        topicList=_topic_list(topics),
        brokerCheckSum=broker_checksum,
        hostName=host_name,
        appdConfig=ApprovedClientConfig(configId=config_id),
    )
    if client_description is not None:
        request.jdkVersion = client_description
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def heartbeat_request(
    client_id: str,
    topics: Iterable[str],
    host_name: str,
    *,
    broker_checksum: int,
    config_id: int = CONFIG_ID_UNDEFINED,
    auth: MasterCertificateInfo | None = None,
) -> HeartRequestP2M:
    _check_identity(client_id, host_name)
    request = HeartRequestP2M(
        clientId=client_id,
        brokerCheckSum=broker_checksum,
        hostName=host_name,
        topicList=_topic_list(topics),
        appdConfig=ApprovedClientConfig(configId=config_id),
    )
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def close_request(client_id: str, *, auth: MasterCertificateInfo | None = None) -> CloseRequestP2M:
    request = CloseRequestP2M(clientId=client_id)
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def encode_register(serial: int, request: RegisterRequestP2M, *, timeout_ms: int = DEFAULT_RPC_TIMEOUT_MS) -> bytes:
    """The whole frame of a producer register call to the master."""
    return encode_request(serial, ServiceType.MASTER, Method.MASTER_PRODUCER_REGISTER, request, timeout_ms=timeout_ms)


def encode_heartbeat(serial: int, request: HeartRequestP2M, *, timeout_ms: int = DEFAULT_RPC_TIMEOUT_MS) -> bytes:
    return encode_request(serial, ServiceType.MASTER, Method.MASTER_PRODUCER_HEARTBEAT, request, timeout_ms=timeout_ms)


def encode_close(serial: int, request: CloseRequestP2M, *, timeout_ms: int = DEFAULT_RPC_TIMEOUT_MS) -> bytes:
    return encode_request(serial, ServiceType.MASTER, Method.MASTER_PRODUCER_CLOSE, request, timeout_ms=timeout_ms)


# --------------------------------------------------------------------------------------------- answers
def _tokens(info: MasterAuthorizedInfo | None) -> tuple[int | None, str | None]:
    if info is None:
        return None, None
    auth = info.authAuthorizedToken if info.HasField("authAuthorizedToken") and info.authAuthorizedToken else None
    return info.visitAuthorizedToken, auth


def _config(config: ApprovedClientConfig | None) -> tuple[int | None, int | None]:
    if config is None:
        return None, None
    return config.configId, config.maxMsgSize if config.HasField("maxMsgSize") else None


def _answer(
    response: RegisterResponseM2P | HeartResponseM2P,
    default_broker_port: int,
    *,
    topic_infos: Sequence[str] = (),
    require_auth: bool = False,
) -> ProducerMasterAnswer:
    """What a register and a heartbeat answer share, with a heartbeat's own ``topic_infos`` (parsed after the
    brokers) and ``require_auth``."""
    visit, auth = _tokens(response.authorizedInfo if response.HasField("authorizedInfo") else None)
    config_id, max_size = _config(response.appdConfig if response.HasField("appdConfig") else None)
    return ProducerMasterAnswer(
        success=response.success,
        err_code=response.errCode,
        err_msg=response.errMsg,
        broker_checksum=response.brokerCheckSum,
        brokers=tuple(parse_broker_info(text, default_port=default_broker_port) for text in response.brokerInfos),
        topics=tuple(parse_topic_info(text) for text in topic_infos if text.strip()),
        visit_token=visit,
        auth_token=auth,
        config_id=config_id,
        max_message_size=max_size,
        require_auth=require_auth,
    )


def parse_register_response(data: bytes, *, default_broker_port: int = DEFAULT_BROKER_PORT) -> ProducerMasterAnswer:
    """The master's answer to a producer register (RspResponseBody.data). ProtocolError when malformed."""
    return _answer(parse_message(RegisterResponseM2P, data), default_broker_port)


def parse_heartbeat_response(data: bytes, *, default_broker_port: int = DEFAULT_BROKER_PORT) -> ProducerMasterAnswer:
    """The master's answer to a producer heartbeat, with its topic placements parsed."""
    response = parse_message(HeartResponseM2P, data)
    return _answer(response, default_broker_port, topic_infos=response.topicInfos, require_auth=response.requireAuth)


def parse_close_response(data: bytes) -> tuple[bool, int, str]:
    """``(success, err_code, err_msg)`` of the master's answer to a producer close."""
    response = parse_message(CloseResponseM2P, data)
    return response.success, response.errCode, response.errMsg
