"""aiokafka's ConsumerRebalanceListener on a kafkawire consumer, without a broker: the option's checks, the calls
in aiokafka's order (an empty revoke before the first assignment, the whole assignment after), a failing method
logged rather than stopping the rebalance, no call on close, no record handed out once its partition is revoked;
the KIP-848 membership awaiting the listener; and a compiled pattern as the consumer's first argument in
kafkawire and pulsarwire, async and blocking."""

from __future__ import annotations

import asyncio
import logging
import re
import typing

import pytest

import kafkawire
import kafkawire.sync
import pulsarwire
import pulsarwire.sync
from kafkawire import ConsumerRebalanceListener, TopicPartition
from kafkawire.consumer import Consumer
from kafkawire.fetcher import PartitionState
from kafkawire.group.heartbeat_membership import HeartbeatMembership
from kafkawire.message import Message, TimestampType
from kafkawire.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupTopicPartitions
from kafkawire.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupAssignment,
    ConsumerGroupHeartbeatResponse,
)
from mqwire.common.errors import ConfigurationError, OptionTypeError
from tests.unit.test_kafka_heartbeat_membership import TOPIC_ID, Coordinator, FakeSession

A0, A1, A2 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 2)


class Recorder(ConsumerRebalanceListener):
    """Records each call; ``during_revoke`` runs inside on_partitions_revoked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.during_revoke: typing.Callable[[], None] | None = None

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))
        if self.during_revoke is not None:
            self.during_revoke()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))


def client() -> kafkawire.Client:
    return kafkawire.connect("kafka://127.0.0.1:1")


def message(tp: TopicPartition, offset: int) -> Message:
    return Message(tp.topic, tp.partition, offset, None, b"v", [], 0, TimestampType.CREATE_TIME, 0)


class Membership:
    """What the consumer sees of a classic or KIP-848 membership: the partitions held, and on close their revoke."""

    def __init__(self, consumer: Consumer) -> None:
        self.assignment: set[TopicPartition] = set()
        self.rebalances = 0
        self._consumer = consumer

    async def close(self) -> None:
        revoked, self.assignment = self.assignment, set()
        if revoked:
            await self._consumer._revoked(revoked)


def member(listener: ConsumerRebalanceListener, **options: typing.Any) -> Consumer:
    """A consumer of "a" in a group whose partitions are taken up without a broker (no committed offsets)."""
    consumer = client().consumer("a", group="g", listener=listener, **options)
    consumer._membership = Membership(consumer)  # type: ignore[assignment]

    async def add(assignment: list[TopicPartition]) -> None:
        for tp in assignment:
            consumer._states.setdefault(tp, PartitionState(tp, position=0))

    consumer._add_partitions = add  # type: ignore[method-assign]
    return consumer


# ------------------------------------------------------------------------------------ the option
def test_a_listener_is_checked_and_excludes_the_callbacks() -> None:
    async def callback(partitions: set[TopicPartition]) -> None:
        pass

    listener = Recorder()
    with pytest.raises(OptionTypeError, match="ConsumerRebalanceListener"):
        client().consumer("a", group="g", listener=callback)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="needs group"):
        client().consumer("a", listener=listener)
    with pytest.raises(ConfigurationError, match="partitions"):
        client().consumer("a", group="g", partitions=[0], listener=listener)
    for name in ("on_assigned", "on_revoked", "on_lost"):
        with pytest.raises(ConfigurationError, match="not both"):
            client().consumer("a", group="g", listener=listener, **{name: callback})  # type: ignore[arg-type]
    consumer = client().consumer("a", group="g", on_revoked=callback)
    with pytest.raises(ConfigurationError, match="not both"):
        consumer.subscribe(["b"], listener=listener)
    with pytest.raises(OptionTypeError, match="ConsumerRebalanceListener"):
        client().consumer(group="g").subscribe(["b"], listener=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="needs group"):
        client().consumer().subscribe(["b"], listener=listener)


def test_subscribe_sets_the_listener_and_none_keeps_it() -> None:
    first, second = Recorder(), Recorder()
    consumer = client().consumer(group="g")
    consumer.subscribe(["a"], listener=first)
    assert consumer._listener is not None and consumer._listener.listener is first
    consumer.subscribe(["b"])
    assert consumer._listener.listener is first
    consumer.subscribe(pattern="c.*", listener=second)
    assert consumer._listener.listener is second


# ------------------------------------------------------------------------------------ the calls
async def test_each_rebalance_is_revoked_then_assigned_with_the_whole_assignment() -> None:
    listener = Recorder()
    consumer = member(listener)
    membership = consumer._membership
    assert membership is not None
    await consumer._assigned({A0, A1, A2})  # the first join: nothing held before
    membership.assignment = {A0, A1, A2}
    # An eager rebalance (classic): everything given up, then a part given back.
    membership.assignment = set()
    await consumer._revoked({A0, A1, A2})
    await consumer._assigned({A0})
    membership.assignment = {A0}
    # An incremental one (KIP-848, cooperative): A1 added, nothing given up; the listener sees all it holds.
    await consumer._assigned({A1})
    membership.assignment = {A0, A1}
    await consumer._lost({A0, A1})  # on_partitions_lost defaults to on_partitions_revoked
    assert listener.calls == [
        ("revoked", set()),
        ("assigned", {A0, A1, A2}),
        ("revoked", {A0, A1, A2}),
        ("assigned", {A0}),
        ("revoked", set()),
        ("assigned", {A0, A1}),
        ("revoked", {A0, A1}),
    ]
    assert consumer.assignment() == set()


async def test_a_failing_method_is_logged_and_the_rebalance_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    class Failing(ConsumerRebalanceListener):
        def __init__(self) -> None:
            self.assigned: list[set[TopicPartition]] = []

        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            raise RuntimeError("cannot save state")

        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            self.assigned.append(assigned)

    listener = Failing()
    consumer = member(listener)
    with caplog.at_level(logging.ERROR, logger="kafkawire.rebalance_listener"):
        await consumer._assigned({A0})
        await consumer._revoked({A0})
    assert listener.assigned == [{A0}]
    assert consumer.assignment() == set()  # the revoked partition is given up all the same
    assert [r.getMessage() for r in caplog.records].count(
        f"group 'g': rebalance listener {listener!r} failed in on_partitions_revoked"
    ) == 2


async def test_methods_written_as_plain_functions_are_called_as_aiokafka_calls_them() -> None:
    class Plain(ConsumerRebalanceListener):
        def __init__(self) -> None:
            self.calls: list[str] = []

        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:  # type: ignore[override]
            self.calls.append("revoked")

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:  # type: ignore[override]
            self.calls.append("assigned")

    listener = Plain()
    await member(listener)._assigned({A0})
    assert listener.calls == ["revoked", "assigned"]


async def test_the_listener_is_not_called_when_the_consumer_closes() -> None:
    listener = Recorder()
    consumer = member(listener)
    await consumer._assigned({A0, A1})
    assert consumer._membership is not None
    consumer._membership.assignment = {A0, A1}
    listener.calls.clear()
    await consumer.close()  # the membership gives A0 and A1 up as it closes
    assert listener.calls == []
    assert consumer.assignment() == set()


async def test_a_revoked_partition_hands_out_nothing_more_and_a_commit_keeps_what_was_delivered() -> None:
    listener = Recorder()
    consumer = member(listener, enable_auto_commit=False)
    await consumer._assigned({A0, A1})
    consumer._queue.put(A0, [message(A0, 0), message(A0, 1), message(A0, 2)])
    consumer._queue.put(A1, [message(A1, 5)])
    taken = consumer._queue.take_one(frozenset({A0}))
    assert taken is not None and taken.offset == 0
    seen: dict[str, object] = {}

    def during_revoke() -> None:
        seen["next"] = consumer._queue.take_one(frozenset({A0}))
        seen["offsets"] = {tp: v.offset for tp, v in consumer._auto_offsets().items()}
        seen["paused"] = consumer._states[A0].paused

    listener.during_revoke = during_revoke
    await consumer._revoked({A0})
    # Offsets 1 and 2 were buffered, not delivered: the next owner reads them, this member never does.
    assert seen == {"next": None, "offsets": {A0: 1}, "paused": True}
    remaining = consumer._queue.take_one()
    assert remaining is not None and remaining.topic_partition == A1


async def test_the_kip848_membership_awaits_the_listener() -> None:
    listener = Recorder()
    consumer = member(listener, group_protocol="consumer")
    membership = HeartbeatMembership(
        FakeSession(Coordinator()),  # type: ignore[arg-type]
        "g",
        ["t"],
        remote_assignor=None,
        rebalance_timeout_ms=1000,
        group_instance_id=None,
        on_assign=consumer._assigned,
        on_revoke=consumer._revoked,
        on_lose=consumer._lost,
    )
    consumer._membership = membership
    T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert await membership._beat()
    assert listener.calls == [("revoked", set()), ("assigned", {T0, T1})]
    assert membership.assignment == {T0, T1}


class Shrinking(Coordinator):
    """Assigns partitions 0 and 1 of "t", then only 0: the second rebalance revokes and adds nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.targets = [[0, 1], [0]]

    async def request(self, body: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        self.requests.append(body)
        target = self.targets.pop(0)
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0,
            error_code=0,
            member_id=body.member_id,
            member_epoch=len(self.requests),
            heartbeat_interval_ms=10,
            assignment=ConsumerGroupAssignment(
                topic_partitions=[ConsumerGroupTopicPartitions(topic_id=TOPIC_ID, partitions=target)]
            ),
        )


async def test_a_kip848_rebalance_that_only_revokes_ends_with_the_assignment_kept() -> None:
    listener = Recorder()
    consumer = member(listener, group_protocol="consumer")
    membership = HeartbeatMembership(
        FakeSession(Shrinking()),  # type: ignore[arg-type]
        "g",
        ["t"],
        remote_assignor=None,
        rebalance_timeout_ms=1000,
        group_instance_id=None,
        on_assign=consumer._assigned,
        on_revoke=consumer._revoked,
        on_lose=consumer._lost,
    )
    consumer._membership = membership
    T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert await membership._beat() and await membership._beat()
    assert listener.calls == [("revoked", set()), ("assigned", {T0, T1}), ("revoked", {T1}), ("assigned", {T0})]
    assert membership.assignment == {T0} and consumer.assignment() == {T0}


# ------------------------------------------------------------------------------------ patterns
def test_a_compiled_pattern_is_a_kafka_consumers_first_argument() -> None:
    consumer = client().consumer(re.compile("orders-.*"), group="g")
    assert consumer.topics == [] and consumer._pattern is not None and consumer._pattern.pattern == "orders-.*"
    named = client().consumer(pattern="orders-.*", group="g")
    assert named._pattern is not None and named._pattern.pattern == "orders-.*"
    with pytest.raises(ConfigurationError, match="not both"):
        client().consumer(re.compile("orders-.*"), pattern="x.*")
    with pytest.raises(ConfigurationError, match="not both"):
        client().consumer("orders", pattern=re.compile("x.*"))
    with pytest.raises(ConfigurationError, match="no regular expression"):
        client().consumer(pattern="orders-(")
    subscribed = client().consumer(group="g")
    subscribed.subscribe(re.compile("b.*"))
    assert subscribed._pattern is not None and subscribed._pattern.pattern == "b.*"
    with pytest.raises(ConfigurationError, match="topics or pattern"):
        subscribed.subscribe(re.compile("b.*"), pattern="c.*")


def test_pulsar_takes_a_pattern_as_first_argument_or_as_pattern() -> None:
    pulsar = pulsarwire.connect("pulsar://127.0.0.1:1")
    compiled = pulsar.consumer(re.compile("orders-.*"), group="g")
    named = pulsar.consumer(pattern="orders-.*", group="g")
    named_compiled = pulsar.consumer(pattern=re.compile("orders-.*"), group="g")
    texts = {c._pattern.text for c in (compiled, named, named_compiled) if c._pattern is not None}
    assert texts == {"orders-.*"}
    with pytest.raises(ConfigurationError, match="not both"):
        pulsar.consumer("orders", pattern="x.*", group="g")
    with pytest.raises(ConfigurationError, match="not both"):
        pulsar.consumer(re.compile("orders-.*"), pattern="x.*", group="g")
    with pytest.raises(ConfigurationError, match="no regular expression"):
        pulsar.consumer(pattern="orders-(", group="g")
    with pytest.raises(OptionTypeError, match="pattern"):
        pulsar.consumer(pattern=5, group="g")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="topics or pattern"):
        pulsar.consumer(group="g")


@pytest.mark.parametrize(
    "call", [kafkawire.sync.Client.consumer, pulsarwire.sync.Client.consumer, pulsarwire.Client.consumer]
)
def test_the_consumer_factories_declare_a_pattern_first_argument(call: typing.Callable[..., object]) -> None:
    hints = typing.get_type_hints(call)
    assert re.Pattern[str] in typing.get_args(hints["topics"])
    if call is not kafkawire.sync.Client.consumer:
        assert re.Pattern[str] in typing.get_args(hints["pattern"])


def test_the_listener_is_public() -> None:
    assert "ConsumerRebalanceListener" in kafkawire.__all__
    assert asyncio.iscoroutinefunction(ConsumerRebalanceListener.on_partitions_lost)
