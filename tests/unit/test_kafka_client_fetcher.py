"""Turning fetched batches into messages, and the bounded queue between the fetcher and the application."""

from __future__ import annotations

import asyncio

import pytest

from kafkawire.fetcher import batches_to_messages
from kafkawire.message import Message, TimestampType
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.records import BatchBuilder, decode_batches
from kafkawire.receive_queue import ReceiveQueue

TP = TopicPartition("t", 0)


def batch(base_offset: int, values: list[bytes], *, compression: str | None = None, producer_id: int = -1,
          transactional: bool = False, control: bool = False, key: bytes | None = None) -> bytes:
    builder = BatchBuilder(compression=compression, producer_id=producer_id, producer_epoch=0 if producer_id >= 0
                           else -1, base_sequence=0 if producer_id >= 0 else -1, transactional=transactional,
                           control=control)
    for value in values:
        builder.append(1000, key, value, [("h", b"x")])
    return builder.build(base_offset)


def marker(base_offset: int, producer_id: int, commit: bool) -> bytes:
    # Control record key: version int16 0, type int16 (0 abort, 1 commit).
    key = b"\x00\x00\x00" + (b"\x01" if commit else b"\x00")
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=0, transactional=True, control=True)
    builder.append(1000, key, b"\x00\x00\x00\x00\x00\x00", ())
    return builder.build(base_offset)


def values(messages: list[Message]) -> list[bytes | None]:
    return [m.value for m in messages]


def test_messages_carry_every_field() -> None:
    data = batch(10, [b"a", b"b"], key=b"k")
    messages, position = batches_to_messages(TP, decode_batches(data), 10, None, False)
    assert position == 12
    first = messages[0]
    assert (first.topic, first.partition, first.offset, first.key, first.value) == ("t", 0, 10, b"k", b"a")
    assert first.headers == {"h": b"x"}
    assert first.raw_headers == (("h", b"x"),)
    assert first.timestamp == 1000
    assert first.timestamp_type is TimestampType.CREATE_TIME


def test_records_before_the_position_inside_a_compressed_batch_are_dropped() -> None:
    data = batch(100, [b"%d" % i for i in range(10)], compression="gzip")
    messages, position = batches_to_messages(TP, decode_batches(data), 104, None, False)
    assert [m.offset for m in messages] == list(range(104, 110))
    assert position == 110


def test_whole_batches_before_the_position_are_skipped() -> None:
    data = batch(0, [b"a", b"b"]) + batch(2, [b"c"])
    messages, position = batches_to_messages(TP, decode_batches(data), 2, None, False)
    assert values(messages) == [b"c"]
    assert position == 3


def test_control_batches_never_reach_the_application() -> None:
    data = batch(0, [b"a"], producer_id=5, transactional=True) + marker(1, 5, commit=True) + batch(2, [b"b"])
    messages, position = batches_to_messages(TP, decode_batches(data), 0, None, False)
    assert values(messages) == [b"a", b"b"]
    assert position == 3


def test_read_committed_drops_aborted_transactions() -> None:
    data = (
        batch(0, [b"aborted-1", b"aborted-2"], producer_id=7, transactional=True)
        + batch(2, [b"committed"], producer_id=8, transactional=True)
        + marker(3, 7, commit=False)
        + marker(4, 8, commit=True)
        + batch(5, [b"later-from-7"], producer_id=7, transactional=True)
        + marker(6, 7, commit=True)
    )
    batches = decode_batches(data)
    messages, position = batches_to_messages(TP, batches, 0, [(0, 7)], True)
    assert values(messages) == [b"committed", b"later-from-7"]
    assert position == 7
    # read_uncommitted sees everything except the markers.
    messages, _ = batches_to_messages(TP, batches, 0, [(0, 7)], False)
    assert values(messages) == [b"aborted-1", b"aborted-2", b"committed", b"later-from-7"]


def test_null_header_values_read_as_empty_bytes() -> None:
    message = Message("t", 0, 0, None, b"v", [("a", None), ("b", b"1"), ("b", b"2")], 0,
                      TimestampType.CREATE_TIME, None)
    assert message.headers == {"a": b"", "b": b"2"}


def make_messages(count: int, start: int = 0, tp: TopicPartition = TP) -> list[Message]:
    return [Message(tp.topic, tp.partition, start + i, None, b"%d" % i, [], 0, TimestampType.CREATE_TIME, None)
            for i in range(count)]


def test_queue_hands_out_records_in_order() -> None:
    queue = ReceiveQueue(100)
    queue.put(TP, make_messages(3))
    queue.put(TP, make_messages(2, start=3))
    assert [m.offset for m in queue.take(4)] == [0, 1, 2, 3]
    one = queue.take_one()
    assert one is not None and one.offset == 4
    assert queue.take_one() is None
    assert queue.buffered == 0


async def test_queue_signals_space_when_drained_below_the_bound() -> None:
    queue = ReceiveQueue(5)
    queue.put(TP, make_messages(8))
    assert not queue.has_space
    waiter = asyncio.ensure_future(queue.wait_space())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.take(3)
    await asyncio.sleep(0)
    assert not waiter.done()  # 5 left: still at the bound
    assert queue.take_one() is not None
    await asyncio.wait_for(waiter, 1.0)


def test_queue_drop_forgets_one_partition() -> None:
    other = TopicPartition("t", 1)
    queue = ReceiveQueue(100)
    queue.put(TP, make_messages(3))
    queue.put(other, make_messages(2, tp=other))
    queue.take_one()
    queue.drop(TP)
    assert queue.buffered == 2
    assert [m.partition for m in queue.take(10)] == [1, 1]


def test_queued_error_is_raised_first() -> None:
    queue = ReceiveQueue(10)
    queue.put(TP, make_messages(1))
    queue.put_error(ValueError("boom"))
    with pytest.raises(ValueError):
        queue.take(10)
    assert len(queue.take(10)) == 1


async def test_wait_data_returns_on_timeout_or_data() -> None:
    queue = ReceiveQueue(10)
    await asyncio.wait_for(queue.wait_data(0.01), 1.0)
    waiter = asyncio.ensure_future(queue.wait_data(None))
    await asyncio.sleep(0)
    queue.put(TP, make_messages(1))
    await asyncio.wait_for(waiter, 1.0)
