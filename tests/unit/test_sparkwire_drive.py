"""Readers' async generators stepped through the worker's loop bridge: one loop thread for every task of a
process (a new one in a forked child), the generator closed when Spark stops early, and its errors, like
Ctrl-C, reaching the task unchanged."""

from __future__ import annotations

import asyncio
import faulthandler
import os
import threading
from collections.abc import AsyncIterator

import pytest

from sparkwire.batches import drive
from sparkwire.worker_session import SESSION
from tests.interrupts import ctrl_c_after


class Reader:
    """An async generator of numbered "batches" that records where it ran and whether it was closed."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count = count
        self.fail_at = fail_at
        self.threads: set[int] = set()
        # Kernel thread ids too: a forked child's new thread may reuse the parent's thread's stack, and with it
        # its threading.get_ident(); a kernel id stays unique while the parent's thread lives.
        self.native_threads: set[int] = set()
        self.closed_on: int | None = None

    async def batches(self) -> AsyncIterator[int]:
        try:
            for i in range(self.count):
                self.threads.add(threading.get_ident())
                self.native_threads.add(threading.get_native_id())
                if i == self.fail_at:
                    raise LookupError(f"partition gone at {i}")
                await asyncio.sleep(0)
                yield i
        finally:
            self.closed_on = threading.get_ident()


def test_every_task_of_a_process_steps_its_reader_on_one_loop_thread() -> None:
    first, second = Reader(3), Reader(2)
    assert list(drive(first.batches)) == [0, 1, 2]  # type: ignore[arg-type]
    assert list(drive(second.batches)) == [0, 1]  # type: ignore[arg-type]
    (thread,) = first.threads
    assert second.threads == {thread} and thread != threading.get_ident()
    assert thread == SESSION.bridge.thread_id


def test_stopping_early_closes_the_reader_on_the_loop() -> None:
    reader = Reader(1000)
    batches = drive(reader.batches)  # type: ignore[arg-type]
    assert [next(batches), next(batches)] == [0, 1]
    assert reader.closed_on is None
    batches.close()  # Spark stopped early (a limit)
    assert reader.closed_on == SESSION.bridge.thread_id


def test_an_error_in_the_reader_reaches_the_task_as_is() -> None:
    reader = Reader(10, fail_at=3)
    got: list[int] = []
    with pytest.raises(LookupError, match="partition gone at 3"):
        for batch in drive(reader.batches):  # type: ignore[arg-type]
            got.append(batch)
    assert got == [0, 1, 2] and reader.closed_on == SESSION.bridge.thread_id


def test_ctrl_c_while_a_step_waits_cancels_it_closes_the_reader_and_leaves_the_bridge_usable() -> None:
    waiting = threading.Event()
    seen: list[str] = []

    async def stuck() -> AsyncIterator[int]:
        try:
            yield 0
            waiting.set()
            # A fetch that does not answer; bounded, so that a lost interrupt fails the test instead of hanging it.
            await asyncio.sleep(120)
            yield 1
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("closed")

    batches = drive(stuck)  # type: ignore[arg-type]
    assert next(batches) == 0
    with ctrl_c_after(waiting) as ctrl_c, pytest.raises(KeyboardInterrupt), ctrl_c.armed():
        next(batches)
    assert seen == ["cancelled", "closed"]
    assert list(drive(Reader(2).batches)) == [0, 1]  # type: ignore[arg-type]


def test_a_forked_child_steps_its_readers_on_a_loop_thread_of_its_own() -> None:
    parent = Reader(1)
    assert list(drive(parent.batches)) == [0]  # type: ignore[arg-type]
    (parent_thread,) = parent.threads
    (parent_native,) = parent.native_threads
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without the parent's exit hooks or test teardown
        code = 1
        faulthandler.dump_traceback_later(30, exit=True)  # a child that hangs fails the test instead
        try:
            child = Reader(2)
            ok = list(drive(child.batches)) == [0, 1] and parent_native not in child.native_threads  # type: ignore[arg-type]
            os.write(write, b"ok" if ok else b"bad")
            SESSION.close()
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    assert os.waitstatus_to_exitcode(status) == 0 and said == b"ok"
    again = Reader(1)
    assert list(drive(again.batches)) == [0]  # type: ignore[arg-type]
    assert again.threads == {parent_thread}
