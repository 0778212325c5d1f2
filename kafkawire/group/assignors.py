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
    # Cooperative assignors (KIP-429) let members keep their partitions through a rebalance.
    cooperative: bool

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        """Member id -> its partitions, for every member in ``subscriptions``."""
        ...


class RangeAssignor:
    """Per topic, consecutive ranges of partitions to the members subscribed to it, in member-id order;
    the first ``partitions % members`` members get one more."""

    name = "range"
    cooperative = False

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
    cooperative = False

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


class CooperativeStickyAssignor:
    """Balanced like round robin, but each member keeps what it owned as far as balance allows; and,
    cooperatively (KIP-429), a partition moving between members is left out of this round: its owner
    gives it up first, and the rebalance that follows hands it to its new member."""

    name = "cooperative-sticky"
    cooperative = True

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        members = sorted(subscriptions)
        if not members:
            return {}
        wanted = sorted(
            TopicPartition(topic, p)
            for topic, count in partitions_per_topic.items()
            if any(topic in s.topics for s in subscriptions.values())
            for p in range(count)
        )
        valid = set(wanted)
        owners = _current_owners(subscriptions, valid)
        current: dict[str, list[TopicPartition]] = {m: [] for m in members}
        for tp, member in owners.items():
            current[member].append(tp)
        base, extra = divmod(len(wanted), len(members))
        # The members owning most keep the extra partitions, so that as little as possible moves.
        by_holdings = sorted(members, key=lambda m: (-len(current[m]), m))
        quota = {m: base + (1 if index < extra else 0) for index, m in enumerate(by_holdings)}
        plan = {m: sorted(current[m])[: quota[m]] for m in members}
        placed = {tp for partitions in plan.values() for tp in partitions}
        for tp in wanted:
            if tp in placed:
                continue
            eligible = [m for m in members if tp.topic in subscriptions[m].topics]
            open_ = [m for m in eligible if len(plan[m]) < quota[m]] or eligible
            chosen = min(open_, key=lambda m: (len(plan[m]), m))
            plan[chosen].append(tp)
        if self.cooperative:
            # What another member still owns is not given away in this round.
            for member, partitions in plan.items():
                plan[member] = sorted(tp for tp in partitions if owners.get(tp, member) == member)
        else:
            plan = {member: sorted(partitions) for member, partitions in plan.items()}
        return plan


class StickyAssignor(CooperativeStickyAssignor):
    """The same balance and stickiness on the eager protocol: members give up everything before joining,
    report what they held, and get back as much of it as balance allows in the same round."""

    name = "sticky"
    cooperative = False


def _current_owners(subscriptions: Mapping[str, Subscription], valid: set[TopicPartition]) -> dict[TopicPartition, str]:
    """Who owns each partition now; a partition claimed twice goes to the claim of the newest generation."""
    claims: dict[TopicPartition, tuple[int, str]] = {}
    contested: set[TopicPartition] = set()
    for member, subscription in subscriptions.items():
        for tp in subscription.owned_partitions:
            if tp not in valid or tp.topic not in subscription.topics:
                continue
            previous = claims.get(tp)
            if previous is None or subscription.generation_id > previous[0]:
                claims[tp] = (subscription.generation_id, member)
                contested.discard(tp)
            elif subscription.generation_id == previous[0]:
                contested.add(tp)
    return {tp: member for tp, (_, member) in claims.items() if tp not in contested}


ASSIGNORS: dict[str, Assignor] = {
    "range": RangeAssignor(),
    "roundrobin": RoundRobinAssignor(),
    "sticky": StickyAssignor(),
    "cooperative-sticky": CooperativeStickyAssignor(),
}
