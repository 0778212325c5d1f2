"""The client's view of the cluster: brokers, and for each topic its partitions and their leaders."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

ZERO_UUID = uuid.UUID(int=0)

MetadataRecoveryStrategy = Literal["rebootstrap", "none"]
"""What the client does when no broker it knows answers: bootstrap again, or keep trying them."""
RECOVERY_STRATEGIES: tuple[MetadataRecoveryStrategy, ...] = ("rebootstrap", "none")


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


class RebootstrapTrigger:
    """When the client goes back to its bootstrap servers (KIP-899, KIP-1102): it decides, the session acts.

    A metadata attempt that fails starts a clock; an answer stops it. With ``"rebootstrap"`` the client
    bootstraps again when the clock has run ``trigger`` seconds, when none of the brokers it knows can be
    connected to, or when a broker answers ``REBOOTSTRAP_REQUIRED``. With ``"none"`` it never does. Times are
    the caller's (the event loop's clock), so the decision is the same whatever runs it.
    """

    __slots__ = ("_required", "_since", "strategy", "trigger")

    def __init__(self, strategy: MetadataRecoveryStrategy, trigger: float) -> None:
        self.strategy = strategy
        self.trigger = trigger
        # When metadata was first asked for without an answer since (None: the last attempt was answered).
        self._since: float | None = None
        self._required = False

    @property
    def unanswered_since(self) -> float | None:
        """When the current run of unanswered metadata attempts began, or None."""
        return self._since

    def attempting(self, now: float) -> None:
        """A metadata attempt begins; the clock starts unless it runs already."""
        if self._since is None:
            self._since = now

    def answered(self) -> None:
        """A broker answered metadata: the clock stops."""
        self._since = None
        self._required = False

    def require(self) -> None:
        """A broker answered ``REBOOTSTRAP_REQUIRED``: bootstrap again at the next attempt."""
        self._required = True

    def due(self, now: float, *, none_reachable: bool = False) -> bool:
        """Whether the next metadata attempt goes to the bootstrap servers rather than the known brokers.

        ``none_reachable``: every broker the client knows refused or timed out the connection just now.
        """
        if self.strategy == "none":
            return False
        if self._required or none_reachable:
            return True
        return self._since is not None and now - self._since >= self.trigger

    def rebootstrapped(self, now: float) -> None:
        """The client went back to its bootstrap servers: the clock starts again from now."""
        self._required = False
        self._since = now
