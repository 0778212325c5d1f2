"""The loop bridge of the blocking clients alone: results, errors, the loop thread's own calls, timeouts,
Ctrl-C, stopping; and the batched hand-off of enqueued records.

These tests are synchronous (the bridge is for code without an event loop), so they run once, not per loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import subprocess
import sys
import threading
from typing import Any

import pytest

from mqwire.common.blocking import Bridge
from mqwire.common.blocking_enqueue import EnqueueQueue
from mqwire.common.errors import (
    ClosedError,
    ConfigurationError,
    ConnectError,
    ForkedClientError,
    ReceiveTimeoutError,
    RequestTimeoutError,
    SerializationError,
    WrongLoopError,
)
from tests.forking import raises_in_a_forked_child
from tests.interrupts import ctrl_c_after

# A liveness bound only (generous, for a loaded machine): every wait below ends long before it unless hung.
LIVENESS = 30.0


def test_call_returns_the_result_computed_on_the_loop_thread(bridge: Bridge) -> None:
    async def where(a: int, b: int) -> tuple[int, int, bool]:
        await asyncio.sleep(0)
        return a + b, threading.get_ident(), asyncio.get_running_loop().is_running()

    total, thread, running = bridge.call(where, 2, 3)
    assert (total, thread, running) == (5, bridge.thread_id, True)
    assert thread != threading.get_ident()
    assert bridge.run_sync(threading.get_ident) == bridge.thread_id


def test_a_typed_error_is_raised_in_the_callers_thread_as_is_with_its_cause(bridge: Bridge) -> None:
    raised: list[BaseException] = []

    async def fails() -> None:
        try:
            raise KeyError("the serializer's own failure")
        except KeyError as cause:
            error = SerializationError("value_serializer failed")
            raised.append(error)
            raise error from cause

    with pytest.raises(SerializationError) as caught:
        bridge.call(fails)
    assert caught.value is raised[0]
    assert isinstance(caught.value.__cause__, KeyError)


def test_a_blocking_call_from_the_loop_thread_is_refused_not_deadlocked(bridge: Bridge) -> None:
    async def nested() -> int:
        return bridge.call(_echo, 1)  # type: ignore[no-any-return]

    with pytest.raises(WrongLoopError, match="its own event loop thread"):
        bridge.wait(bridge.submit(nested), timeout=LIVENESS)
    with pytest.raises(WrongLoopError):
        bridge.wait(bridge.submit(_run_sync_inside, bridge), timeout=LIVENESS)
    assert bridge.call(_echo, "still usable") == "still usable"


async def _run_sync_inside(bridge: Bridge) -> int:
    return bridge.run_sync(threading.get_ident)


async def _echo(value: Any) -> Any:
    return value


def test_a_timeout_ends_the_wait_cancels_the_call_and_raises_the_typed_error(bridge: Bridge) -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(RequestTimeoutError):
        bridge.call(forever, timeout=0.05)
    assert cancelled.wait(LIVENESS)
    with pytest.raises(ReceiveTimeoutError):
        bridge.call(forever, timeout=0.05, timeout_error=ReceiveTimeoutError)
    assert bridge.call(_echo, 7, timeout=LIVENESS) == 7


def test_ctrl_c_cancels_the_pending_call_and_leaves_the_bridge_usable(bridge: Bridge) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def waits() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with ctrl_c_after(started) as ctrl_c, pytest.raises(KeyboardInterrupt), ctrl_c.armed():
        bridge.call(waits)
    assert cancelled.wait(LIVENESS)
    assert bridge.call(_echo, "after") == "after"


def test_stop_ends_the_loop_thread_and_later_calls_raise_closed() -> None:
    before = set(threading.enumerate())
    made = Bridge("test-stop")
    started = [t for t in threading.enumerate() if t not in before]
    assert [t.name for t in started] == ["test-stop"]
    running = made.submit(asyncio.sleep, 3600)  # still running when the bridge stops: cancelled, not waited for
    made.stop()
    made.stop()
    assert set(threading.enumerate()) == before
    with pytest.raises(ClosedError):
        made.wait(running)
    with pytest.raises(ClosedError):
        made.call(_echo, 1)


def test_stop_from_the_loop_thread_is_refused(bridge: Bridge) -> None:
    with pytest.raises(WrongLoopError):
        bridge.run_sync(bridge.stop)
    assert not bridge.closed


class _Recorder:
    """An async producer's ``enqueue``; its first call waits for ``gate`` (without holding the loop)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.values: list[bytes] = []
        self._gate = gate

    async def enqueue(self, value: bytes, *, fail: bool = False) -> asyncio.Future[int]:
        if self._gate is not None:
            gate, self._gate = self._gate, None
            await asyncio.to_thread(gate.wait, LIVENESS)
        if fail:
            raise SerializationError("refused")
        self.values.append(value)
        future = asyncio.get_running_loop().create_future()
        future.set_result(len(self.values) - 1)
        return future


def test_enqueue_hands_records_over_in_bursts_in_order_each_future_resolved(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    recorder = _Recorder(gate)
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, recorder.enqueue, what="test producer")
    submitted: list[object] = []
    submit = bridge.submit

    def counting(fn: Any, *args: Any) -> Any:
        submitted.append(fn)
        return submit(fn, *args)

    monkeypatch.setattr(bridge, "submit", counting)
    # The first record's hand-over waits on the gate while the other 999 are queued: one burst.
    futures = [queue.put((f"{i}".encode(),), {}) for i in range(1000)]
    gate.set()
    results = [future.result(LIVENESS) for future in futures]
    assert results == list(range(1000))
    assert recorder.values == [f"{i}".encode() for i in range(1000)]
    assert len(submitted) == 1  # one cross-thread call for the whole burst, not one per record

    refused = queue.put((b"x",), {"fail": True})
    with pytest.raises(SerializationError):
        refused.result(LIVENESS)
    bridge.call(queue.drained)
    queue.close()
    with pytest.raises(ClosedError):
        queue.put((b"late",), {})


def test_enqueue_from_threads_sharing_one_queue_loses_nothing(bridge: Bridge) -> None:
    recorder = _Recorder()
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, recorder.enqueue, what="test producer", limit=64)

    def produce(thread: int) -> list[concurrent.futures.Future[int]]:
        return [queue.put((f"{thread}-{i}".encode(),), {}) for i in range(500)]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        batches = list(pool.map(produce, range(8)))
    for batch in batches:
        for future in batch:
            future.result(LIVENESS)
    assert sorted(recorder.values) == sorted(f"{t}-{i}".encode() for t in range(8) for i in range(500))
    for thread in range(8):  # each thread's records kept its order
        mine = [v for v in recorder.values if v.startswith(f"{thread}-".encode())]
        assert mine == [f"{thread}-{i}".encode() for i in range(500)]


def test_enqueue_from_the_loop_thread_is_refused_even_when_the_queue_is_full(bridge: Bridge) -> None:
    gate = threading.Event()
    queue: EnqueueQueue[int] = EnqueueQueue(bridge, _Recorder(gate).enqueue, what="test producer", limit=1)
    first = queue.put((b"held",), {})  # its hand-over waits on the gate: the queue stays full after the next
    queue.put((b"queued",), {})

    async def from_the_loop() -> None:
        queue.put((b"would wait forever",), {})

    with pytest.raises(WrongLoopError):
        bridge.call(from_the_loop, timeout=LIVENESS)
    gate.set()
    assert first.result(LIVENESS) == 0


def test_a_bridge_used_in_a_forked_child_raises_instead_of_waiting_forever(bridge: Bridge) -> None:
    assert raises_in_a_forked_child(lambda: bridge.call(_echo, 1, timeout=LIVENESS), ForkedClientError)
    assert bridge.call(_echo, "parent") == "parent"


@pytest.mark.parametrize("package", ["kafkawire", "tubemqwire"])
def test_a_failed_connect_raises_the_typed_error_and_leaves_no_thread(package: str) -> None:
    sync = importlib.import_module(f"{package}.sync")
    scheme = package.removesuffix("wire")
    before = set(threading.enumerate())
    with pytest.raises(ConnectError):
        sync.connect(f"{scheme}://127.0.0.1:1")  # nothing listens on port 1: refused at once
    if package == "kafkawire":  # tubemqwire's async connect takes declared parameters only (a TypeError)
        with pytest.raises(ConfigurationError, match="did you mean"):
            sync.connect(f"{scheme}://127.0.0.1:1", request_timeout_mss=1)
    assert set(threading.enumerate()) == before


def test_a_process_leaving_a_bridge_unstopped_still_exits() -> None:
    # A script that never closes its blocking client: the interpreter's exit must not wait on the loop thread.
    script = (
        "import asyncio\n"
        "from mqwire.common.blocking import Bridge\n"
        "kept = Bridge('left-open')\n"
        "kept.call(asyncio.sleep, 0)\n"
        "def dropped():\n"
        "    Bridge('dropped').call(asyncio.sleep, 0)\n"
        "dropped()\n"
        "print('done')\n"
    )
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "done"
