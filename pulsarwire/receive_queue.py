"""The queue between the connections and the application: every partition's messages, in arrival order.

With a :class:`pulsarwire.memory_budget.MemoryBudget` the queue charges the bytes of each entry it holds to
the client's budget and releases them as messages leave it (taken by the application, or dropped).
"""

from __future__ import annotations

import asyncio
from collections import deque
from itertools import repeat

from mqwire.common.errors import MqwireError
from pulsarwire.errors import ConsumerClosedError, ReceiveTimeoutError
from pulsarwire.memory_budget import MemoryBudget
from pulsarwire.message import Message


class ReceiveQueue:
    """Messages pushed by the sub-consumers; ``get`` waits for the next one.

    Once ``fail`` recorded an error, receivers get the messages still queued and then the error.
    """

    def __init__(self, name: str, budget: MemoryBudget | None = None) -> None:
        self._name = name
        self.budget = budget
        self._items: deque[Message] = deque()
        # Beside each message, the bytes it holds of the client's budget (only with a budget).
        self._sizes: deque[int] = deque()
        self.bytes = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._error: MqwireError | None = None

    def __len__(self) -> int:
        return len(self._items)

    def extend(self, messages: list[Message], size: int = 0) -> None:
        """Queue one entry's messages, which together hold ``size`` bytes (charged to the budget)."""
        self._items.extend(messages)
        budget = self.budget
        if budget is not None and messages:
            share, rest = divmod(size, len(messages))
            sizes = self._sizes
            sizes.append(share + rest)
            sizes.extend(repeat(share, len(messages) - 1))
            self.bytes += size
            budget.charge(size)
        self._wake()

    def remove_owner(self, owner: object) -> int:
        """Drop the messages of one sub-consumer (they will be delivered again); return how many."""
        before = len(self._items)
        if not before:
            return 0
        if self.budget is None:
            self._items = deque(m for m in self._items if m._owner is not owner)
            return before - len(self._items)
        kept = [(m, n) for m, n in zip(self._items, self._sizes, strict=True) if m._owner is not owner]
        freed = sum(self._sizes) - sum(n for _, n in kept)
        self._items = deque(m for m, _ in kept)
        self._sizes = deque(n for _, n in kept)
        self._release(freed)
        return before - len(self._items)

    def _pop(self) -> Message:
        # Once per message handed out: the release is written out here rather than through _release.
        message = self._items.popleft()
        budget = self.budget
        if budget is not None:
            size = self._sizes.popleft()
            self.bytes -= size
            budget.release(size)
        return message

    def _release(self, size: int) -> None:
        if size:
            self.bytes -= size
            assert self.budget is not None
            self.budget.release(size)

    def fail(self, error: MqwireError) -> None:
        if self._error is None:
            self._error = error
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def close(self) -> None:
        self.fail(ConsumerClosedError(f"{self._name} is closed"))
        if self.budget is not None:
            # What a closed consumer still holds no longer counts against the client's other consumers.
            self._release(self.bytes)
            self._sizes.clear()
            self.budget = None

    def get_nowait(self) -> Message | None:
        if self._items:
            return self._pop()
        if self._error is not None:
            raise self._error
        return None

    async def get(self, timeout: float | None = None) -> Message:
        items = self._items
        if items:
            return self._pop()
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
        return self._pop()

    def _wake(self) -> None:
        waiters = self._waiters
        wanted = len(self._items)
        while waiters and wanted:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                wanted -= 1
