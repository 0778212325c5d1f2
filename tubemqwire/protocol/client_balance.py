"""The consumer's conversation with the master under client-side balancing: register (method 20),
heartbeat (21) and partition metadata (22); close is the same as for server-side balancing (method 6).

The master assigns nothing here: it tells the consumer which brokers and partitions exist (each list
versioned by an id, sent again only when the id the consumer reports is out of date), and the consumer
claims partitions at their brokers itself. Answers come back as plain values; a failed answer is data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tubemqwire.protocol.constants import (
    DEFAULT_BROKER_PORT,
    MAX_BOOKED_TOPIC_COUNT,
    MAX_HOST_NAME_LENGTH,
    ErrorCode,
)
from tubemqwire.protocol.consumer import _check_identity, topic_conditions
from tubemqwire.protocol.master_service_pb2 import (
    ClientSubRepInfo,
    GetPartMetaRequestC2M,
    GetPartMetaResponseM2C,
    HeartRequestC2MV2,
    HeartResponseM2CV2,
    MasterCertificateInfo,
    RegisterRequestC2MV2,
    RegisterResponseM2CV2,
)
from tubemqwire.protocol.metadata import BrokerInfo, PartitionInfo, format_subscribed, parse_broker_info
from tubemqwire.protocol.rpc import parse_message

# The ids of lists never received: the master then sends the lists.
UNKNOWN_ID = -1


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the consumer knows of the cluster: brokers and topic metadata, each with its version id."""

    broker_config_id: int = UNKNOWN_ID
    topic_meta_id: int = UNKNOWN_ID
    brokers: tuple[BrokerInfo, ...] = ()
    topic_meta: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClientBalanceAnswer:
    err_code: int
    err_msg: str
    # Set when the master sent a newer list than the one reported.
    brokers: tuple[int, tuple[BrokerInfo, ...]] | None = None
    topic_meta: tuple[int, tuple[str, ...]] | None = None
    visit_token: int | None = None
    auth_token: str | None = None
    require_auth: bool = False

    @property
    def success(self) -> bool:
        return self.err_code == ErrorCode.SUCCESS


def _sub_report(view: ClusterView, held: Iterable[PartitionInfo] | None) -> ClientSubRepInfo:
    report = ClientSubRepInfo(brokerConfigId=view.broker_config_id, topicMetaInfoId=view.topic_meta_id)
    if held is None:
        report.reportSubInfo = False
    else:
        report.reportSubInfo = True
        report.partSubInfo.extend(format_subscribed(list(held)))
    return report


def register_request(
    client_id: str,
    group: str,
    host_name: str,
    topics: Iterable[str],
    *,
    view: ClusterView,
    held: Iterable[PartitionInfo] = (),
    filters: Mapping[str, Iterable[str]] | None = None,
    source_count: int = -1,
    node_id: int = -1,
    client_description: str | None = None,
    auth: MasterCertificateInfo | None = None,
) -> RegisterRequestC2MV2:
    """RegisterRequestC2MV2; ``held`` are the partitions claimed already (on a re-registration)."""
    _check_identity(client_id, group)
    if not host_name.strip() or len(host_name) > MAX_HOST_NAME_LENGTH:
        raise ValueError(f"host_name must be 1 to {MAX_HOST_NAME_LENGTH} characters")
    names = sorted(set(topics))
    if not names or len(names) > MAX_BOOKED_TOPIC_COUNT:
        raise ValueError(f"a consumer subscribes 1 to {MAX_BOOKED_TOPIC_COUNT} topics")
    held = list(held)
    request = RegisterRequestC2MV2(
        clientId=client_id,
        groupName=group,
        hostName=host_name,
        sourceCount=source_count,
        nodeId=node_id,
        topicList=names,
        topicCondition=topic_conditions(filters or {}),
    )
    request.subRepInfo.CopyFrom(_sub_report(view, held if held else None))
    if client_description is not None:
        request.jdkVersion = client_description
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def heartbeat_request(
    client_id: str,
    group: str,
    *,
    view: ClusterView,
    held: Iterable[PartitionInfo] | None,
    auth: MasterCertificateInfo | None = None,
) -> HeartRequestC2MV2:
    """HeartRequestC2MV2; ``held`` (when not None) reports the partitions claimed."""
    _check_identity(client_id, group)
    request = HeartRequestC2MV2(clientId=client_id, groupName=group)
    request.subRepInfo.CopyFrom(_sub_report(view, held))
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


def part_meta_request(
    client_id: str, group: str, *, view: ClusterView, auth: MasterCertificateInfo | None = None
) -> GetPartMetaRequestC2M:
    _check_identity(client_id, group)
    request = GetPartMetaRequestC2M(
        clientId=client_id,
        groupName=group,
        brokerConfigId=view.broker_config_id,
        topicMetaInfoId=view.topic_meta_id,
    )
    if auth is not None:
        request.authInfo.CopyFrom(auth)
    return request


# --------------------------------------------------------------------------------------------- answers
def _brokers(
    has_id: bool, config_id: int, texts: Iterable[str], default_port: int
) -> tuple[int, tuple[BrokerInfo, ...]] | None:
    if not has_id or config_id < 0:
        return None
    return config_id, tuple(parse_broker_info(text, default_port=default_port) for text in texts)


def _meta(has_id: bool, meta_id: int, texts: Iterable[str]) -> tuple[int, tuple[str, ...]] | None:
    # An empty list with a new id is not an update: the reference client keeps what it has.
    items = tuple(text for text in texts if text.strip())
    if not has_id or meta_id < 0 or not items:
        return None
    return meta_id, items


def parse_register_response(data: bytes, *, default_port: int = DEFAULT_BROKER_PORT) -> ClientBalanceAnswer:
    response = parse_message(RegisterResponseM2CV2, data)
    visit, auth = _authorized(response)
    return ClientBalanceAnswer(
        response.errCode,
        response.errMsg,
        _brokers(response.HasField("brokerConfigId"), response.brokerConfigId, response.brokerConfigList, default_port),
        None,
        visit,
        auth,
        response.HasField("opsTaskInfo") and response.opsTaskInfo.requireAuth,
    )


def parse_heartbeat_response(data: bytes, *, default_port: int = DEFAULT_BROKER_PORT) -> ClientBalanceAnswer:
    response = parse_message(HeartResponseM2CV2, data)
    visit, auth = _authorized(response)
    return ClientBalanceAnswer(
        response.errCode,
        response.errMsg,
        _brokers(response.HasField("brokerConfigId"), response.brokerConfigId, response.brokerConfigList, default_port),
        _meta(response.HasField("topicMetaInfoId"), response.topicMetaInfoId, response.topicMetaInfoList),
        visit,
        auth,
        response.HasField("opsTaskInfo") and response.opsTaskInfo.requireAuth,
    )


def parse_part_meta_response(data: bytes, *, default_port: int = DEFAULT_BROKER_PORT) -> ClientBalanceAnswer:
    response = parse_message(GetPartMetaResponseM2C, data)
    return ClientBalanceAnswer(
        response.errCode,
        response.errMsg,
        _brokers(response.HasField("brokerConfigId"), response.brokerConfigId, response.brokerConfigList, default_port),
        _meta(response.HasField("topicMetaInfoId"), response.topicMetaInfoId, response.topicMetaInfoList),
    )


def _authorized(response: RegisterResponseM2CV2 | HeartResponseM2CV2) -> tuple[int | None, str | None]:
    if not response.HasField("authorizedInfo"):
        return None, None
    info = response.authorizedInfo
    auth = info.authAuthorizedToken if info.HasField("authAuthorizedToken") and info.authAuthorizedToken else None
    return info.visitAuthorizedToken, auth
