"""What a Spark Python worker keeps from one writer task to the next: an event loop and open clients.

Spark runs a job's tasks one after another in reused Python workers (``spark.python.worker.reuse``, on by
default). A writer task that connects, reads metadata, starts its producers and closes them again pays all
of that every time, which with small tasks cost more than the sending itself. A client kept here is taken by
the next task with the same options if it was last used within its idle limit; otherwise it is closed and a
new one opened, because between tasks nothing runs the loop, so the client answers no keep-alive and its
connections may have been dropped. A task that fails closes its client instead of handing it on.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Closable(Protocol):
    """What is kept: anything that can be closed."""

    async def close(self) -> None:
        """Release it (flush and disconnect)."""
        ...


K = TypeVar("K", bound=Closable)


@dataclass
class _Kept:
    value: Closable
    last_used: float


class WorkerSession:
    """An event loop that outlives ``run`` calls, and the values ``take`` keeps on it by key."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kept: dict[Hashable, _Kept] = {}
        self._clock = clock

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` to its end on the session's loop (made on first use)."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(work)

    async def take(self, key: Hashable, open_value: Callable[[], Awaitable[K]], idle_limit: float) -> K:
        """The value kept under ``key`` if it was used within ``idle_limit`` seconds, else a new one from
        ``open_value`` (an older one is closed first). Give it back with ``keep`` or ``discard``."""
        kept = self._kept.pop(key, None)
        if kept is not None:
            if self._clock() - kept.last_used <= idle_limit:
                return kept.value  # type: ignore[return-value]
            with contextlib.suppress(Exception):
                await kept.value.close()
        return await open_value()

    def keep(self, key: Hashable, value: Closable) -> None:
        """Keep ``value`` for the next ``take`` of ``key``, from now."""
        self._kept[key] = _Kept(value, self._clock())

    async def discard(self, value: Closable) -> None:
        """Close ``value`` instead of keeping it (its task failed)."""
        with contextlib.suppress(Exception):
            await value.close()

    def close(self) -> None:
        """Close every kept value and the loop (at the worker's exit)."""
        loop, kept = self._loop, list(self._kept.values())
        self._kept.clear()
        if loop is None or loop.is_closed():
            return
        for entry in kept:
            with contextlib.suppress(Exception):
                loop.run_until_complete(entry.value.close())
        loop.close()


SESSION = WorkerSession()
atexit.register(SESSION.close)
