"""Records handed from blocking threads to a producer on the bridge's loop, in slices.

A cross-thread call per record would cost a loop wake-up and two thread switches each. Instead ``put`` appends
the record to a list in the caller's thread (without a lock) and returns a ``concurrent.futures.Future`` at
once; the first record of a burst schedules one drain task on the loop, which takes every record queued
meanwhile at once (one acquisition of the lock), hands the slice to the async producer in order (one drain at a
time), then resolves each record's future from the loop when the broker acknowledges it. Callers of many
threads may share one ``EnqueueQueue``.

``hand_over_slice`` is where a protocol's producer may take a slice faster than one ``await enqueue(...)`` per
record (and settle its futures per batch): a subclass overrides it.

The list is bounded (``limit`` records): a caller that outruns the loop waits for room (Ctrl-C interrupts
the wait), as the async ``enqueue`` waits while the producer's buffer is full.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from itertools import compress
from typing import Any, Generic, TypeAlias, TypeVar

from mqwire.common import affinity
from mqwire.common.blocking import Bridge
from mqwire.common.blocking_future import QueuedFuture, RecordFuture
from mqwire.common.errors import ClosedError
from mqwire.common.speedups import load_speedups

__all__ = ["COMPILED", "YIELD_EVERY", "EnqueueQueue", "Unsettled", "bytes_enqueue"]

YIELD_EVERY = 256
"""Records queued and not yet handed over after which a caller yields the interpreter lock to the loop thread."""

R = TypeVar("R")

_speedups = load_speedups("mqwire.common._enqueue_speedups")  # its ValuePut: put_value's common way in C
COMPILED = _speedups is not None
"""Whether ``put_value`` takes its common way in one compiled call (``mqwire.common._enqueue_speedups``)."""

Unsettled: TypeAlias = "RecordFuture[Any] | list[tuple[Sequence[RecordFuture[Any]], Any]]"
"""What ``EnqueueQueue._unsettled`` holds by receipt: one record's future, or runs of the futures a hand-over
settles together, each with what it needs to settle them."""


class EnqueueQueue(Generic[R]):
    """The records waiting for the loop thread, and the one task at a time that hands them to ``enqueue``."""

    # In slots: the compiled put_value reads _closed and _scheduled in place for every record. (A dictionary
    # still takes the compiled put_value and a subclass's own attributes; the put_value refers to it weakly.)
    __slots__ = (
        "__dict__", "__weakref__", "_bridge", "_closed", "_context", "_enqueue", "_limit", "_lock", "_order",
        "_records", "_room", "_scheduled", "_unsettled", "_waiting", "_what",
    )

    def __init__(
        self, bridge: Bridge, enqueue: Callable[..., Awaitable[Awaitable[R]]], *, what: str, limit: int = 16384
    ) -> None:
        """``enqueue`` is the async producer's (its result is the awaitable of the record's receipt)."""
        self._bridge = bridge
        self._enqueue = enqueue
        self._what = what
        self._limit = 3 * limit
        # Each record as three items in a row (no tuple of its own that the cycle collector would carry along
        # while thousands wait): the positional arguments of ``enqueue``, its keyword arguments, the future.
        self._records: list[Any] = []
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting = 0  # callers waiting for room
        self._scheduled = False  # a drain task is scheduled or running
        self._closed = False
        # Handed over, not acknowledged yet, by the async receipt that settles them.
        self._unsettled: dict[Any, Unsettled] = {}
        self._context: contextvars.Context | None = None
        self._order: asyncio.Lock | None = None  # made on the loop, which owns it
        if _speedups is not None:
            # The same steps as _put's, in one call; every record off their common way is handed to _put. It holds
            # this queue weakly and its methods as functions: no cycle keeps a dropped client's queue alive.
            self.put_value = _speedups.ValuePut(  # type: ignore[method-assign]
                queue=self, records=self._records, limit=self._limit, yield_items=3 * YIELD_EVERY, bridge=bridge,
                loop_thread=bridge.thread_id, generation=bridge.generation, affinity=affinity,
                future_type=QueuedFuture, put=type(self)._put, schedule=type(self)._schedule,
                yield_now=time.sleep,
            )

    def put(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> concurrent.futures.Future[R]:
        """Queue one record (``enqueue(*args, **kwargs)``); the future is its receipt or its error."""
        return self._put(args, kwargs)

    def put_value(self, value: Any) -> concurrent.futures.Future[R]:
        """``put((value,), {})``, kept as the value alone (with None for its keyword arguments): the caller's
        argument tuple and dictionary are freed at once instead of waiting here, which makes the cycle collector
        run half as often while records pile up."""
        return self._put(value, None)

    def _put(self, args: Any, kwargs: Mapping[str, Any] | None) -> concurrent.futures.Future[R]:
        # _enqueue_speedups.c's ValuePut takes these same steps, in this order, for put_value: change both.
        self._bridge.check()  # from the loop thread a full queue would wait forever
        future: RecordFuture[R] = QueuedFuture()
        records = self._records
        if len(records) >= self._limit or self._closed:
            return self._put_waiting(args, kwargs, future)
        # Without the lock: the list is never replaced, and an extend is one step under the interpreter lock.
        # The flags are read after it, and the drain and close change them before they look at the list again
        # (see _drain, close): a record is never left behind.
        records += (args, kwargs, future)
        if not self._scheduled or self._closed:
            self._schedule()
        elif len(records) % (3 * YIELD_EVERY) == 0:
            # The loop thread is behind: give it the interpreter lock now rather than at the next forced
            # switch (every 5 ms), so that it hands records over and sends while this thread goes on.
            time.sleep(0)
        return future

    def _put_waiting(
        self, args: Any, kwargs: Mapping[str, Any] | None, future: RecordFuture[R]
    ) -> concurrent.futures.Future[R]:
        """``put`` when the queue is full or closed: wait for room (or raise), then queue the record."""
        with self._lock:
            while len(self._records) >= self._limit and not self._closed:
                self._waiting += 1
                try:
                    self._room.wait()
                finally:
                    self._waiting -= 1
            if self._closed:
                raise ClosedError(f"{self._what} is closed")
            self._records += (args, kwargs, future)
        self._schedule()
        return future

    def _schedule(self) -> None:
        """After an append: start a drain unless one runs (or fail the queued records once closed)."""
        with self._lock:
            closed = self._closed
            scheduled, self._scheduled = self._scheduled, True
        if closed:
            self._fail_queued(ClosedError(f"{self._what} is closed"))
            raise ClosedError(f"{self._what} is closed")
        if scheduled:
            return
        try:
            self._bridge.submit(self._drain)
        except BaseException:
            with self._lock:
                self._scheduled = False
            self._fail_queued(ClosedError(f"{self._what} is closed"))
            raise

    async def drained(self) -> None:
        """On the loop: hand every record queued so far to ``enqueue`` (``flush`` waits on them next).

        Shielded: a flush that times out or is interrupted leaves the records being handed over."""
        await asyncio.shield(asyncio.ensure_future(self._drain_once()))

    def handing_over(self) -> bool:
        """On the loop: whether records are queued or being handed to ``enqueue`` now."""
        return bool(self._records) or (self._order is not None and self._order.locked())

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
                for futures, _ in entry:
                    RecordFuture.finish_many(futures, error=error)

    def _ordering(self) -> asyncio.Lock:
        if self._order is None:
            self._order = asyncio.Lock()
        return self._order

    async def _drain(self) -> None:
        async with self._ordering():
            while True:
                await self._hand_over()
                with self._lock:
                    # Cleared before the list is looked at: a caller appending meanwhile either sees the flag
                    # down (and schedules a drain) or appended before this look (and this drain goes on).
                    self._scheduled = False
                    if not self._records:
                        return
                    self._scheduled = True

    async def _hand_over(self) -> None:
        # The whole queue at once: one acquisition of the lock per slice, not one per record.
        with self._lock:
            queued = self._take()
            if not queued:
                return
            if self._waiting:
                self._room.notify_all()
        args, kwargs, futures = queued[0::3], queued[1::3], queued[2::3]
        started = RecordFuture.start_many(futures)
        if False in started:  # cancelled by their callers: not sent
            args = list(compress(args, started))
            kwargs = list(compress(kwargs, started))
            futures = list(compress(futures, started))
        if futures:
            await self.hand_over_slice(args, kwargs, futures)

    async def hand_over_slice(
        self, args: list[Any], kwargs: list[Mapping[str, Any] | None], futures: list[RecordFuture[Any]]
    ) -> None:
        """On the loop: give the records (``enqueue(*args[i], **kwargs[i])``, or ``enqueue(args[i])`` where
        ``kwargs[i]`` is None: see ``put_value``; their ``futures`` started) to the async producer in order, and
        see that each record's future settles: with the error that refused it, else with its receipt once
        acknowledged (registered in ``_unsettled`` meanwhile, for ``close``). This one awaits ``enqueue`` per
        record."""
        enqueue = self._enqueue
        unsettled = self._unsettled
        settle = self._settle  # one bound method for every record: no object made per record
        context = self._callback_context()
        for at, future in enumerate(futures):
            try:
                named = kwargs[at]
                pending = await (enqueue(args[at]) if named is None else enqueue(*args[at], **named))
            except asyncio.CancelledError:
                self.fail_unsent(futures[at:])
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

    def fail_unsent(self, futures: Sequence[RecordFuture[Any]]) -> None:
        """Fail ``futures``, whose records a cancelled hand-over never gave to the producer."""
        RecordFuture.finish_many(futures, error=ClosedError(f"{self._what} closed before the record was sent"))

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

    def _take(self) -> list[Any]:
        """Every record queued so far, removed from the queue. Callers append without the lock: so the items
        counted are removed, not the whole list (a copy then a clear could drop a record appended between)."""
        records = self._records
        count = len(records)
        taken = records[:count]
        del records[:count]
        return taken

    def _fail_queued(self, error: BaseException) -> None:
        with self._lock:
            queued = self._take()
        if queued:
            futures = queued[2::3]
            RecordFuture.start_many(futures)  # a cancelled one stays cancelled; finish leaves it so
            RecordFuture.finish_many(futures, error=error)


def bytes_enqueue(
    queue: EnqueueQueue[R], general: Callable[[tuple[Any, ...], dict[str, Any]], concurrent.futures.Future[R]]
) -> Callable[..., concurrent.futures.Future[R]] | None:
    """A producer's ``enqueue`` compiled for its most common call, one value of bytes and nothing else, which goes
    to ``queue.put_value`` without a Python frame, an argument tuple or a keyword dictionary (a third of a
    script's time per record); ``general(args, kwargs)`` takes every other call. None unless ``put_value`` is
    compiled. For a producer with no value serializer to run (bytes pass one unchanged): it holds neither the
    producer nor the queue (``general`` must not either), so that stored on the producer it makes no cycle."""
    put = queue.put_value
    if _speedups is None or not isinstance(put, _speedups.ValuePut):
        return None
    return _speedups.BytesEnqueue(put=put, general=general)  # type: ignore[no-any-return]
