"""The client's view of the cluster: brokers, and for each topic its partitions and their leaders."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    # topic -> partition -> leader node id (-1 while no leader is known)
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)
    topic_ids: dict[str, Any] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)
    updated_at: float = 0.0

    def update(self, response: Any, *, requested: list[str] | None) -> None:
        """Fold a MetadataResponse in. Topics asked for but absent are forgotten."""
        self.cluster_id = response.cluster_id
        self.controller_id = response.controller_id
        self.brokers = {b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        if requested is None:
            self.leaders.clear()
            self.topic_errors.clear()
        for name in requested or ():
            self.leaders.pop(name, None)
        for topic in response.topics:
            if topic.name is None:
                continue
            if topic.error_code:
                self.topic_errors[topic.name] = topic.error_code
                continue
            self.topic_errors.pop(topic.name, None)
            self.topic_ids[topic.name] = topic.topic_id
            self.leaders[topic.name] = {p.partition_index: p.leader_id for p in topic.partitions}
        self.updated_at = time.monotonic()

    def partitions(self, topic: str) -> list[int] | None:
        leaders = self.leaders.get(topic)
        return None if leaders is None else sorted(leaders)

    def leader(self, topic: str, partition: int) -> BrokerNode | None:
        node_id = self.leaders.get(topic, {}).get(partition, -1)
        return self.brokers.get(node_id)
