"""kafkawire's public surface without a broker: argument checks, what auto-commit stores, the record queue's
bookkeeping of delivered positions, serializers, and what the public classes expose."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kafkawire
from kafkawire import Client, TopicPartition
from kafkawire.fetcher import PartitionState
from kafkawire.message import Message, TimestampType
from kafkawire.receive_queue import ReceiveQueue
from mqwire.common.errors import ConfigurationError, SerializationError

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


def client() -> Client:
    return kafkawire.connect("kafka://127.0.0.1:1")


def message(tp: TopicPartition, offset: int, value: bytes = b"v") -> Message:
    return Message(tp.topic, tp.partition, offset, None, value, [], 0, TimestampType.CREATE_TIME, 3)


# ------------------------------------------------------------------------------------ the record queue
def test_the_queue_remembers_the_last_record_handed_out_per_partition() -> None:
    queue = ReceiveQueue(100)
    queue.put(A0, [message(A0, 0), message(A0, 1), message(A0, 2)])
    queue.put(A1, [message(A1, 5)])
    assert queue.delivered == {}
    assert queue.take_one() is not None
    assert queue.delivered[A0].offset == 0
    assert [m.offset for m in queue.take(10)] == [1, 2, 5]
    assert (queue.delivered[A0].offset, queue.delivered[A1].offset) == (2, 5)
    queue.drop(A0)  # a seek: what was delivered before it no longer says where to go on
    assert A0 not in queue.delivered


def test_the_queue_takes_records_of_some_partitions_only() -> None:
    queue = ReceiveQueue(100)
    queue.put(A0, [message(A0, 0), message(A0, 1)])
    queue.put(A1, [message(A1, 7), message(A1, 8)])
    assert queue.has_records_of(frozenset({A1}))
    assert [m.offset for m in queue.take(10, frozenset({A1}))] == [7, 8]
    assert not queue.has_records_of(frozenset({A1}))
    assert queue.buffered == 2
    one = queue.take_one(frozenset({A0}))
    assert one is not None and one.offset == 0
    assert [m.offset for m in queue.take(10)] == [1]
    assert queue.buffered == 0 and not queue.ready


# ------------------------------------------------------------------------------------ consumer options
def test_start_is_latest_by_default_and_auto_offset_reset_is_its_aiokafka_name() -> None:
    assert client().consumer("t").start_from == "latest"
    assert client().consumer("t", auto_offset_reset="earliest").start_from == "earliest"
    assert client().consumer("t", start="earliest", auto_offset_reset="earliest").start_from == "earliest"
    with pytest.raises(ValueError, match="auto_offset_reset"):
        client().consumer("t", start="earliest", auto_offset_reset="latest")
    with pytest.raises(ValueError, match="auto_offset_reset"):
        client().consumer("t", auto_offset_reset="smallest")  # type: ignore[arg-type]


def test_subscription_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="topics or pattern"):
        client().consumer("t", pattern="t.*")
    with pytest.raises(TypeError, match="pattern"):
        client().consumer(pattern=5)  # type: ignore[arg-type]
    consumer = client().consumer(group="g")
    with pytest.raises(ValueError, match="topics or pattern"):
        consumer.subscribe()
    with pytest.raises(ValueError, match="topics or pattern"):
        consumer.subscribe(["t"], pattern=re.compile("t.*"))
    consumer.subscribe(pattern="t.*")  # before start: taken up when the consumer starts
    assert consumer._pattern is not None and consumer._pattern.pattern == "t.*"
    consumer.assign([("t", 0), TopicPartition("u", 1)])
    assert consumer._requested == [TopicPartition("t", 0), TopicPartition("u", 1)]
    assert consumer._pattern is None
    consumer.unsubscribe()
    assert consumer._requested == [] and consumer.topics == []


async def test_poll_arguments_are_checked_before_anything_starts() -> None:
    consumer = client().consumer("t")
    with pytest.raises(ValueError, match="timeout_ms"):
        await consumer.getmany(timeout=1, timeout_ms=1000)
    with pytest.raises(ValueError, match="timeout"):
        await consumer.getmany(timeout=-1)
    with pytest.raises(ValueError, match="max_records"):
        await consumer.getmany(max_records=0)
    with pytest.raises(ValueError, match="timeout"):
        await consumer.receive(timeout=-0.5)
    assert not consumer._lifecycle.started


def test_auto_commit_stores_delivered_positions_unless_only_acknowledged_ones() -> None:
    for only_acked, expected in ((False, {A0: 3, A1: 8}), (True, {A0: 1})):
        consumer = client().consumer("a", group="g", commit_acknowledged_only=only_acked)
        for tp in (A0, A1):
            consumer._states[tp] = PartitionState(tp)
        consumer._queue.put(A0, [message(A0, 0), message(A0, 1), message(A0, 2)])
        consumer._queue.put(A1, [message(A1, 7)])
        taken = consumer._queue.take(10)
        asyncio.run(consumer.ack(taken[0]))
        offsets = consumer._auto_offsets()
        assert {tp: value.offset for tp, value in offsets.items()} == expected
        assert all(value.leader_epoch == 3 for value in offsets.values())
    with pytest.raises(TypeError, match="commit_acknowledged_only"):
        client().consumer("a", group="g", commit_acknowledged_only=1)  # type: ignore[arg-type]


def test_deserialized_deliveries_are_tracked_past_the_gate() -> None:
    consumer = client().consumer("a", group="g", value_deserializer=json.loads)
    consumer._states[A0] = PartitionState(A0)
    consumer._queue.put(A0, [message(A0, 0, b"1"), message(A0, 1, b"oops"), message(A0, 2, b"3")])
    good = consumer._gate.many(consumer._queue.take(10))
    for delivered in good:
        consumer._delivered[delivered.topic_partition] = delivered
    assert [m.value for m in good] == [1]
    # The queue handed out offset 2, but the application has seen offset 0 only: commit 1, not 3.
    assert {tp: v.offset for tp, v in consumer._auto_offsets().items()} == {A0: 1}


# ------------------------------------------------------------------------------------ producer
async def test_serializers_run_before_buffering_and_name_themselves() -> None:
    producer = client().producer(value_serializer=lambda v: json.dumps(v).encode())
    with pytest.raises(SerializationError, match="value_serializer raised TypeError"):
        await producer.enqueue({1, 2}, topic="t")  # a set is not JSON
    with pytest.raises(SerializationError, match="key_serializer"):
        await producer.enqueue({"id": 1}, key="k", topic="t")
    with pytest.raises(TypeError, match="key_serializer"):
        client().producer("t", key_serializer="utf-8")  # type: ignore[arg-type]
    await producer.close()


async def test_begin_transaction_is_a_coroutine_that_checks_first() -> None:
    producer = client().producer("t")
    with pytest.raises(ConfigurationError, match="transactional_id"):
        await producer.begin_transaction()
    assert not producer._running  # nothing was started for a call that cannot work
    await producer.close()


# ------------------------------------------------------------------------------------ public surface
def test_unknown_options_are_named_with_a_suggestion() -> None:
    with pytest.raises(kafkawire.UnknownOptionError, match=r"consumer: unknown option 'grop' \(did you mean group\?\)"):
        client().consumer("t", grop="g")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="connect: unknown option 'topic'"):
        kafkawire.connect("kafka://x:1", topic="t")  # type: ignore[call-arg]


def test_the_client_is_a_factory_and_the_session_is_private() -> None:
    for helper in ("adopt", "release", "request_any", "connection", "coordinator", "track", "discard"):
        assert not hasattr(Client, helper), helper
    for name in kafkawire.__all__:
        assert getattr(kafkawire, name) is not None
    assert "Session" not in kafkawire.__all__


def test_mypy_names_a_misspelled_option_in_user_code(tmp_path: Path) -> None:
    snippet = tmp_path / "user.py"
    snippet.write_text(
        "import kafkawire\n\n\n"
        "async def main() -> None:\n"
        "    async with kafkawire.connect('kafka://h:9092', client_id='x') as client:\n"
        "        client.producer('t', linger_ms=5, lingerms=5)\n"
        "        client.consumer('t', group='g', enable_autocommit=False)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(snippet)],
        capture_output=True, text=True, check=False, cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 1, result.stdout
    assert '"lingerms"' in result.stdout and '"enable_autocommit"' in result.stdout
    assert result.stdout.count("error:") == 2, result.stdout
