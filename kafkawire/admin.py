"""Session administration: topics, partitions, records, configs, groups.

Topic changes go to the controller named in the metadata (in KRaft clusters any broker forwards them).
``create_topics`` returns once the metadata shows a leader for every new partition, so a producer started
right after finds them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kafkawire import errors
from kafkawire.metadata import BrokerNode, TopicPartition
from kafkawire.offsets import OffsetAndTimestamp, fetch_committed, list_offsets
from kafkawire.options import AdminConfig
from kafkawire.protocol.messages import (
    CreatableTopic,
    CreatableTopicConfig,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
    DeleteTopicsRequest,
    DeleteTopicState,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeGroupsRequest,
    ListGroupsRequest,
    MetadataRequest,
    MetadataRequestTopic,
)
from kafkawire.share import admin as share_admin
from kafkawire.share.admin import ShareGroupDescription
from mqwire.common.errors import ClosedError, RetriableError

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

DESCRIBE_CLUSTER_KEY = 60
# DescribeConfigs resource types.
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
RESOURCE_TYPES = {"topic": TOPIC_RESOURCE, "broker": BROKER_RESOURCE}
# DescribeConfigs config_source of a value nobody set.
DEFAULT_CONFIG_SOURCE = 5


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: its name, number of partitions, replication factor (-1 for either: the broker's
    default) and topic configs (``{"retention.ms": "3600000"}``)."""

    name: str
    num_partitions: int = 1
    replication_factor: int = 1
    configs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("NewTopic.name must be a non-empty str")
        for label, value in (("num_partitions", self.num_partitions), ("replication_factor", self.replication_factor)):
            if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1):
                raise ValueError(f"NewTopic.{label} must be a positive int (or -1 for the broker default)")


@dataclass(frozen=True)
class PartitionDescription:
    """One partition of a described topic: its id, its leader's broker id (-1: none), the leader epoch, the
    replicas' broker ids and the in-sync ones (``isr``)."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


@dataclass(frozen=True)
class TopicDescription:
    """A described topic: its name, its topic id (a UUID, as text), whether it is internal (such as
    ``__consumer_offsets``) and its partitions, by id."""

    name: str
    topic_id: str
    internal: bool
    partitions: list[PartitionDescription]


@dataclass(frozen=True)
class ClusterDescription:
    """The cluster: its id, the controller's broker id (-1: unknown) and the brokers, by id."""

    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerNode]


@dataclass(frozen=True)
class ConfigEntry:
    """One config of a topic or broker: its name and value (None when sensitive or unset), whether it is
    read-only, whether it is the default (nobody set it) and whether it is sensitive."""

    name: str
    value: str | None
    read_only: bool
    is_default: bool
    is_sensitive: bool


@dataclass(frozen=True)
class GroupListing:
    """A group as listed by its coordinator: its id, protocol type (``"consumer"`` for consumer groups),
    state (``"Stable"``, ``"Empty"``, ...) and type (``"classic"``, ``"consumer"``); state and type are
    empty when the broker is too old to tell."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass(frozen=True)
class GroupMember:
    """A member of a described group: its member id, static instance id (None if dynamic), client id and
    host."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str


@dataclass(frozen=True)
class GroupDescription:
    """A described group: its id, state, protocol type, the protocol chosen (for consumer groups the
    assignor, such as ``"range"``), its members, and the node id of its coordinator."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[GroupMember]
    coordinator: int


class Admin:
    """Use as ``async with client.admin() as admin``."""

    def __init__(self, session: Session, config: AdminConfig) -> None:
        self._session = session
        self.timeout = config.timeout
        self._closed = False

    async def __aenter__(self) -> Admin:
        self._check_open()
        self._session.adopt(self)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop using the admin client: later operations raise ``ClosedError``. The connections stay the
        client's."""
        if not self._closed:
            self._closed = True
            self._session.release(self)

    def _check_open(self) -> None:
        self._session.affinity.check()
        if self._closed:
            raise ClosedError("admin is closed")

    async def _controller(self, body: Any) -> Any:
        """Send ``body`` to the controller, retrying (with fresh metadata) when it moved or was unreachable."""
        self._check_open()
        backoff = self._session.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            controller = self._session.metadata.controller_id
            try:
                if controller < 0:
                    return await self._session.request_any(body, timeout=self.timeout)
                return await self._session.request(controller, body, timeout=self.timeout)
            except RetriableError:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(backoff.next_delay())
                await self._session.refresh_metadata([])

    # ---------------------------------------------------------------------------------- topics
    async def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int = 1, configs: Mapping[str, str] | None = None
    ) -> None:
        """Create one topic (see ``create_topics``); returns once its partitions have leaders."""
        await self.create_topics([NewTopic(name, partitions, replication_factor, dict(configs or {}))])

    async def create_topics(self, topics: Iterable[NewTopic], *, validate_only: bool = False) -> None:
        """Create ``topics``; raises the first error (TopicAlreadyExistsError, ...) after all were tried."""
        new = list(topics)
        if not new:
            return
        for topic in new:
            if not isinstance(topic, NewTopic):
                raise TypeError("create_topics takes NewTopic objects")
        body = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    configs=[CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()],
                )
                for t in new
            ],
            timeout_ms=int(self.timeout * 1000),
            validate_only=validate_only,
        )
        response = await self._controller(body)
        failure = _first_error(
            (r.error_code, f"create topic {r.name!r}: {r.error_message or ''}".rstrip(": "))
            for r in response.topics
        )
        if not validate_only:
            created = [r.name for r in response.topics if not r.error_code]
            await self._wait_for_leaders(created)
        if failure is not None:
            raise failure

    async def _wait_for_leaders(self, names: list[str]) -> None:
        for name in names:
            await self._session.partitions_for(name, timeout=self.timeout)

    async def delete_topics(self, names: Iterable[str]) -> None:
        """Delete topics by name; raises the first error after all were tried, and waits until they are gone."""
        wanted = list(names)
        if not wanted:
            return
        # Both spellings are filled in: each version encodes the one it has (names before v6, states after).
        body = DeleteTopicsRequest(
            topics=[DeleteTopicState(name=name) for name in wanted],
            topic_names=wanted,
            timeout_ms=int(self.timeout * 1000),
        )
        response = await self._controller(body)
        failure = _first_error(
            (r.error_code, f"delete topic {r.name!r}: {r.error_message or ''}".rstrip(": ")) for r in response.responses
        )
        deleted = {r.name for r in response.responses if not r.error_code}
        await self._wait_until_gone(deleted)
        if failure is not None:
            raise failure

    async def _wait_until_gone(self, names: set[str]) -> None:
        gone = set(names)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        backoff = self._session.new_backoff()
        while names and loop.time() < deadline:
            response = await self._session.request_any(
                MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False)
            )
            names = {t.name for t in response.topics if t.error_code == 0 and t.name in names}
            if names:
                await asyncio.sleep(backoff.next_delay())
        for name in gone:
            # Forgotten without asking the broker: a Metadata request may auto-create the topic again.
            self._session.metadata.forget_topic(name)

    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """The names of the cluster's topics, sorted."""
        self._check_open()
        metadata = await self._session.refresh_metadata(None)
        return sorted(t for t in metadata.leaders if include_internal or t not in metadata.internal_topics)

    async def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Partitions, leaders and replicas of ``names`` (or every topic); unknown topics raise."""
        self._check_open()
        wanted = None if names is None else list(names)
        response = await self._session.request_any(
            MetadataRequest(
                topics=None if wanted is None else [MetadataRequestTopic(name=n) for n in wanted],
                allow_auto_topic_creation=False,
            )
        )
        out = []
        for topic in response.topics:
            if topic.error_code:
                raise errors.error_for(topic.error_code, f"topic {topic.name!r}")
            partitions = [
                PartitionDescription(p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes),
                                     list(p.isr_nodes))
                for p in sorted(topic.partitions, key=lambda p: p.partition_index)
            ]
            out.append(TopicDescription(topic.name, str(topic.topic_id), topic.is_internal, partitions))
        return sorted(out, key=lambda t: t.name)

    async def create_partitions(self, new_totals: Mapping[str, int]) -> None:
        """Grow each topic to the given total number of partitions."""
        if not new_totals:
            return
        body = CreatePartitionsRequest(
            topics=[
                CreatePartitionsTopic(name=name, count=count, assignments=None) for name, count in new_totals.items()
            ],
            timeout_ms=int(self.timeout * 1000),
            validate_only=False,
        )
        response = await self._controller(body)
        failure = _first_error(
            (r.error_code, f"create partitions for {r.name!r}: {r.error_message or ''}".rstrip(": "))
            for r in response.results
        )
        if failure is not None:
            raise failure
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        for name, count in new_totals.items():
            while len(await self._session.partitions_for(name, timeout=self.timeout)) < count:
                if loop.time() > deadline:
                    raise errors.LeaderNotAvailableError(f"topic {name!r} did not reach {count} partitions in time")
                await asyncio.sleep(self._session.retry_backoff)

    # ---------------------------------------------------------------------------------- cluster
    async def describe_cluster(self) -> ClusterDescription:
        """The cluster's id, controller and brokers (DescribeCluster, or the metadata on older brokers)."""
        self._check_open()
        connection = await self._session.any_connection()
        if connection.offers(DESCRIBE_CLUSTER_KEY):
            response = await connection.request(DescribeClusterRequest())
            if response.error_code:
                raise errors.error_for(response.error_code, response.error_message)
            brokers = [BrokerNode(b.broker_id, b.host, b.port, b.rack) for b in response.brokers]
            return ClusterDescription(response.cluster_id, response.controller_id, sorted(brokers, key=_node_id))
        metadata = await self._session.refresh_metadata([])
        return ClusterDescription(
            metadata.cluster_id, metadata.controller_id, sorted(metadata.brokers.values(), key=_node_id)
        )

    async def describe_configs(
        self, resources: Mapping[tuple[str, str], Iterable[str] | None]
    ) -> dict[tuple[str, str], dict[str, ConfigEntry]]:
        """Configs of ``{("topic", name) or ("broker", id): keys or None for all}``."""
        self._check_open()
        # A broker's own configs come from that broker; topic configs from any broker.
        by_target: dict[int | None, list[DescribeConfigsResource]] = {}
        for (kind, name), keys in resources.items():
            if kind not in RESOURCE_TYPES:
                raise ValueError(f"resource type must be one of {sorted(RESOURCE_TYPES)}, got {kind!r}")
            target = int(name) if kind == "broker" else None
            by_target.setdefault(target, []).append(
                DescribeConfigsResource(
                    resource_type=RESOURCE_TYPES[kind],
                    resource_name=str(name),
                    configuration_keys=None if keys is None else list(keys),
                )
            )
        kinds = {code: kind for kind, code in RESOURCE_TYPES.items()}
        out: dict[tuple[str, str], dict[str, ConfigEntry]] = {}
        for target, requested in by_target.items():
            body = DescribeConfigsRequest(resources=requested)
            if target is None:
                response = await self._session.request_any(body)
            else:
                response = await self._session.request(target, body)
            for result in response.results:
                if result.error_code:
                    raise errors.error_for(result.error_code, result.error_message or result.resource_name)
                entries = {
                    c.name: ConfigEntry(c.name, c.value, c.read_only, c.config_source == DEFAULT_CONFIG_SOURCE,
                                        c.is_sensitive)
                    for c in result.configs
                }
                out[(kinds.get(result.resource_type, str(result.resource_type)), result.resource_name)] = entries
        return out

    # ---------------------------------------------------------------------------------- records
    async def list_offsets(
        self, specs: Mapping[TopicPartition | tuple[str, int], int | str], *, isolation_level: str = "read_uncommitted"
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """Offsets for ``{tp: "earliest" | "latest" | "max_timestamp" | timestamp_ms}``: for a timestamp, the
        first record stamped at or after it (offset -1 when there is none)."""
        self._check_open()
        named = {"earliest": -2, "latest": -1, "max_timestamp": -3}
        converted: dict[TopicPartition, int] = {}
        for tp, spec in specs.items():
            if isinstance(spec, str):
                if spec not in named:
                    raise ValueError(f"offset spec must be 'earliest', 'latest', 'max_timestamp' or ms, got {spec!r}")
                converted[TopicPartition(*tp)] = named[spec]
            elif isinstance(spec, int) and not isinstance(spec, bool):
                converted[TopicPartition(*tp)] = spec
            else:
                raise TypeError(f"offset spec must be a str or an int, got {spec!r}")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be 'read_uncommitted' or 'read_committed'")
        return await list_offsets(
            self._session, converted, isolation_level=1 if isolation_level == "read_committed" else 0
        )

    async def delete_records(self, before: Mapping[TopicPartition | tuple[str, int], int]) -> dict[TopicPartition, int]:
        """Delete records before the given offsets (-1: the high watermark); returns the new low watermarks."""
        self._check_open()
        wanted = {TopicPartition(*tp): offset for tp, offset in before.items()}
        await self._session.refresh_metadata({tp.topic for tp in wanted})
        by_leader: dict[int, dict[str, list[DeleteRecordsPartition]]] = {}
        for tp, offset in wanted.items():
            leader = self._session.metadata.leader_id(*tp)
            if leader < 0:
                raise errors.LeaderNotAvailableError(f"no leader for {tp.topic}-{tp.partition}")
            by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append(
                DeleteRecordsPartition(partition_index=tp.partition, offset=offset)
            )
        out: dict[TopicPartition, int] = {}
        for leader, topics in by_leader.items():
            body = DeleteRecordsRequest(
                topics=[DeleteRecordsTopic(name=name, partitions=parts) for name, parts in topics.items()],
                timeout_ms=int(self.timeout * 1000),
            )
            response = await self._session.request(leader, body, timeout=self.timeout)
            for topic in response.topics:
                for partition in topic.partitions:
                    if partition.error_code:
                        raise errors.error_for(partition.error_code, f"delete records of {topic.name}")
                    out[TopicPartition(topic.name, partition.partition_index)] = partition.low_watermark
        return out

    # ---------------------------------------------------------------------------------- groups
    async def list_groups(self) -> list[GroupListing]:
        """Groups known to every broker (each coordinates some of them)."""
        self._check_open()
        await self._session.refresh_metadata([])
        listings: dict[str, GroupListing] = {}
        for node in list(self._session.metadata.brokers):
            response = await self._session.request(node, ListGroupsRequest())
            if response.error_code:
                raise errors.error_for(response.error_code, f"list groups at broker {node}")
            for g in response.groups:
                listings[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state, g.group_type)
        return sorted(listings.values(), key=lambda g: g.group_id)

    async def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """State, protocol and members of each group in ``group_ids``, asked of its coordinator."""
        self._check_open()
        out = []
        for group in group_ids:
            out += await self._session.with_coordinator(group, partial(self._describe_group, group))
        return out

    async def _describe_group(self, group: str) -> list[GroupDescription]:
        response = await self._session.request_coordinator(group, DescribeGroupsRequest(groups=[group]))
        coordinator = await self._session.coordinator(group)  # the node just asked, remembered
        out = []
        for g in response.groups:
            if g.error_code:
                raise errors.error_for(g.error_code, f"group {g.group_id!r}")
            members = [GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host) for m in g.members]
            out.append(
                GroupDescription(
                    g.group_id, g.group_state, g.protocol_type, g.protocol_data, members, coordinator.node_id
                )
            )
        return out

    async def list_consumer_group_offsets(
        self, group: str, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int | None]:
        """The offsets ``group`` committed for ``partitions`` (None where it committed none)."""
        self._check_open()
        found = await fetch_committed(self._session, group, [TopicPartition(*tp) for tp in partitions])
        return {tp: None if v is None else v.offset for tp, v in found.items()}

    # ---------------------------------------------------------------------------------- share groups
    async def describe_share_groups(self, group_ids: Iterable[str]) -> list[ShareGroupDescription]:
        """State, epoch and members (with their assignments) of each share group in ``group_ids``."""
        self._check_open()
        return await share_admin.describe_share_groups(self._session, group_ids)

    async def list_share_group_offsets(
        self, group: str, topics: Mapping[str, Iterable[int]] | None = None
    ) -> dict[TopicPartition, int | None]:
        """The start offsets of share group ``group`` (in ``topics``: name -> partitions; None: all it has)."""
        self._check_open()
        return await share_admin.list_share_group_offsets(self._session, group, topics)

    async def alter_share_group_offsets(
        self, group: str, offsets: Mapping[TopicPartition | tuple[str, int], int]
    ) -> None:
        """Set the start offsets of share group ``group``, which must have no members."""
        self._check_open()
        await share_admin.alter_share_group_offsets(
            self._session, group, {TopicPartition(*tp): offset for tp, offset in offsets.items()}
        )

    async def delete_share_group_offsets(self, group: str, topics: Iterable[str]) -> None:
        """Forget share group ``group``'s state in ``topics`` (no members allowed)."""
        self._check_open()
        await share_admin.delete_share_group_offsets(self._session, group, topics)

    async def delete_groups(self, group_ids: Iterable[str]) -> None:
        """Delete groups that have no members: consumer groups and share groups alike."""
        self._check_open()
        await share_admin.delete_groups(self._session, group_ids)


def _node_id(node: BrokerNode) -> int:
    return node.node_id


def _first_error(results: Iterable[tuple[int, str]]) -> errors.KafkaError | None:
    first = None
    for code, message in results:
        if code and first is None:
            first = errors.error_for(code, message)
    return first
