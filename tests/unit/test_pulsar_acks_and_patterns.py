"""Ack timeout buckets, batch-index ack sets, topic patterns, and the redelivery and batching options."""

from __future__ import annotations

import asyncio
import re

import pytest

import pulsarwire
from pulsarwire.acks import AckGrouping, BatchAcks, UnackedTracker, bitset_words
from pulsarwire.options import ConsumerConfig, DeadLetterPolicy, ProducerConfig
from pulsarwire.protocol import commands
from pulsarwire.protocol.frames import encode_command
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, CommandGetTopicsOfNamespace
from pulsarwire.topic_pattern import TopicPattern


def test_bitset_words_are_java_bitset_longs() -> None:
    assert bitset_words(0) == [0]
    assert bitset_words(0b1010) == [10]
    assert bitset_words(1 << 63) == [-(1 << 63)]
    assert bitset_words((1 << 64) | 1) == [1, 1]


def test_batch_acks_report_the_indexes_left() -> None:
    batch = BatchAcks()
    batch.expect(0b1111)
    assert not batch.ack(1)
    assert batch.unacked == 0b1101
    assert not batch.ack(1)  # twice is once
    for index in (0, 2):
        assert not batch.ack(index)
    assert batch.ack(3) and batch.complete


async def test_partial_acks_leave_with_their_ack_set_and_a_full_ack_replaces_them() -> None:
    sent: list[object] = []
    grouping = AckGrouping(
        lambda positions: sent.append(("full", positions)) is None,
        lambda position: sent.append(("cumulative", position)) is None,
        delay=10.0,
        max_size=100,
        send_partial=lambda items: sent.append(("partial", items)) is None,
    )
    grouping.add_partial(1, 2, 0b110)
    grouping.add_partial(1, 3, 0b1)
    grouping.add(1, 3)
    grouping.flush()
    assert sent == [("full", [(1, 3)]), ("partial", [((1, 2), 0b110)])]
    grouping.discard()


async def test_partial_acks_are_dropped_without_batch_index_acks() -> None:
    sent: list[object] = []
    grouping = AckGrouping(lambda p: sent.append(p) is None, lambda p: True, delay=10.0, max_size=100)
    grouping.add_partial(1, 2, 0b110)
    grouping.flush()
    assert sent == []


class Redeliveries:
    """Records each redelivery with the loop's time and wakes whoever waits for the next one."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, list[tuple[int, int]]]] = []
        self.arrived = asyncio.Event()

    def __call__(self, positions: list[tuple[int, int]]) -> None:
        self.calls.append((asyncio.get_running_loop().time(), positions))
        self.arrived.set()

    async def next(self) -> tuple[float, list[tuple[int, int]]]:
        # Liveness only: the timeouts below are a fraction of a second, 10 s is far beyond any scheduling lag.
        async with asyncio.timeout(10):
            await self.arrived.wait()
        self.arrived.clear()
        return self.calls[-1]


async def test_unacked_tracker_redelivers_after_the_timeout_only_what_is_left() -> None:
    redelivered = Redeliveries()
    tracker = UnackedTracker(redelivered, timeout=0.2)
    added_at = asyncio.get_running_loop().time()
    for entry in range(4):
        tracker.add((1, entry))
    tracker.remove((1, 1))
    tracker.remove_up_to((1, 0))
    assert len(tracker) == 2
    fired_at, positions = await redelivered.next()
    assert fired_at - added_at >= 0.2 - 0.001  # not before the timeout (less the loop clock's millisecond)
    assert sorted(positions) == [(1, 2), (1, 3)] and len(redelivered.calls) == 1
    assert len(tracker) == 0
    tracker.stop()


async def test_unacked_tracker_stop_cancels_everything() -> None:
    stopped_calls = Redeliveries()
    stopped = UnackedTracker(stopped_calls, timeout=0.1)
    stopped.add((1, 1))
    stopped.stop()
    # A tracker started afterwards, with the same timeout, redelivers after the stopped one would have.
    later = Redeliveries()
    tracker = UnackedTracker(later, timeout=0.1)
    tracker.add((2, 1))
    await later.next()
    tracker.stop()
    assert stopped_calls.calls == []


def test_topic_patterns_name_their_namespace_and_match_complete_names() -> None:
    pattern = TopicPattern(re.compile("persistent://acme/orders/eu-.*"))
    assert (pattern.namespace, pattern.mode) == ("acme/orders", CommandGetTopicsOfNamespace.PERSISTENT)
    assert pattern.matches("persistent://acme/orders/eu-1")
    assert not pattern.matches("persistent://acme/orders/us-1")
    short = TopicPattern(re.compile("eu-.*"))
    assert short.namespace == "public/default" and short.matches("persistent://public/default/eu-2")
    assert TopicPattern(re.compile("non-persistent://t/n/x.*")).mode == CommandGetTopicsOfNamespace.NON_PERSISTENT
    with pytest.raises(ValueError, match="literal"):
        TopicPattern(re.compile("persistent://acme/.*/eu"))
    with pytest.raises(ValueError, match="domain"):
        TopicPattern(re.compile("kafka://acme/orders/eu"))


def test_get_topics_of_namespace_round_trips() -> None:
    command = commands.get_topics_of_namespace("acme/orders", 7, mode=CommandGetTopicsOfNamespace.ALL)
    parsed = BaseCommand()
    parsed.ParseFromString(encode_command(command)[8:])
    body = parsed.getTopicsOfNamespace
    assert (parsed.type, body.request_id, body.namespace, body.mode) == (
        BaseCommand.GET_TOPICS_OF_NAMESPACE, 7, "acme/orders", CommandGetTopicsOfNamespace.ALL
    )


def test_redelivery_and_discovery_consumer_options() -> None:
    built = ConsumerConfig.build({
        "group": "g",
        "subscription_type": "Shared",
        "ack_timeout_ms": 1500,
        "batch_index_ack_enabled": True,
        "dead_letter_policy": {"max_redeliver_count": 3, "dead_letter_topic": "dlq"},
        "retry_enable": True,
        "pattern_auto_discovery_period_ms": 250,
        "auto_update_partitions_interval_ms": 500,
    })
    assert built.ack_timeout == 1.5 and built.batch_index_ack_enabled and built.retry_enable
    assert built.dead_letter_policy == DeadLetterPolicy(3, "dlq")
    assert (built.pattern_auto_discovery_period, built.auto_update_partitions_interval) == (0.25, 0.5)
    with pytest.raises(TypeError, match="dead_letter_policy"):
        ConsumerConfig.build({"group": "g", "dead_letter_policy": {"max_redeliveries": 3}})
    with pytest.raises(ValueError, match="auto_update_partitions_interval_ms"):
        ConsumerConfig.build({"group": "g", "auto_update_partitions_interval_ms": 0})


def test_key_based_batching_and_initial_subscription_producer_options() -> None:
    assert ProducerConfig.build({"batcher_builder": "key_based"}).key_based_batching
    assert not ProducerConfig.build({}).key_based_batching
    with pytest.raises(ValueError, match="batcher_builder"):
        ProducerConfig.build({"batcher_builder": "by_key"})
    assert ProducerConfig.build({"initial_subscription_name": "s"}).initial_subscription_name == "s"


def test_consumer_construction_checks_dead_letter_and_pattern_arguments() -> None:
    client = pulsarwire.Client("pulsar://127.0.0.1:6650")
    consumer = client.consumer("orders", group="g", subscription_type="Shared", retry_enable=True,
                               dead_letter_policy={"max_redeliver_count": 2})
    assert consumer.dead_letters is not None
    assert consumer.dead_letters.dead_letter_topic == "persistent://public/default/orders-g-DLQ"
    assert consumer.dead_letters.retry_topic == "persistent://public/default/orders-g-RETRY"
    assert consumer.topics == ["persistent://public/default/orders", "persistent://public/default/orders-g-RETRY"]
    with pytest.raises(ValueError, match="dead_letter_topic"):
        client.consumer(["a", "b"], group="g", subscription_type="Shared",
                        dead_letter_policy={"max_redeliver_count": 2})
    with pytest.raises(ValueError, match="literal"):
        client.consumer(re.compile("persistent://p.*/default/x"), group="g")
