"""``EnqueueQueue.put_value``, a blocking producer's per-record step, behaves the same compiled (the
``ValuePut`` of ``mqwire.common._enqueue_speedups``) and in Python: every case runs with each. (The compiled
``RecordFuture.result`` of the same module is checked by tests/unit/test_blocking_future.py, run with and without
the speedups.)"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import types
import weakref

import pytest

from mqwire.common import blocking_enqueue, blocking_future
from mqwire.common.blocking import Bridge
from mqwire.common.blocking_enqueue import YIELD_EVERY, EnqueueQueue
from mqwire.common.blocking_future import QueuedFuture, RecordFuture
from mqwire.common.errors import ClosedError, ForkedClientError, WrongLoopError
from tests.forking import raises_in_a_forked_child

LIVENESS = 30.0


class _Recorder:
    """An async producer's ``enqueue``; its first call waits for ``gate`` (without holding the loop)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.values: list[bytes] = []
        self._gate = gate

    async def enqueue(self, value: bytes) -> asyncio.Future[int]:
        if self._gate is not None:
            gate, self._gate = self._gate, None
            await asyncio.to_thread(gate.wait, LIVENESS)
        self.values.append(value)
        future = asyncio.get_running_loop().create_future()
        future.set_result(len(self.values) - 1)
        return future


def test_record_futures_read_their_results_compiled_where_the_speedups_are() -> None:
    written_in_python = isinstance(RecordFuture.__dict__["result"], types.FunctionType)
    assert written_in_python is (not blocking_enqueue.COMPILED)


def test_the_way_taken_is_the_one_asked_for(enqueue_way: str, bridge: Bridge) -> None:
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
    compiled = type(queue.put_value).__name__ == "ValuePut"
    assert compiled is (enqueue_way == "compiled")


def test_records_are_handed_over_in_order_and_each_future_resolved(enqueue_way: str, bridge: Bridge) -> None:
    gate = threading.Event()
    recorder = _Recorder(gate)
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, recorder.enqueue, what="test producer")
    try:
        futures = [queue.put_value(f"{i}".encode()) for i in range(1000)]
        assert all(type(future) is QueuedFuture for future in futures)
    finally:
        gate.set()
    assert [future.result(LIVENESS) for future in futures] == list(range(1000))
    assert recorder.values == [f"{i}".encode() for i in range(1000)]


def test_a_new_future_is_pending_and_outside_the_collectors_scans(enqueue_way: str, bridge: Bridge) -> None:
    gate = threading.Event()
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder(gate).enqueue, what="test producer")
    queue.put_value(b"held")  # its hand-over waits on the gate: the next records stay queued
    try:
        future = queue.put_value(b"queued")
        assert gc.is_tracked(future) is (not blocking_future.COMPILED)  # first: running() makes a condition
        assert future._state == "PENDING" and not future.done()
        assert queue.handing_over()
    finally:
        gate.set()
    assert future.result(LIVENESS) == 1
    assert not future.running() and future.done()


def test_a_call_from_the_loop_thread_is_refused(enqueue_way: str, bridge: Bridge) -> None:
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")

    async def from_the_loop() -> None:
        queue.put_value(b"would wait on itself")

    with pytest.raises(WrongLoopError):
        bridge.call(from_the_loop, timeout=LIVENESS)


def test_a_closed_queue_and_a_stopped_bridge_refuse_records(enqueue_way: str) -> None:
    bridge = Bridge("test-bridge")
    try:
        queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
        assert queue.put_value(b"first").result(LIVENESS) == 0
        queue.close()
        with pytest.raises(ClosedError):
            queue.put_value(b"after close")
        other: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
    finally:
        bridge.stop()
    with pytest.raises(ClosedError):
        other.put_value(b"after stop")


def test_a_caller_waits_for_room_when_the_queue_is_full(enqueue_way: str, bridge: Bridge) -> None:
    gate = threading.Event()
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder(gate).enqueue, what="test producer", limit=1)
    first = queue.put_value(b"held")  # taken by the hand-over, which waits on the gate
    deadline = time.monotonic() + LIVENESS
    while queue._records and time.monotonic() < deadline:  # the drain has taken it once the list is empty
        time.sleep(0.001)
    queue.put_value(b"fills the queue")
    put: list[RecordFuture[int]] = []
    waiting = threading.Thread(target=lambda: put.append(queue.put_value(b"waits")))  # type: ignore[arg-type]
    waiting.start()
    try:
        waiting.join(0.2)
        assert waiting.is_alive() and not put  # no room until the hand-over goes on
    finally:
        gate.set()
    waiting.join(LIVENESS)
    assert not waiting.is_alive()
    assert [first.result(LIVENESS), put[0].result(LIVENESS)] == [0, 2]


def test_a_caller_that_outruns_the_loop_yields_every_so_many_records(
    enqueue_way: str, bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    yields: list[int] = []  # the records queued at each yield
    sleep = time.sleep

    def counting(seconds: float) -> None:
        if seconds == 0:
            yields.append(len(queue._records) // 3)
        sleep(seconds)

    monkeypatch.setattr(time, "sleep", counting)  # before the queue is made: the compiled way holds it
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
    holding, release = threading.Event(), threading.Event()

    async def hold() -> None:  # blocks the loop itself: no drain takes a record until released
        holding.set()
        release.wait(LIVENESS)

    bridge.submit(hold)
    assert holding.wait(LIVENESS)
    try:
        futures = [queue.put_value(b"x") for _ in range(3 * YIELD_EVERY + 10)]
        assert len(queue._records) == 3 * len(futures)
        assert yields == [YIELD_EVERY, 2 * YIELD_EVERY, 3 * YIELD_EVERY]
    finally:
        release.set()
    assert futures[-1].result(LIVENESS) == len(futures) - 1


def test_a_dropped_queue_is_freed_without_the_collector(enqueue_way: str, bridge: Bridge) -> None:
    # A client dropped unclosed is freed at once, and its bridge's loop thread with it: no cycle through
    # put_value may keep the queue for the collector to find.
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
    assert queue.put_value(b"x").result(LIVENESS) == 0
    gone = weakref.ref(queue)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del queue
        assert gone() is None
    finally:
        if collecting:
            gc.enable()


def test_a_record_put_in_a_forked_child_raises(enqueue_way: str, bridge: Bridge) -> None:
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder().enqueue, what="test producer")
    assert raises_in_a_forked_child(lambda: queue.put_value(b"no loop thread here"), ForkedClientError)
    assert queue.put_value(b"parent").result(LIVENESS) == 0


def test_a_flag_kept_behind_a_property_is_read_as_an_attribute(enqueue_way: str, bridge: Bridge) -> None:
    # The compiled put_value reads the queue's flags in place from their slots; a class that keeps one
    # elsewhere is read through its attribute instead, for every record.
    class Watched(EnqueueQueue[int]):
        reads = 0

        @property  # type: ignore[override]
        def _scheduled(self) -> bool:
            type(self).reads += 1
            return bool(self.__dict__.get("scheduled", False))

        @_scheduled.setter
        def _scheduled(self, value: bool) -> None:
            self.__dict__["scheduled"] = value

    recorder = _Recorder()
    queue: Watched = Watched(bridge, recorder.enqueue, what="test producer")
    futures = [queue.put_value(b"%d" % i) for i in range(50)]
    assert [future.result(LIVENESS) for future in futures] == list(range(50))
    assert Watched.reads >= 50
