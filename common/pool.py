"""Connections keyed by address, opened once however many callers ask at the same time, closed when idle."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

from mqwire.common.errors import ClosedError


class Closable(Protocol):
    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...


K = TypeVar("K", bound=Hashable)
C = TypeVar("C", bound=Closable)


class ConnectionPool(Generic[K, C]):
    """``await pool.get(key)`` returns an open connection for ``key``, opening it with ``factory``."""

    def __init__(
        self,
        factory: Callable[[K], Awaitable[C]],
        *,
        idle_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = factory
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._connections: dict[K, C] = {}
        self._last_used: dict[K, float] = {}
        self._opening: dict[K, asyncio.Future[C]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._connections)

    async def get(self, key: K) -> C:
        """The open connection for ``key``, opened now if there is none (concurrent callers share one)."""
        if self._closed:
            raise ClosedError("connection pool is closed")
        connection = self._connections.get(key)
        if connection is not None and not connection.closed:
            self._last_used[key] = self._clock()
            return connection
        opening = self._opening.get(key)
        if opening is None:
            # One open per key: concurrent callers share it instead of racing to open several.
            opening = asyncio.ensure_future(self._open(key))
            self._opening[key] = opening
        return await asyncio.shield(opening)

    def discard(self, key: K) -> None:
        """Forget (and close) the connection for ``key``, e.g. after it failed."""
        connection = self._connections.pop(key, None)
        self._last_used.pop(key, None)
        if connection is not None:
            connection.close()

    def close_idle(self) -> int:
        """Close connections unused for longer than the idle timeout; return how many."""
        if self._idle_timeout is None:
            return 0
        deadline = self._clock() - self._idle_timeout
        idle = [key for key, used in self._last_used.items() if used <= deadline]
        for key in idle:
            self.discard(key)
        return len(idle)

    async def close(self) -> None:
        """Close every connection of the pool; later ``get`` calls fail."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for opening in list(self._opening.values()):
            opening.cancel()
        for key in list(self._connections):
            self.discard(key)

    async def _open(self, key: K) -> C:
        try:
            connection = await self._factory(key)
        finally:
            self._opening.pop(key, None)
        if self._closed:
            connection.close()
            raise ClosedError("connection pool is closed")
        self._connections[key] = connection
        self._last_used[key] = self._clock()
        if self._idle_timeout is not None and self._reaper is None:
            self._reaper = asyncio.ensure_future(self._reap(self._idle_timeout))
        return connection

    async def _reap(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval / 2)
            self.close_idle()
