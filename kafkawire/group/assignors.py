"""Partition assignors run by the group leader, with the Java client's names and results.

Members of one group must agree on an assignor name, and a group mixing clients relies on each
computing what the Java client would, so the orders below (members by id, partitions by number) are
the Java ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kafkawire.group.protocol import Subscription
from kafkawire.metadata import TopicPartition


class Assignor(Protocol):
    name: str

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """Member id -> its partitions, for every member in ``subscriptions``."""
        ...


class RangeAssignor:
    """Per topic, consecutive ranges of partitions to the members subscribed to it, in member-id order;
    the first ``partitions % members`` members get one more."""

    name = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        result: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        for topic, count in sorted(partitions_per_topic.items()):
            members = sorted(m for m, s in subscriptions.items() if topic in s.topics)
            if not members:
                continue
            share, extra = divmod(count, len(members))
            start = 0
            for index, member in enumerate(members):
                size = share + (1 if index < extra else 0)
                result[member] += [TopicPartition(topic, p) for p in range(start, start + size)]
                start += size
        return result


class RoundRobinAssignor:
    """Every partition of every subscribed topic, sorted, dealt in turn to the members (sorted by id),
    skipping members not subscribed to the partition's topic."""

    name = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        result: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        members = sorted(subscriptions)
        if not members:
            return result
        subscribed = {topic for s in subscriptions.values() for topic in s.topics}
        turn = 0
        for topic in sorted(t for t in partitions_per_topic if t in subscribed):
            for partition in range(partitions_per_topic[topic]):
                for _ in range(len(members)):
                    member = members[turn % len(members)]
                    turn += 1
                    if topic in subscriptions[member].topics:
                        result[member].append(TopicPartition(topic, partition))
                        break
        return result


ASSIGNORS: dict[str, Assignor] = {"range": RangeAssignor(), "roundrobin": RoundRobinAssignor()}
