"""The producer's waits on its buffer, the ones that need the event loop: for room, and for a flush.

The accumulator does the batching and never waits; it calls ``on_space`` when it returns memory, and a
flush makes every batch ready through ``begin_flush``/``end_flush``. The waiting itself is here.
"""

from __future__ import annotations

import asyncio
from collections import deque

from kafkawire.accumulator import Accumulator
from kafkawire.errors import BufferFullError
from mqwire.common.errors import RequestTimeoutError

__all__ = ["BufferWaits"]


class BufferWaits:
    """Waits for room in one accumulator's buffer and for its batches to be done."""

    def __init__(self, accumulator: Accumulator) -> None:
        """Become ``accumulator``'s ``on_space`` listener."""
        self._accumulator = accumulator
        self._space_waiters: deque[asyncio.Future[None]] = deque()
        accumulator.on_space = self._space_returned

    async def for_space(self, timeout: float) -> None:
        """Wait until the buffer has room; BufferFullError after ``timeout`` seconds."""
        accumulator = self._accumulator
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while accumulator.full:
            waiter: asyncio.Future[None] = loop.create_future()
            self._space_waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                raise BufferFullError(
                    f"the producer buffer ({accumulator.buffer_memory} bytes) stayed full for {timeout:g} s"
                ) from None
            finally:
                if waiter in self._space_waiters:
                    self._space_waiters.remove(waiter)

    def _space_returned(self) -> None:
        waiters = self._space_waiters
        while waiters and not self._accumulator.full:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def flush(self, timeout: float | None = None) -> None:
        """Make every batch ready now and wait until all that exist at this moment are done; raises
        RequestTimeoutError (a TimeoutError) if ``timeout`` seconds pass first."""
        accumulator = self._accumulator
        pending = [batch.outcome.when_settled() for batch in accumulator.incomplete()]
        if not pending:
            return
        accumulator.begin_flush()
        try:
            _, late = await asyncio.wait(pending, timeout=timeout)
        finally:
            accumulator.end_flush()
        if late:
            for waiter in late:
                waiter.cancel()
            # The batches go on being sent; only the wait is over, as asyncio's timeouts mean.
            raise RequestTimeoutError(f"flush: {len(late)} batches not acknowledged within {timeout} s")
