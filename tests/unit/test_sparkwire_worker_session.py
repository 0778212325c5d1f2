"""The Python worker's session: one loop bridge for every task, values kept between tasks on that running loop
(closed by it once idle too long), closed on failure, and a bridge of its own in a forked child."""

from __future__ import annotations

import asyncio
import faulthandler
import os
import subprocess
import sys
import threading

import pytest

from sparkwire.worker_session import WorkerSession


class Value:
    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Opener:
    def __init__(self) -> None:
        self.opened: list[Value] = []

    async def __call__(self) -> Value:
        self.opened.append(Value(len(self.opened)))
        return self.opened[-1]


def test_a_kept_value_is_taken_again_by_the_next_task_with_its_key() -> None:
    session = WorkerSession()
    opener = Opener()

    async def task(key: str) -> Value:
        value = await session.take(key, opener)
        await session.keep(key, value, idle_limit=60)
        return value

    first = session.run(task, "k")
    assert session.run(task, "k") is first
    other = session.run(task, "other key")
    assert other is not first and not first.closed
    assert len(opener.opened) == 2
    session.close()
    assert first.closed and other.closed


def test_the_loop_runs_between_tasks_and_closes_a_value_idle_past_its_limit() -> None:
    session = WorkerSession()
    opener = Opener()
    ticks = [0]

    async def tick() -> None:  # runs only while the loop runs: between tasks, with no task waiting on it
        while True:
            ticks[0] += 1
            await asyncio.sleep(0.001)

    session.bridge.submit(tick)

    async def task() -> Value:
        value = await session.take("k", opener)
        await session.keep("k", value, idle_limit=0.05)
        return value

    first = session.run(task)
    seen = ticks[0]
    event = threading.Event()
    for _ in range(200):  # at most 2 s: the loop, not this thread, closes the value
        if first.closed:
            break
        event.wait(0.01)
    assert first.closed
    assert ticks[0] > seen
    second = session.run(task)
    assert second is not first and not second.closed
    session.close()


def test_a_discarded_value_is_closed_and_not_taken_again() -> None:
    session = WorkerSession()
    opener = Opener()
    first = session.run(session.take, "k", opener)
    session.run(session.discard, first)
    assert first.closed
    second = session.run(session.take, "k", opener)
    assert second is not first
    session.close()


def test_every_task_runs_on_one_loop_thread_and_close_stops_it_until_the_next_task() -> None:
    session = WorkerSession()

    async def thread() -> int:
        return threading.get_ident()

    first = session.run(thread)
    assert session.run(thread) == first != threading.get_ident()
    bridge = session.bridge
    session.close()
    assert bridge.closed
    session.run(thread)
    assert session.bridge is not bridge and not session.bridge.closed  # a new loop thread
    session.close()


def test_an_error_in_a_task_reaches_the_caller_as_is() -> None:
    session = WorkerSession()

    async def failing() -> None:
        raise LookupError("no such topic")

    with pytest.raises(LookupError, match="no such topic"):
        session.run(failing)
    session.close()


def test_a_forked_child_makes_a_bridge_of_its_own_and_forgets_the_parents_values() -> None:
    session = WorkerSession()
    opener = Opener()

    async def task() -> Value:
        value = await session.take("k", opener)
        await session.keep("k", value, idle_limit=60)
        return value

    async def thread() -> int:
        return threading.get_native_id()  # kernel id: a forked child's thread may reuse the parent's ident

    parent_value = session.run(task)
    parent_thread = session.run(thread)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's exit hooks or test teardown
        code = 1
        faulthandler.dump_traceback_later(30, exit=True)  # a child that hangs fails the test instead
        try:
            child_thread = session.run(thread)
            child_value = session.run(task)
            ok = child_thread != parent_thread and child_value is not parent_value and not parent_value.closed
            os.write(write, b"ok" if ok else b"bad")
            session.close()
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    assert os.waitstatus_to_exitcode(status) == 0 and said == b"ok"
    assert session.run(task) is parent_value  # the parent's session is untouched by the child's
    session.close()


SETTLE = """
import gc, importlib.machinery, sys
from sparkwire import worker_session
from sparkwire.writing import RowsWriter

async def write(url, topic, rows, options):
    return 0

before = gc.get_freeze_count()  # not 0 on every interpreter: CPython 3.12.1 starts with some frozen
alone = worker_session.settle_heap(), gc.get_freeze_count() - before
sys.modules["__main__"].__spec__ = importlib.machinery.ModuleSpec("pyspark.daemon", None)
RowsWriter({"url": "kafka://127.0.0.1:9"}, lambda options: options["url"], write)  # planning, in a daemon worker
planned = gc.get_freeze_count()
print(alone, planned > before, worker_session.settle_heap(), gc.get_freeze_count() == planned)
"""


def test_a_worker_of_pysparks_daemon_freezes_its_heap_once_and_no_other_process_does() -> None:
    # In a process of its own: freezing this one would change the collector of the whole test run.
    done = subprocess.run([sys.executable, "-c", SETTLE], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(False,", "0)", "True", "False", "True"]
