"""The consumer protocol's subscription and assignment bytes, against kafka-python's, and the assignors."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import ConsumerProtocolAssignment as PeerAssignment
from kafka.coordinator.assignors.abstract import ConsumerProtocolSubscription as PeerSubscription

from kafkawire.group.assignors import CooperativeStickyAssignor, RangeAssignor, RoundRobinAssignor
from kafkawire.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkawire.metadata import TopicPartition as TP
from mqwire.common.errors import ProtocolError


def test_we_read_what_kafka_python_writes() -> None:
    data = PeerSubscription(0, ["orders", "bills"], b"").encode()
    assert decode_subscription(data) == Subscription(["orders", "bills"], b"")
    assignment = PeerAssignment(0, [("orders", [0, 2]), ("bills", [1])], b"").encode()
    assert sorted(decode_assignment(assignment).partitions) == [TP("bills", 1), TP("orders", 0), TP("orders", 2)]


def test_kafka_python_reads_what_we_write() -> None:
    ours = encode_subscription(Subscription(["a"], None, [TP("a", 3)]))
    peer = PeerSubscription.decode(ours)
    assert (peer.version, peer.topics, peer.user_data) == (1, ["a"], None)
    assert [(tp.topic, tp.partitions) for tp in peer.owned_partitions] == [("a", [3])]
    assignment = PeerAssignment.decode(encode_assignment(Assignment([TP("t", 2), TP("t", 0)])))
    assert [(tp.topic, tp.partitions) for tp in assignment.assigned_partitions] == [("t", [0, 2])]


def test_golden_bytes() -> None:
    assert encode_subscription(Subscription(["a", "bb"], b""), version=0) == (
        b"\x00\x00\x00\x00\x00\x02\x00\x01a\x00\x02bb\x00\x00\x00\x00"
    )
    assert encode_assignment(Assignment([TP("t", 0), TP("t", 2)]), version=0) == (
        b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02\xff\xff\xff\xff"
    )
    # Newer versions: generation and rack read; a v3 writer's extra fields do not disturb a reader.
    v3 = encode_subscription(Subscription(["x"], None, [], 7, "rack-1"), version=3)
    assert decode_subscription(v3) == Subscription(["x"], None, [], 7, "rack-1")
    assert decode_assignment(b"") == Assignment([])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_is_a_protocol_error_or_a_value(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ProtocolError):  # anything else escaping fails the test
            decode(data)


def test_a_huge_claimed_array_is_refused_before_looping() -> None:
    with pytest.raises(ProtocolError, match="array"):
        decode_subscription(b"\x00\x00\x7f\xff\xff\xff")


def subs(**members: list[str]) -> dict[str, Subscription]:
    return {member: Subscription(topics) for member, topics in members.items()}


def test_range_gives_consecutive_ranges_extra_to_the_first_members() -> None:
    plan = RangeAssignor().assign({"t": 7, "u": 2}, subs(m1=["t", "u"], m2=["t", "u"], m3=["t"]))
    assert plan["m1"] == [TP("t", 0), TP("t", 1), TP("t", 2), TP("u", 0)]
    assert plan["m2"] == [TP("t", 3), TP("t", 4), TP("u", 1)]
    assert plan["m3"] == [TP("t", 5), TP("t", 6)]


def test_roundrobin_deals_in_turn_and_skips_members_not_subscribed() -> None:
    plan = RoundRobinAssignor().assign({"t": 3, "u": 2}, subs(a=["t", "u"], b=["t"]))
    assert plan["a"] == [TP("t", 0), TP("t", 2), TP("u", 0), TP("u", 1)]
    assert plan["b"] == [TP("t", 1)]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 12), min_size=1),
    st.lists(st.text("mnop", min_size=1, max_size=3), min_size=1, max_size=6, unique=True),
)
def test_every_partition_goes_to_exactly_one_member(counts: dict[str, int], members: list[str]) -> None:
    subscriptions = {m: Subscription(sorted(counts)) for m in members}
    for assignor in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor()):
        plan = assignor.assign(counts, subscriptions)
        given_out = [tp for partitions in plan.values() for tp in partitions]
        assert sorted(given_out) == sorted(TP(t, p) for t, n in counts.items() for p in range(n))
        sizes = [len(p) for p in plan.values()]
        if assignor.name != "range":
            assert max(sizes) - min(sizes) <= 1


def owned(topics: list[str], partitions: list[TP], generation: int = 1) -> Subscription:
    return Subscription(topics, None, partitions, generation)


def test_cooperative_sticky_keeps_what_members_own_and_holds_back_what_moves() -> None:

    assignor = CooperativeStickyAssignor()
    everything = [TP("t", p) for p in range(6)]
    # A newcomer joins a member owning all six: three must move, but not in this round.
    first = assignor.assign({"t": 6}, {"a": owned(["t"], everything), "b": owned(["t"], [])})
    assert len(first["a"]) == 3 and first["b"] == []
    # Next round: a gave three up; they go to b, and a keeps its three.
    second = assignor.assign({"t": 6}, {"a": owned(["t"], first["a"]), "b": owned(["t"], [])})
    assert second["a"] == first["a"]
    assert sorted(second["a"] + second["b"]) == everything
    # A partition claimed twice belongs to the newer generation's claim.
    contested = assignor.assign(
        {"t": 2}, {"a": owned(["t"], [TP("t", 0)], 1), "b": owned(["t"], [TP("t", 0), TP("t", 1)], 2)}
    )
    assert TP("t", 0) not in contested["a"]


def test_sticky_gives_back_what_members_held_in_the_same_round() -> None:
    from kafkawire.group.assignors import StickyAssignor

    everything = [TP("t", p) for p in range(6)]
    plan = StickyAssignor().assign({"t": 6}, {"a": owned(["t"], everything), "b": owned(["t"], [])})
    # Eager: nothing is held back; a keeps three of its six and b gets the other three at once.
    assert len(plan["a"]) == 3 and len(plan["b"]) == 3
    assert set(plan["a"]) <= set(everything) and sorted(plan["a"] + plan["b"]) == everything
    # A balanced group that rejoins keeps exactly what it held.
    again = StickyAssignor().assign({"t": 6}, {"a": owned(["t"], plan["a"]), "b": owned(["t"], plan["b"])})
    assert again == plan
