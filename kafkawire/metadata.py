"""The client's view of the cluster: brokers, and for each topic its partitions and their leaders."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A broker: its node id, host, port and rack (None when it has none)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)``."""
        return self.host, self.port


class TopicPartition(NamedTuple):
    """A partition of a topic; a tuple, so ``("orders", 0)`` works wherever one is expected."""

    topic: str
    partition: int


@dataclass(slots=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    error_code: int = 0


@dataclass
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    # topic -> partition -> leader node id (-1 while no leader is known)
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)
    # topic -> partition -> leader epoch, replicas and in-sync replicas
    partition_info: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    internal_topics: set[str] = field(default_factory=set)
    topic_errors: dict[str, int] = field(default_factory=dict)
    updated_at: float = 0.0
    # Bumped on every update, so caches built from this view know when to rebuild.
    version: int = 0

    def update(self, response: Any, *, requested: list[str] | None) -> None:
        """Fold a MetadataResponse in. Topics asked for but absent are forgotten."""
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        self.brokers = {b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        if requested is None:
            self.leaders.clear()
            self.partition_info.clear()
            self.topic_errors.clear()
            self.internal_topics.clear()
        for name in requested or ():
            self.forget_topic(name)
        for topic in response.topics:
            name = topic.name
            if name is None:
                continue
            if topic.error_code:
                self.forget_topic(name)
                self.topic_errors[name] = topic.error_code
                continue
            self.topic_errors.pop(name, None)
            if topic.topic_id != ZERO_UUID:
                self.topic_ids[name] = topic.topic_id
                self.topic_names[topic.topic_id] = name
            if topic.is_internal:
                self.internal_topics.add(name)
            self.leaders[name] = {p.partition_index: p.leader_id for p in topic.partitions}
            self.partition_info[name] = {
                p.partition_index: PartitionInfo(
                    p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes), p.error_code
                )
                for p in topic.partitions
            }
        self.updated_at = time.monotonic()
        self.version += 1

    def forget_topic(self, name: str) -> None:
        """Drop what is known of a topic's partitions (it was deleted, or the broker no longer knows it)."""
        if self.leaders.pop(name, None) is not None:
            self.version += 1
        self.partition_info.pop(name, None)
        self.internal_topics.discard(name)

    def forget_leader(self, topic: str, partition: int) -> None:
        """Mark a leader as unknown after the broker said it is not (or no longer) the leader."""
        leaders = self.leaders.get(topic)
        if leaders is not None and partition in leaders:
            leaders[partition] = -1
            self.version += 1

    def partitions(self, topic: str) -> list[int] | None:
        leaders = self.leaders.get(topic)
        return None if leaders is None else sorted(leaders)

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of ``topic`` whose leader is a known broker."""
        leaders = self.leaders.get(topic, {})
        return sorted(p for p, node in leaders.items() if node in self.brokers)

    def leader(self, topic: str, partition: int) -> BrokerNode | None:
        node_id = self.leaders.get(topic, {}).get(partition, -1)
        return self.brokers.get(node_id)

    def leader_id(self, topic: str, partition: int) -> int:
        node_id = self.leaders.get(topic, {}).get(partition, -1)
        return node_id if node_id in self.brokers else -1

    def leader_epoch(self, topic: str, partition: int) -> int:
        info = self.partition_info.get(topic, {}).get(partition)
        return -1 if info is None else info.leader_epoch

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.topic_ids.get(topic)
