"""The queue between the connections and the application: every partition's messages, in arrival order."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from mqwire.common.errors import MqwireError
from pulsarwire.client_errors import ConsumerClosedError, ReceiveTimeoutError
from pulsarwire.message import Message


class ReceiveQueue:
    """Messages pushed by the sub-consumers; ``get`` waits for the next one.

    Once ``fail`` recorded an error, receivers get the messages still queued and then the error.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._items: deque[Message] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._error: MqwireError | None = None

    def __len__(self) -> int:
        return len(self._items)

    def extend(self, messages: Iterable[Message]) -> None:
        self._items.extend(messages)
        self._wake()

    def remove_owner(self, owner: object) -> int:
        """Drop the messages of one sub-consumer (they will be delivered again); return how many."""
        before = len(self._items)
        if before:
            self._items = deque(m for m in self._items if m._owner is not owner)
        return before - len(self._items)

    def fail(self, error: MqwireError) -> None:
        if self._error is None:
            self._error = error
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def close(self) -> None:
        self.fail(ConsumerClosedError(f"{self._name} is closed"))

    def get_nowait(self) -> Message | None:
        if self._items:
            return self._items.popleft()
        if self._error is not None:
            raise self._error
        return None

    async def get(self, timeout: float | None = None) -> Message:
        items = self._items
        if items:
            return items.popleft()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not items:
            if self._error is not None:
                raise self._error
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                if deadline is None:
                    await waiter
                else:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise ReceiveTimeoutError(f"{self._name}: no message within {timeout:g} s")
                    try:
                        async with asyncio.timeout(remaining):
                            await waiter
                    except TimeoutError:
                        if not items:
                            raise ReceiveTimeoutError(f"{self._name}: no message within {timeout:g} s") from None
            finally:
                if not waiter.done():
                    waiter.cancel()
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return items.popleft()

    def _wake(self) -> None:
        waiters = self._waiters
        wanted = len(self._items)
        while waiters and wanted:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                wanted -= 1
