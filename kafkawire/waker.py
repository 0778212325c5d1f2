"""A one-slot wake-up call for a background task that sleeps until there is work or a deadline passes."""

from __future__ import annotations

import asyncio

__all__ = ["Waker"]


class Waker:
    """``wake`` from anywhere; the one task that ``wait``s returns at once if woken since its last ``clear``.

    Cheaper than an Event with ``wait_for``: no task per wait, one timer at most.
    """

    __slots__ = ("_future", "_pending")

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self._pending = False

    def clear(self) -> None:
        """Forget earlier wake-ups; call before looking for work, so one arriving meanwhile is not lost."""
        self._pending = False

    def wake(self) -> None:
        self._pending = True
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self, timeout: float | None) -> None:
        if self._pending:
            self._pending = False
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._future = future
        timer = None if timeout is None else loop.call_later(max(timeout, 0.0), _resolve, future)
        try:
            await future
        finally:
            if timer is not None:
                timer.cancel()
            self._future = None
            self._pending = False


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
