"""What a Spark Python worker keeps from one task to the next: the event loop bridge and open clients.

Every task of a Python worker runs its async work on one ``Bridge`` (``mqwire.common.blocking``): an event loop
in a thread of its own, made on first use, stopped at the worker's exit and made anew in a forked child (the
parent's loop thread does not exist there).

Spark runs a job's tasks one after another in reused Python workers (``spark.python.worker.reuse``, on by
default). A writer task that connects, reads metadata, starts its producers and closes them again pays all
of that every time, which with small tasks cost more than the sending itself. So a writer may keep its
client here for the next task with the same options. Since the loop keeps running between tasks, a kept
client answers keep-alives and reopens a dropped connection on use, like any long-lived client; one left
unused for its idle limit is closed by the loop, as Spark's own Kafka sink evicts a cached producer idle for
``spark.kafka.producer.cache.timeout``, so a worker that no longer writes holds no connections. A task that
fails closes its client instead of handing it on.

A worker that pyspark's daemon forks and reuses runs a full ``gc.collect()`` after every task, which walks
every object the worker holds: the modules of pyspark, pyarrow, the client and the kept client itself, some
60-70 ms a task on the write benchmark's machine, between one task and the next. ``settle_heap`` moves what a
reused worker holds once it has planned or written (imports done, client open) out of the collector's
generations (``gc.freeze``), so those collections walk only what later tasks make.

Workers that pyspark's daemon forks leave with ``os._exit``, which runs no ``atexit`` hook: their kept clients
end with the process. Nothing is lost by it, as every task waited for all of its acknowledgements.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from mqwire.common.affinity import fork_generation
from mqwire.common.blocking import Bridge
from mqwire.common.lifecycle import OwnedTasks

T = TypeVar("T")

CLOSE_TIMEOUT = 10.0
"""Seconds ``close`` waits for the kept values to close at the worker's exit."""


class Closable(Protocol):
    """What is kept: anything that can be closed."""

    async def close(self) -> None:
        """Release it (flush and disconnect)."""
        ...


K = TypeVar("K", bound=Closable)


@dataclass
class _Kept:
    value: Closable
    expiry: asyncio.TimerHandle | None = field(default=None)


class WorkerSession:
    """The worker's event loop bridge, and the values ``take`` keeps on its loop by key."""

    def __init__(self, name: str = "sparkwire-worker") -> None:
        """A session whose bridge (its loop thread named ``name``) starts on first use."""
        self._name = name
        self._lock = threading.Lock()
        self._bridge: Bridge | None = None
        self._generation = fork_generation()
        self._kept: dict[Hashable, _Kept] = {}
        self._closing = OwnedTasks("sparkwire worker session")  # closes the loop started on expiry

    @property
    def bridge(self) -> Bridge:
        """The bridge of this process: made on first use, after ``close`` and in a child forked since."""
        with self._lock:
            if self._generation != fork_generation():
                # The kept clients and the loop thread are the parent's: forgotten here, never touched.
                self._generation, self._bridge = fork_generation(), None
                self._kept.clear()
                self._closing = OwnedTasks("sparkwire worker session")
            if self._bridge is None or self._bridge.closed:
                self._bridge = Bridge(self._name)
            return self._bridge

    def run(self, async_fn: Callable[..., Awaitable[T]], /, *args: Any) -> T:
        """Run ``async_fn(*args)`` to its end on the session's loop and return its result (or raise its
        exception) here; Ctrl-C cancels it there and goes on here."""
        return self.bridge.call(async_fn, *args)

    async def take(self, key: Hashable, open_value: Callable[[], Awaitable[K]]) -> K:
        """The value kept under ``key``, else a new one from ``open_value``. On the session's loop; give it
        back with ``keep`` or ``discard``."""
        kept = self._kept.pop(key, None)
        if kept is None:
            return await open_value()
        if kept.expiry is not None:
            kept.expiry.cancel()
        return kept.value  # type: ignore[return-value]

    async def keep(self, key: Hashable, value: Closable, idle_limit: float) -> None:
        """Keep ``value`` for the next ``take`` of ``key``; the loop closes it once unused for ``idle_limit``
        seconds. On the session's loop."""
        kept = _Kept(value)
        kept.expiry = asyncio.get_running_loop().call_later(idle_limit, self._expire, key, kept)
        previous = self._kept.pop(key, None)
        self._kept[key] = kept
        if previous is not None:
            if previous.value is value:
                if previous.expiry is not None:
                    previous.expiry.cancel()
            else:  # two values kept under one key: the older one goes
                self._expire(key, previous)

    async def discard(self, value: Closable) -> None:
        """Close ``value`` instead of keeping it (its task failed)."""
        with contextlib.suppress(Exception):
            await value.close()

    def _expire(self, key: Hashable, kept: _Kept) -> None:
        """On the loop: forget ``kept`` (unused for its idle limit, or replaced) and close it."""
        if self._kept.get(key) is kept:
            del self._kept[key]
        if kept.expiry is not None:
            kept.expiry.cancel()
        self._closing.spawn(self.discard(kept.value), name="close an idle client")

    async def _close_all(self) -> None:
        """On the loop: close every kept value, and wait for those closing already."""
        kept, self._kept = list(self._kept.values()), {}
        for entry in kept:
            if entry.expiry is not None:
                entry.expiry.cancel()
            await self.discard(entry.value)
        await self._closing.wait(None)

    def close(self) -> None:
        """Close every kept value and stop the bridge (at the worker's exit); a later ``run`` starts anew."""
        with self._lock:
            bridge, self._bridge = self._bridge, None
            if self._generation != fork_generation():
                return  # the bridge and what it kept are the parent's: ``bridge`` forgets them here
        if bridge is None or bridge.closed:
            return
        try:
            with contextlib.suppress(Exception):  # a broker that does not answer must not hold the exit
                bridge.call(self._close_all, timeout=CLOSE_TIMEOUT)
        finally:
            bridge.stop()


SESSION = WorkerSession()
atexit.register(SESSION.close)

REUSING_WORKER_MAIN = "pyspark.daemon"
"""The main module of the Python workers that Spark reuses from task to task (and collects after each)."""

_settled_in: int | None = None  # the process whose heap ``settle_heap`` froze


def reused_worker() -> bool:
    """Whether this process is a Python worker forked by pyspark's daemon (``spark.python.use.daemon``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == REUSING_WORKER_MAIN


def settle_heap() -> bool:
    """Once per process, in a worker that pyspark's daemon forked only: collect, then freeze what is alive.

    Frozen objects stay in memory while referenced, as before; the daemon's collection after each task no
    longer walks them. Elsewhere (a driver, a test, a worker without the daemon) it does nothing, so no
    application's collector is changed. Returns whether it froze the heap now."""
    global _settled_in
    pid = os.getpid()
    if _settled_in == pid or not reused_worker():
        return False
    _settled_in = pid
    gc.collect()
    gc.freeze()
    return True
