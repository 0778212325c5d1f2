"""Records handed from blocking threads to a producer on the bridge's loop, in slices.

A cross-thread call per record would cost a loop wake-up and two thread switches each. Instead ``put`` appends
the record to a deque in the caller's thread and returns a ``concurrent.futures.Future`` at once; the first
record of a burst schedules one drain task on the loop, which takes every record queued meanwhile at once (one
swap of the deque under the lock) and hands the slice to the async producer in order (one drain at a time),
then resolves each record's future from the loop when the broker acknowledges it. Callers of many threads may
share one ``EnqueueQueue``.

``hand_over_slice`` is where a protocol's producer may take a slice faster than one ``await enqueue(...)`` per
record (and settle its futures per batch): a subclass overrides it.

The deque is bounded (``limit`` records): a caller that outruns the loop waits for room (Ctrl-C interrupts
the wait), as the async ``enqueue`` waits while the producer's buffer is full.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

from mqwire.common.blocking import Bridge
from mqwire.common.blocking_future import RecordFuture
from mqwire.common.errors import ClosedError

__all__ = ["YIELD_EVERY", "EnqueueQueue", "QueuedRecord"]

YIELD_EVERY = 256
"""Records queued and not yet handed over after which a caller yields the interpreter lock to the loop thread."""

R = TypeVar("R")

QueuedRecord: TypeAlias = tuple[tuple[Any, ...], Mapping[str, Any], "RecordFuture[Any]"]
"""One queued record: the async ``enqueue``'s positional and keyword arguments, and the caller's future."""


class EnqueueQueue(Generic[R]):
    """The records waiting for the loop thread, and the one task at a time that hands them to ``enqueue``."""

    def __init__(
        self, bridge: Bridge, enqueue: Callable[..., Awaitable[Awaitable[R]]], *, what: str, limit: int = 16384
    ) -> None:
        """``enqueue`` is the async producer's (its result is the awaitable of the record's receipt)."""
        self._bridge = bridge
        self._enqueue = enqueue
        self._what = what
        self._limit = limit
        self._records: deque[QueuedRecord] = deque()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting = 0  # callers waiting for room
        self._scheduled = False  # a drain task is scheduled or running
        self._closed = False
        # Handed over, not acknowledged yet: by the async receipt that settles them, a record's future, or the
        # (future, receipt) pairs of the records a hand-over settles together.
        self._unsettled: dict[Any, RecordFuture[Any] | list[tuple[RecordFuture[Any], Any]]] = {}
        self._context: contextvars.Context | None = None
        self._order: asyncio.Lock | None = None  # made on the loop, which owns it

    def put(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> concurrent.futures.Future[R]:
        """Queue one record (``enqueue(*args, **kwargs)``); the future is its receipt or its error."""
        self._bridge.check()  # from the loop thread a full queue would wait forever
        future: RecordFuture[R] = RecordFuture()
        with self._lock:
            while len(self._records) >= self._limit and not self._closed:
                self._waiting += 1
                try:
                    self._room.wait()
                finally:
                    self._waiting -= 1
            if self._closed:
                raise ClosedError(f"{self._what} is closed")
            records = self._records
            records.append((args, kwargs, future))
            behind = len(records) % YIELD_EVERY == 0
            scheduled, self._scheduled = self._scheduled, True
        if scheduled:
            if behind:
                # The loop thread is behind: give it the interpreter lock now rather than at the next forced
                # switch (every 5 ms), so that it hands records over and sends while this thread goes on.
                time.sleep(0)
            return future
        try:
            self._bridge.submit(self._drain)
        except BaseException:
            with self._lock:
                self._scheduled = False
            self._fail_queued(ClosedError(f"{self._what} is closed"))
            raise
        return future

    async def drained(self) -> None:
        """On the loop: hand every record queued so far to ``enqueue`` (``flush`` waits on them next).

        Shielded: a flush that times out or is interrupted leaves the records being handed over."""
        await asyncio.shield(asyncio.ensure_future(self._drain_once()))

    async def _drain_once(self) -> None:
        async with self._ordering():
            await self._hand_over()

    def close(self) -> None:
        """Refuse further records, wake callers waiting for room, and fail the records not acknowledged yet
        (never handed over, or left by a producer that closed without settling them): none waits forever."""
        with self._lock:
            self._closed = True
            self._room.notify_all()
        self._fail_queued(ClosedError(f"{self._what} closed before the record was sent"))
        error = ClosedError(f"{self._what} closed before the record was acknowledged")
        for entry in list(self._unsettled.values()):
            if isinstance(entry, RecordFuture):
                entry.finish(error=error)
            else:
                RecordFuture.finish_many(entry, error=error)

    def _ordering(self) -> asyncio.Lock:
        if self._order is None:
            self._order = asyncio.Lock()
        return self._order

    async def _drain(self) -> None:
        async with self._ordering():
            while True:
                await self._hand_over()
                with self._lock:
                    if not self._records:
                        self._scheduled = False
                        return

    async def _hand_over(self) -> None:
        # The whole deque at once: one acquisition of the lock per slice, not one per record.
        with self._lock:
            queued = self._records
            if not queued:
                return
            self._records = deque()
            if self._waiting:
                self._room.notify_all()
        records = RecordFuture.start_many(queued)  # those cancelled by their callers are not sent
        if records:
            await self.hand_over_slice(records)

    async def hand_over_slice(self, records: Sequence[QueuedRecord]) -> None:
        """On the loop: give ``records`` (their futures started) to the async producer in order, and see that
        each record's future settles: with the error that refused it, else with its receipt once acknowledged
        (registered in ``_unsettled`` meanwhile, for ``close``). This one awaits ``enqueue`` per record."""
        enqueue = self._enqueue
        unsettled = self._unsettled
        settle = self._settle  # one bound method for every record: no object made per record
        context = self._callback_context()
        for at, (args, kwargs, future) in enumerate(records):
            try:
                pending = await enqueue(*args, **kwargs)
            except asyncio.CancelledError:
                self.fail_unsent(records[at:])
                raise
            except Exception as error:  # refused (a serializer, a closed producer): its future says why
                future.finish(error=error)
                continue
            add_done_callback = getattr(pending, "add_done_callback", None)
            if add_done_callback is None:  # a bare awaitable: a task waits on it
                pending = asyncio.ensure_future(pending)
                add_done_callback = pending.add_done_callback
            unsettled[pending] = future
            add_done_callback(settle, context=context)

    def fail_unsent(self, records: Sequence[QueuedRecord]) -> None:
        """Fail the futures of ``records``, which a cancelled hand-over never gave to the producer."""
        RecordFuture.finish_many(
            ((future, None) for _, _, future in records),
            error=ClosedError(f"{self._what} closed before the record was sent"),
        )

    def _callback_context(self) -> contextvars.Context:
        # The settling callback reads no context variable: one context for all, instead of a copy per record.
        if self._context is None:
            self._context = contextvars.copy_context()
        return self._context

    def _settle(self, done: Any) -> None:
        """On the loop, once the async receipt ``done`` is: resolve the record's future with its outcome."""
        future = self._unsettled.pop(done, None)
        if not isinstance(future, RecordFuture):
            return  # failed by close already
        if done.cancelled():
            future.finish(error=ClosedError("the record was cancelled before the broker acknowledged it"))
        elif (error := done.exception()) is not None:
            future.finish(error=error)
        else:
            future.finish(done.result())

    def _fail_queued(self, error: BaseException) -> None:
        while True:
            try:
                _, _, future = self._records.popleft()
            except IndexError:
                return
            if future.start():
                future.finish(error=error)

