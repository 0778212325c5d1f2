"""The table that matches responses to the requests waiting for them.

Each entry is a future with its own deadline. One timer per table, set for the earliest deadline,
expires them: a timer per request would cost more than the rest of a small request's bookkeeping. When
the connection drops, ``fail_all`` fails every pending request with the connection-lost error, so no
caller waits forever. A response whose id is not in the table (late after a timeout, or never asked
for) is logged and dropped.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections import OrderedDict
from typing import Generic, TypeVar

from mqwire.common.errors import RequestTimeoutError

T = TypeVar("T")

log = logging.getLogger(__name__)

_MAX_ID = 2**31 - 1
_ABANDONED_KEPT = 1024
# Deadlines of answered requests kept before they are dropped in one pass (see _compact).
_COMPACT_SLACK = 1024


class CorrelationTable(Generic[T]):
    """Request id -> future, with per-request timeouts."""

    __slots__ = ("_abandoned", "_deadlines", "_entries", "_name", "_next_id", "_sweep_at", "_sweeper")

    def __init__(self, name: str = "", *, first_id: int = 0) -> None:
        self._name = name
        self._next_id = first_id
        self._entries: dict[int, tuple[asyncio.Future[T], float | None]] = {}
        # (deadline, request id, future, timeout) of every request registered with a timeout; entries
        # already answered stay until their deadline passes or a sweep finds them gone.
        self._deadlines: list[tuple[float, int, asyncio.Future[T], float]] = []
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_at = 0.0
        # Ids whose caller gave up (timeout, cancellation): their late answers are expected, not suspicious.
        self._abandoned: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._entries

    def next_id(self) -> int:
        """A fresh id, wrapping before int32 overflows and skipping ids still pending."""
        while True:
            request_id = self._next_id
            self._next_id = 0 if request_id >= _MAX_ID else request_id + 1
            if request_id not in self._entries:
                return request_id

    def register(self, request_id: int, timeout: float | None) -> asyncio.Future[T]:
        """Start waiting for ``request_id``; the future fails with RequestTimeoutError after ``timeout``."""
        if request_id in self._entries:
            raise ValueError(f"request id {request_id} is already pending")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        deadline = None
        if timeout is not None:
            deadline = loop.time() + timeout
            if len(self._deadlines) > 2 * len(self._entries) + _COMPACT_SLACK:
                self._compact()
            heapq.heappush(self._deadlines, (deadline, request_id, future, timeout))
            if self._sweeper is None or deadline < self._sweep_at:
                self._schedule(loop, deadline)
        self._entries[request_id] = (future, deadline)
        # A caller that gives up (cancellation) must not leave its entry behind.
        future.add_done_callback(lambda _f: self._forget(request_id, _f))
        return future

    def resolve(self, request_id: int, value: T) -> bool:
        """Complete the request; returns False (and logs) when nobody waits for that id."""
        entry = self._entries.pop(request_id, None)
        if entry is None:
            if self._abandoned.pop(request_id, 0) is None:
                log.debug("%s: dropping late response to abandoned request id %d", self._name, request_id)
            else:
                log.warning("%s: dropping response to unknown request id %d", self._name, request_id)
            return False
        future = entry[0]
        if not future.done():
            future.set_result(value)
        self._settle()
        return True

    def fail(self, request_id: int, error: BaseException) -> bool:
        """Fail one request; returns False when nobody waits for that id."""
        entry = self._entries.pop(request_id, None)
        if entry is None:
            return False
        future = entry[0]
        if not future.done():
            future.set_exception(error)
        self._settle()
        return True

    def fail_all(self, error: BaseException) -> int:
        """Fail every pending request (the connection is gone); returns how many there were."""
        entries, self._entries = self._entries, {}
        self._deadlines = []
        self._cancel_sweeper()
        for future, _deadline in entries.values():
            if not future.done():
                future.set_exception(error)
        return len(entries)

    # ------------------------------------------------------------------------------------ timeouts
    def _schedule(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self._cancel_sweeper()
        self._sweep_at = when
        self._sweeper = loop.call_at(when, self._sweep)

    def _cancel_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def _settle(self) -> None:
        """With nothing pending, drop the deadlines and the timer (an idle connection keeps none)."""
        if not self._entries and self._deadlines:
            self._deadlines = []
            self._cancel_sweeper()

    def _compact(self) -> None:
        """Drop the deadlines of answered requests: under steady traffic the table never empties, and
        without this they would pile up for a whole timeout."""
        entries = self._entries
        live = [item for item in self._deadlines if (entry := entries.get(item[1])) is not None and entry[0] is item[2]]
        heapq.heapify(live)
        self._deadlines = live

    def _sweep(self) -> None:
        self._sweeper = None
        deadlines = self._deadlines
        loop = asyncio.get_running_loop()
        now = loop.time()
        while deadlines and deadlines[0][0] <= now:
            _deadline, request_id, future, timeout = heapq.heappop(deadlines)
            entry = self._entries.get(request_id)
            if entry is not None and entry[0] is future:
                self._expire(request_id, timeout)
        # Entries answered meanwhile are skipped above; the heap only bounds when to look next.
        if deadlines:
            self._schedule(loop, deadlines[0][0])

    def _abandon(self, request_id: int) -> None:
        self._abandoned[request_id] = None
        if len(self._abandoned) > _ABANDONED_KEPT:
            self._abandoned.popitem(last=False)

    def _expire(self, request_id: int, timeout: float) -> None:
        self._abandon(request_id)
        self.fail(request_id, RequestTimeoutError(f"{self._name}: no response to request {request_id} "
                                                  f"within {timeout:g} s"))

    def _forget(self, request_id: int, future: asyncio.Future[T]) -> None:
        entry = self._entries.get(request_id)
        if entry is not None and entry[0] is future:
            del self._entries[request_id]
            self._abandon(request_id)
            self._settle()
