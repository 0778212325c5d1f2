"""The blocking Kafka producer's hand-over in slices and its settling per batch.

``_enqueue_records`` buffers a slice of records in order, bare values a run per batch (a refused record fails
alone); the blocking queue settles the futures of the records sharing a batch in one callback.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

import kafkawire
from kafkawire.delivery import BatchOutcome, RecordFuture
from kafkawire.message import RecordMetadata
from kafkawire.producer import Producer as AsyncProducer
from kafkawire.sync import _SliceQueue
from mqwire.common.blocking import Bridge
from mqwire.common.errors import ClosedError, OptionTypeError, SerializationError

LIVENESS = 30.0


def offline_producer() -> AsyncProducer:
    """A producer of topic "t" (two partitions) whose records stay buffered: nothing is sent."""
    client = kafkawire.connect("kafka://127.0.0.1:1")
    producer = client.producer("t")
    producer._running = True  # no sender: the accumulator keeps every record
    producer._topics["t"] = (producer._session.metadata.version, [0, 1], [0, 1])
    return producer


Run = tuple[int, int, "BatchOutcome | Exception", int]


async def test_a_slice_is_buffered_in_order_and_a_refused_record_fails_alone() -> None:
    producer = offline_producer()
    args: list[tuple[Any, ...]] = [(f"v{i}".encode(),) for i in range(6)]
    kwargs: list[Mapping[str, Any]] = [{} for _ in range(6)]
    kwargs[2] = {"timestamp_ms": "yesterday"}  # refused by enqueue's own check
    kwargs[4] = {"partition": 1, "key": b"k"}  # not a bare value: the full way, to another partition
    runs: list[Run] = []
    await producer._enqueue_records(args, kwargs, runs)

    batch = producer._accumulator.open_batch("t", 0)
    other = producer._accumulator.open_batch("t", 1)
    assert batch is not None and other is not None
    sticky = batch.outcome
    assert isinstance(runs[1][2], OptionTypeError)
    assert runs == [(0, 2, sticky, 0), (2, 3, runs[1][2], -1), (3, 4, sticky, 2), (4, 5, other.outcome, 0),
                    (5, 6, sticky, 3)]
    assert len(sticky) == 4  # the bare values in the order given, the refused one skipped


async def test_a_slice_of_bare_values_goes_in_a_run_per_batch_stamped_now() -> None:
    producer = offline_producer()
    producer._accumulator.batch_size = 1024  # a few records a batch
    await producer.enqueue(b"first")  # opens the sticky batch
    values = [f"{i:03}".encode() * 10 for i in range(100)]
    before = int(time.time() * 1000)
    runs: list[Run] = []
    await producer._enqueue_records([(value,) for value in values], [{} for _ in values], runs)
    after = int(time.time() * 1000)

    assert runs[0][0] == 0 and runs[-1][1] == 100
    assert all(previous[1] == run[0] for previous, run in itertools.pairwise(runs))  # in order, none lost
    outcomes = [run[2] for run in runs]
    assert all(isinstance(outcome, BatchOutcome) for outcome in outcomes)
    assert len(set(map(id, outcomes))) == len(outcomes) > 1  # one run per batch, several batches
    assert runs[0][3] == 1  # after the record already in the first batch
    for start, stop, outcome, first in runs:
        assert isinstance(outcome, BatchOutcome)
        assert all(before <= outcome.timestamps[place] <= after for place in range(first, first + stop - start))


async def test_values_alone_and_full_arguments_in_one_slice_keep_their_order() -> None:
    producer = offline_producer()
    values = [f"v{i}".encode() for i in range(6)]
    # Alone (kwargs None: the blocking enqueue's bare bytes), or as (args, kwargs), mixed in one slice.
    args: list[Any] = [value if i % 2 else (value,) for i, value in enumerate(values)]
    kwargs: list[Mapping[str, Any] | None] = [None if i % 2 else {} for i in range(6)]
    kwargs[4] = {"partition": 1}
    runs: list[Run] = []
    await producer._enqueue_records(args, kwargs, runs)
    sticky = producer._accumulator.open_batch("t", 0)
    other = producer._accumulator.open_batch("t", 1)
    assert sticky is not None and other is not None
    # In the order given, each in its place; neighbours in one batch make one run.
    assert runs == [(0, 4, sticky.outcome, 0), (4, 5, other.outcome, 0), (5, 6, sticky.outcome, 4)]

    alone: list[Run] = []
    await producer._enqueue_records(values, [None] * 6, alone)  # every value alone: one run
    assert alone == [(0, 6, sticky.outcome, 5)]
    assert producer._bare_values(values, [None] * 6) == values
    assert producer._bare_values([b"x" * (producer._fast_value_limit + 1)], [None]) is None  # too large: enqueue


class _ScriptedProducer:
    """The async producer's two ways of buffering, onto batches of three records settled by the test."""

    def __init__(self) -> None:
        self.outcomes: list[BatchOutcome] = []
        self.calls = 0

    def _place(self, value: bytes) -> RecordFuture:
        outcomes = self.outcomes
        if not outcomes or len(outcomes[-1]) == 3:
            outcomes.append(BatchOutcome.on_running_loop("t", 0))
        outcome = outcomes[-1]
        index = len(outcome.timestamps)
        outcome.timestamps.append(1000 + index)
        return RecordFuture(outcome, index)

    async def enqueue(self, value: bytes) -> RecordFuture:
        if value == b"bad":
            raise SerializationError("refused")
        return self._place(value)

    async def _enqueue_records(self, args: list[Any], kwargs: list[Mapping[str, Any] | None], into: list[Run]) -> None:
        self.calls += 1
        for at, (positional, named) in enumerate(zip(args, kwargs, strict=True)):
            try:
                future = await (self.enqueue(positional) if named is None else self.enqueue(*positional, **named))
            except Exception as error:
                into.append((at, at + 1, error, -1))
                continue
            into.append((at, at + 1, future._outcome, future._index))


def test_the_records_of_a_batch_settle_in_one_callback_in_order(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted = _ScriptedProducer()
    queue = _SliceQueue(bridge, scripted, "test producer")  # type: ignore[arg-type]
    gate = threading.Event()

    async def hold() -> None:  # the loop is busy while the records are queued: they go over in one slice
        gate.wait(LIVENESS)  # blocking the loop itself: waiting in a thread would let a drain run meanwhile

    bridge.submit(hold)
    settles: list[object] = []
    settle = queue._settle_batch

    def counted(done: RecordFuture) -> None:
        settles.append(done)
        settle(done)

    monkeypatch.setattr(queue, "_settle_batch", counted)
    values = [b"0", b"1", b"bad", b"3", b"4", b"5", b"6"]
    # The value alone (put_value, as the producer's enqueue of bare bytes) and full arguments, in one slice.
    futures = [queue.put_value(value) if i % 2 else queue.put((value,), {}) for i, value in enumerate(values)]
    gate.set()
    bridge.call(queue.drained)
    assert scripted.calls == 1
    assert len(scripted.outcomes) == 2  # six buffered records: two batches of three

    async def acknowledge() -> None:
        scripted.outcomes[0].succeed(100)
        scripted.outcomes[1].fail(ConnectionError("lost"))
        await asyncio.sleep(0)

    bridge.call(acknowledge)
    with pytest.raises(SerializationError):
        futures[2].result(LIVENESS)
    got = [futures[i].result(LIVENESS) for i in (0, 1, 3)]
    assert got == [RecordMetadata("t", 0, 100, 1000), RecordMetadata("t", 0, 101, 1001),
                   RecordMetadata("t", 0, 102, 1002)]
    for i in (4, 5, 6):
        with pytest.raises(ConnectionError):
            futures[i].result(LIVENESS)
    assert len(settles) == 2  # one callback per batch, not one per record
    assert not queue._unsettled
    assert futures[0]._lazy is not None  # a batch stored whole: each metadata made when asked for


def test_a_future_waited_on_in_another_thread_is_settled_with_its_batch(bridge: Bridge) -> None:
    scripted = _ScriptedProducer()
    queue = _SliceQueue(bridge, scripted, "test producer")  # type: ignore[arg-type]
    futures = [queue.put((f"{i}".encode(),), {}) for i in range(3)]
    done: list[object] = []
    futures[1].add_done_callback(done.append)  # the future's condition exists: the standard way settles it
    bridge.call(queue.drained)

    async def acknowledge() -> None:
        scripted.outcomes[0].succeed(7)
        await asyncio.sleep(0)

    bridge.call(acknowledge)
    assert [future.result(LIVENESS).offset for future in futures] == [7, 8, 9]
    assert done == [futures[1]]


def test_records_not_acknowledged_fail_when_the_queue_closes(bridge: Bridge) -> None:
    scripted = _ScriptedProducer()
    queue = _SliceQueue(bridge, scripted, "test producer")  # type: ignore[arg-type]
    futures = [queue.put((f"{i}".encode(),), {}) for i in range(4)]
    bridge.call(queue.drained)
    queue.close()
    for future in futures:
        with pytest.raises(ClosedError):
            future.result(LIVENESS)


def test_a_record_cancelled_before_the_hand_over_is_not_sent_and_the_others_keep_their_order(
    bridge: Bridge,
) -> None:
    scripted = _ScriptedProducer()
    sent: list[bytes] = []
    enqueue = scripted.enqueue

    async def recording(value: bytes) -> RecordFuture:
        sent.append(value)
        return await enqueue(value)

    scripted.enqueue = recording  # type: ignore[method-assign]
    queue = _SliceQueue(bridge, scripted, "test producer")  # type: ignore[arg-type]
    gate = threading.Event()

    async def hold() -> None:  # the loop is busy until the two records are cancelled: no drain starts them
        gate.wait(LIVENESS)

    bridge.submit(hold)
    futures = [queue.put((f"{i}".encode(),), {}) for i in range(5)]
    assert futures[1].cancel() and futures[3].cancel()
    gate.set()
    bridge.call(queue.drained)
    assert sent == [b"0", b"2", b"4"]

    async def acknowledge() -> None:
        scripted.outcomes[0].succeed(40)
        await asyncio.sleep(0)

    bridge.call(acknowledge)
    assert [futures[i].result(LIVENESS).offset for i in (0, 2, 4)] == [40, 41, 42]
    assert futures[1].cancelled() and futures[3].cancelled()
