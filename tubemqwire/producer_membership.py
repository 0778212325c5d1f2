"""A producer's registration with the master, and the topic placement its heartbeats bring back.

The register answer carries the broker list (and its checksum); only heartbeat answers say where each
published topic's partitions are, so a producer heartbeats once right after registering.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from tubemqwire import identity
from tubemqwire.errors import error_for_code
from tubemqwire.master import MasterLink, Membership
from tubemqwire.member import Member
from tubemqwire.protocol import producer as proto
from tubemqwire.protocol.constants import (
    BROKER_CHECKSUM_UNKNOWN,
    CONFIG_ID_UNDEFINED,
    DEFAULT_MAX_MESSAGE_SIZE,
    ErrorCode,
    Method,
)
from tubemqwire.protocol.metadata import BrokerInfo, PartitionInfo, TopicInfo
from tubemqwire.routing import sort_partitions

log = logging.getLogger(__name__)


def place_partitions(
    topics: Iterable[TopicInfo], brokers: dict[int, BrokerInfo]
) -> dict[str, tuple[PartitionInfo, ...]]:
    """Every partition of every topic, on brokers the master told us about (others are left out)."""
    placed: dict[str, list[PartitionInfo]] = {}
    for info in topics:
        parts = placed.setdefault(info.topic, [])
        for on_broker in info.brokers:
            broker = brokers.get(on_broker.broker_id)
            if broker is None:
                continue
            parts.extend(PartitionInfo(broker, info.topic, pid) for pid in on_broker.partition_ids())
    return {topic: sort_partitions(parts) for topic, parts in placed.items() if parts}


class ProducerMembership(Membership):
    def __init__(self, link: MasterLink, member: Member, *, on_update: Callable[[], None] | None = None) -> None:
        super().__init__(link, interval=member.interval, name=f"TubeMQ producer {member.client_id}")
        self.client_id = member.client_id
        self.host = member.host
        self.topics = frozenset(member.topics)
        self.credentials = member.credentials
        self._timeout = member.request_timeout
        self._default_port = member.default_broker_port
        self._on_update = on_update
        self.broker_checksum = BROKER_CHECKSUM_UNKNOWN
        self.brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[str, tuple[PartitionInfo, ...]] = {}
        self._topic_max_sizes: dict[str, int] = {}
        self._default_max_size = DEFAULT_MAX_MESSAGE_SIZE
        self._config_id = CONFIG_ID_UNDEFINED

    def max_message_size(self, topic: str) -> int:
        return self._topic_max_sizes.get(topic, self._default_max_size)

    def _apply(self, answer: proto.ProducerMasterAnswer, *, with_topics: bool) -> None:
        self.credentials.update(answer.visit_token, answer.auth_token, answer.require_auth)
        if answer.config_id is not None:
            self._config_id = answer.config_id
        if answer.max_message_size is not None and answer.max_message_size > 0:
            self._default_max_size = answer.max_message_size
        if answer.err_code == ErrorCode.NOT_READY:
            # The master is still loading its metadata; what it says now is not the full picture.
            return
        if answer.broker_checksum != self.broker_checksum:
            self.brokers = {broker.broker_id: broker for broker in answer.brokers}
            self.broker_checksum = answer.broker_checksum
        if with_topics:
            self.partitions = place_partitions(answer.topics, self.brokers)
            self._topic_max_sizes = {
                info.topic: info.max_message_size for info in answer.topics if info.max_message_size
            }
        if self._on_update is not None:
            self._on_update()

    async def register(self) -> None:
        self.broker_checksum = BROKER_CHECKSUM_UNKNOWN
        request = proto.register_request(
            self.client_id,
            self.topics,
            self.host,
            broker_checksum=self.broker_checksum,
            config_id=self._config_id,
            client_description=identity.CLIENT_DESCRIPTION,
            auth=self.credentials.master_certificate(force=True),
        )
        data = await self.link.call(Method.MASTER_PRODUCER_REGISTER, request, timeout=self._timeout)
        answer = proto.parse_register_response(data, default_broker_port=self._default_port)
        if not answer.success:
            raise error_for_code(answer.err_code, answer.err_msg)
        self._apply(answer, with_topics=False)
        # Topic placement only comes with heartbeats.
        await self.heartbeat()

    async def heartbeat(self) -> None:
        request = proto.heartbeat_request(
            self.client_id,
            self.topics,
            self.host,
            broker_checksum=self.broker_checksum,
            config_id=self._config_id,
            auth=self.credentials.master_certificate(),
        )
        data = await self.link.call(Method.MASTER_PRODUCER_HEARTBEAT, request, timeout=self._timeout)
        answer = proto.parse_heartbeat_response(data, default_broker_port=self._default_port)
        if not answer.success:
            raise error_for_code(answer.err_code, answer.err_msg)
        self._apply(answer, with_topics=True)

    async def deregister(self) -> None:
        request = proto.close_request(self.client_id, auth=self.credentials.master_certificate(force=True))
        data = await self.link.call(Method.MASTER_PRODUCER_CLOSE, request, timeout=self._timeout)
        success, code, message = proto.parse_close_response(data)
        if not success:
            log.info("%s: the master refused the close: %d %s", self.name, code, message)
