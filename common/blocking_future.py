"""A ``concurrent.futures.Future`` for one record, cheap enough to make for every record a blocking producer buffers.

A standard ``Future`` makes a ``threading.Condition`` (two locks) when it is created and takes it for every
change of state: about 5 microseconds of a record's budget of one or two. Most records' futures are never
waited on one by one: the caller checks them after ``flush``, when they are long settled. So a
``RecordFuture`` makes its condition only when a thread other than the settling one first needs to wait on it
(``result`` or ``exception`` while pending, ``cancel``, ``concurrent.futures.wait`` or ``as_completed``: all of
them reach the condition through the ``_condition`` attribute), and until then the settling thread moves it
from state to state under one lock shared by all such futures, held for a few attribute writes. A done
callback added meanwhile is kept under that same lock and run by the settling thread, as ``Future`` runs it.

Why this is safe: every use of the future by other threads goes through ``_condition``, which is made under the
shared lock; the settling thread's short ways (``start``, ``finish``) check under that same lock that no
condition exists yet, and otherwise take the standard way. So either the other thread made the condition first
(and the standard methods, with their notifications, run), or the settling thread changed the state before the
other thread looked at it (and the other thread, holding the new condition, sees the new state). A callback is
added under the shared lock too: before the short way settles the future (which then runs it) or after (and it
is run at once).

While no condition, callback or error is attached to it, a ``RecordFuture`` refers to nothing that could lead
back to it (its state, then its receipt, which the async client made knowing nothing of this future): so it is
made outside the cycle collector's scans (``mqwire.common._gc_speedups``), which would otherwise go through
every one of the hundreds of thousands a caller keeps until it flushes, at every full collection: about 1.2
microseconds a record. It is handed back to the collector as soon as one of those is attached (for a callback,
unless it is a ``QueuedFuture``, which its queue holds until it settles it). An attribute of
a caller's own set on such a future is not seen by the collector: it must not make a cycle back to the future
(which would then be freed only when broken).

A protocol whose receipts are cheap to make from their batch's settling settles a run of futures with
``finish_many_lazily``: each keeps the batch's shared source and its place, and makes its receipt when asked for,
so that no receipt object per record waits in memory (and in the collector's counts) until the caller reads it.

It relies on ``Future``'s attributes (``_condition``, ``_state``, ``_result``, ``_exception``, ``_waiters``,
``_done_callbacks``), which ``concurrent.futures.wait`` and ``as_completed`` also use, unchanged from CPython 3.8
to 3.13; the unit tests check each behaviour on every interpreter the project supports.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from mqwire.common.speedups import load_speedups

__all__ = ["COMPILED", "QueuedFuture", "RecordFuture"]

T = TypeVar("T")

# concurrent.futures' own state names (module-private there, stable since 3.2).
_PENDING = "PENDING"
_RUNNING = "RUNNING"
_FINISHED = "FINISHED"
_CANCELLED = "CANCELLED"
_CANCELLED_AND_NOTIFIED = "CANCELLED_AND_NOTIFIED"
_DONE = (_FINISHED, _CANCELLED, _CANCELLED_AND_NOTIFIED)
_NO_CALLBACKS: Any = ()  # a future's callbacks until it has one (never appended to: a tuple)


def _unchanged(_target: object) -> None:
    """The Python stand-in for ``untrack`` and ``track``: every future stays with the collector."""


_switches = load_speedups("mqwire.common._gc_speedups")  # its untrack and track
COMPILED = _switches is not None
"""Whether record futures are made outside the cycle collector (the compiled ``_gc_speedups`` is in use)."""
_untrack: Callable[[object], None] = _unchanged if _switches is None else _switches.untrack
_track: Callable[[object], None] = _unchanged if _switches is None else _switches.track

_compiled = load_speedups("mqwire.common._enqueue_speedups")  # the walks below and result(), in C

_SHARED = threading.Lock()  # guards every RecordFuture's condition-less state, and the making of its condition


class RecordFuture(concurrent.futures.Future[T], Generic[T]):
    """A ``concurrent.futures.Future`` whose condition is made on first need; ``start`` and ``finish`` are the
    settling thread's short ways to ``set_running_or_notify_cancel`` and ``set_result``/``set_exception``."""

    # Future's attributes (but _waiters, made with the condition) and this class's own, in slots rather than in
    # the instance's dictionary: the compiled steps (mqwire.common._enqueue_speedups) read and write them in
    # place, and a future given a name the class's shared table of names lacks gets no dictionary of its own.
    __slots__ = ("_done_callbacks", "_exception", "_lazy", "_made_condition", "_place", "_result", "_state")
    _result: Any
    _exception: BaseException | None
    _made_condition: threading.Condition | None
    # A done callback is kept without the condition (under the shared lock, and run by the settling thread
    # as Future runs it): a caller sampling some futures' latency makes no condition for them.
    _done_callbacks: Any
    # A result made when first asked (see finish_many_lazily): (read, source), and the record's place.
    _lazy: tuple[Callable[[Any, int], Any], Any] | None
    _place: int
    # Whether a done callback brings the future back under the collector (see QueuedFuture for when it need not).
    _callbacks_seen = True

    def __init__(self) -> None:
        # Not super().__init__(): it makes the condition this class makes only when needed. _waiters, which
        # only threads holding the condition touch, is made with it. _enqueue_speedups.c makes futures with
        # these same steps, without calling this: a change here is a change there.
        self._state = _PENDING
        self._result = None
        self._exception = None
        self._made_condition = None
        self._done_callbacks = _NO_CALLBACKS
        self._lazy = None
        self._place = 0
        # Out of the collector's scans (see the module's docstring): _track() hands it back before anything
        # that could refer back to it (a condition and its waiters, a callback, an error) is attached.
        _untrack(self)

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        condition = self._made_condition
        if condition is None:
            with _SHARED:
                condition = self._made_condition
                if condition is None:
                    _track(self)
                    if self._lazy is not None:  # the standard methods read _result: made now, under the lock
                        self._result = self._read_lazily()
                    self._waiters: list[Any] = []
                    if self._done_callbacks is _NO_CALLBACKS:
                        self._done_callbacks = []
                    else:  # a QueuedFuture's list, outside the scans until now: Future keeps it once run
                        _track(self._done_callbacks)
                    condition = self._made_condition = threading.Condition()
        return condition

    def add_done_callback(self, fn: Callable[[concurrent.futures.Future[T]], object]) -> None:
        """Call ``fn(future)`` once settled or cancelled (at once if it is), as ``Future.add_done_callback``."""
        with _SHARED:
            short = self._made_condition is None
            if short and self._state not in _DONE:
                if self._callbacks_seen:
                    _track(self)
                if self._done_callbacks is _NO_CALLBACKS:
                    callbacks = [fn]
                    if not self._callbacks_seen:
                        _untrack(callbacks)  # held by this future alone, which is outside the scans too
                    self._done_callbacks = callbacks
                else:
                    self._done_callbacks.append(fn)
                return
        if not short:
            super().add_done_callback(fn)
            return
        try:  # settled the short way already
            fn(self)
        except Exception:
            # Reported where Future reports a callback's error: concurrent.futures' own logger.
            logging.getLogger("concurrent.futures").exception("exception calling callback for %r", self)

    # Once FINISHED a future never changes again, and its outcome was written before its state: these read it
    # without the condition (which the standard methods would make, for each of a flush's many futures).
    def done(self) -> bool:
        """True once settled or cancelled."""
        return self._state in _DONE

    def result(self, timeout: float | None = None) -> T:
        """The record's receipt, as ``Future.result``."""
        if self._state == _FINISHED:
            error = self._exception
            if error is None:
                if self._lazy is not None:
                    return self._read_lazily()  # type: ignore[no-any-return]
                return self._result  # type: ignore[no-any-return]
            try:
                raise error
            finally:
                del error, self  # no cycle through the traceback's frame
        return super().result(timeout)

    def _read_lazily(self) -> Any:
        read, source = self._lazy  # type: ignore[misc]
        return read(source, self._place)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The record's error, or None, as ``Future.exception``."""
        if self._state == _FINISHED:
            return self._exception
        return super().exception(timeout)

    def start(self) -> bool:
        """``set_running_or_notify_cancel``: False when the future was cancelled (the record is not sent)."""
        with _SHARED:
            if self._made_condition is None and self._state == _PENDING:
                self._state = _RUNNING
                return True
        return self.set_running_or_notify_cancel()

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """Settle with ``result``, or with ``error`` when one is given; nothing when already settled or
        cancelled (a close in another thread may settle first)."""
        with _SHARED:
            short = self._made_condition is None
            if short:
                if self._state not in (_PENDING, _RUNNING):
                    return
                if error is not None:
                    _track(self)
                    self._exception = error
                else:
                    self._result = result
                self._state = _FINISHED
                told = self._done_callbacks  # no condition, so no waiter: only these to tell
        if short:
            if told:
                self._invoke_callbacks()  # type: ignore[attr-defined]
                self._release_callbacks()
            return
        try:
            if error is not None:
                self.set_exception(error)
            else:
                self.set_result(result)
        except concurrent.futures.InvalidStateError:
            pass

    def _release_callbacks(self) -> None:
        """After the short way ran this future's callbacks: drop them (a callback added to a done future runs at
        once, so they are never needed again) and, unless a condition or an error came meanwhile, leave the
        collector's scans again. A caller sampling every tenth record's latency kept each sampled future, its
        callback and what the callback holds in those scans until it dropped the futures."""
        with _SHARED:
            if self._made_condition is None:
                self._done_callbacks = _NO_CALLBACKS
                if self._exception is None:
                    _untrack(self)

    @staticmethod
    def _run_callbacks(told: Sequence[RecordFuture[Any]]) -> None:
        """The callbacks of futures the short way settled, outside the shared lock, as Future runs them."""
        for future in told:
            future._invoke_callbacks()  # type: ignore[attr-defined]
        if _compiled is not None and type(told) is list:
            _compiled.release_callbacks(told, _SHARED)  # _release_callbacks for all, in one acquisition
            return
        for future in told:
            future._release_callbacks()

    @staticmethod
    def start_many(futures: Sequence[RecordFuture[Any]]) -> list[bool]:
        """``start`` for each of ``futures`` under one acquisition of the shared lock: whether each started
        (False: cancelled by its caller, so its record is not sent)."""
        started: list[bool]
        slow: list[int]
        if _compiled is not None and type(futures) is list:
            started, slow = _compiled.start_many(futures, _SHARED)
        else:
            started, slow = RecordFuture._start_many_walk(futures)
        for at in slow:  # another thread made the future's condition: its standard start, unless started
            future = futures[at]
            with future._condition:
                if future._state in (_PENDING, _CANCELLED):
                    started[at] = future.set_running_or_notify_cancel()
        return started

    @staticmethod
    def _start_many_walk(futures: Sequence[RecordFuture[Any]]) -> tuple[list[bool], list[int]]:
        """start_many's walk under the shared lock (``_enqueue_speedups.start_many`` in C): whether each future
        started, and the places of those with a condition, to start the standard way."""
        started: list[bool] = []
        keep = started.append
        slow: list[int] = []
        with _SHARED:
            for future in futures:
                if future._made_condition is None:
                    if future._state == _PENDING:
                        future._state = _RUNNING
                        keep(True)
                    else:
                        keep(False)
                else:
                    slow.append(len(started))
                    keep(False)
        return started, slow

    @staticmethod
    def finish_many(
        futures: Sequence[RecordFuture[Any]],
        sources: Sequence[Any] | None = None,
        read: Callable[[Any], Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """``finish`` for each of ``futures`` under one acquisition of the shared lock: with ``error`` every one
        fails with it, else each settles with ``read(source)`` (or the source itself) of its source in
        ``sources``. ``read`` runs under the lock: it must be short and take no lock."""
        slow: list[int] = []
        told: list[RecordFuture[Any]] = []
        with _SHARED:
            for at, future in enumerate(futures):
                if future._made_condition is None:
                    if future._state in (_PENDING, _RUNNING):
                        if future._done_callbacks:
                            told.append(future)
                        if error is not None or sources is None:
                            if error is not None:  # settled with None otherwise: nothing to refer back
                                _track(future)
                            future._exception = error
                        else:
                            try:
                                future._result = sources[at] if read is None else read(sources[at])
                            except Exception as failed:  # the source's own error is the record's
                                _track(future)
                                future._exception = failed
                        future._state = _FINISHED
                else:
                    slow.append(at)
        RecordFuture._run_callbacks(told)
        for at in slow:  # a waiter to tell: the standard way, outside the lock
            future = futures[at]
            if error is not None or sources is None:
                future.finish(error=error)
                continue
            try:
                value = sources[at] if read is None else read(sources[at])
            except Exception as failed:
                future.finish(error=failed)
            else:
                future.finish(value)

    @staticmethod
    def finish_many_lazily(
        futures: Sequence[RecordFuture[Any]], read: Callable[[Any, int], Any], source: Any, first: int
    ) -> None:
        """``finish`` for each of ``futures``, the i-th with the result ``read(source, first + i)``, made each time
        it is asked for rather than now: settling keeps no result object per record (which the caller would hold
        until it drops the future). ``read`` must not fail and take no lock (a waiter's condition reads it under
        the shared lock); ``source`` must not refer back to the futures (they may be outside the collector)."""
        lazy = (read, source)
        told: list[RecordFuture[Any]]
        slow: list[int]
        if _compiled is not None and type(futures) is list:
            told, slow = _compiled.finish_many_lazily(futures, lazy, first, _SHARED)
        else:
            told, slow = RecordFuture._finish_lazily_walk(futures, lazy, first)
        RecordFuture._run_callbacks(told)
        for at in slow:  # a waiter to tell: the standard way, with the result made now (unless cancelled)
            future = futures[at]
            if not future.done():
                future.finish(read(source, first + at))

    @staticmethod
    def _finish_lazily_walk(
        futures: Sequence[RecordFuture[Any]], lazy: tuple[Callable[[Any, int], Any], Any], first: int
    ) -> tuple[list[RecordFuture[Any]], list[int]]:
        """finish_many_lazily's walk under the shared lock (``_enqueue_speedups.finish_many_lazily`` in C): the
        futures settled that have callbacks to run, and the places of those with a condition."""
        # finish_many's walk, written out again: it runs once per record, where a call per future would cost more.
        slow: list[int] = []
        told: list[RecordFuture[Any]] = []
        with _SHARED:
            for at, future in enumerate(futures):
                if future._made_condition is None:
                    if future._state in (_PENDING, _RUNNING):
                        if future._done_callbacks:
                            told.append(future)
                        future._lazy = lazy
                        future._place = first + at
                        future._state = _FINISHED
                else:
                    slow.append(at)
        return told, slow


class QueuedFuture(RecordFuture[T]):
    """The future of a record in a blocking producer's queue, which holds it until it settles it (acknowledged,
    refused, or failed by the queue's close): a done callback added meanwhile leaves it, and its list of callbacks,
    outside the collector's scans.

    Nothing can become unreachable through them while the queue holds the future, and settling drops the
    callbacks (and so any cycle through one). A caller adding a callback to every tenth record (to sample its
    latency) otherwise put three objects each into the collector's older generations, which doubled its full
    collections, each a walk of every future the caller keeps. The one case left: a future whose queue is
    dropped with it unsettled (its client dropped unclosed) keeps a cycle through its callback until the process
    ends."""

    __slots__ = ()
    _callbacks_seen = False


def _share_attribute_names(cls: type[RecordFuture[Any]]) -> None:
    """Give one future of ``cls``, before any other exists, the attribute a future may get outside its slots.

    CPython keeps the attribute names of a class's instances in one table shared by all of them, and stops adding
    names to it once a few dozen instances exist; an instance given a name missing from it then gets a dictionary
    of its own, one more object for the cycle collector to count. So the name goes in first, here."""
    future = cls()
    future._waiters = []


_share_attribute_names(RecordFuture)
_share_attribute_names(QueuedFuture)

if _compiled is not None:
    # The walks of start_many and finish_many_lazily, a settled future's result() and a pending one's
    # add_done_callback(), compiled; every other case goes to the methods above.
    _compiled.install(RecordFuture, _PENDING, _RUNNING, _FINISHED, _NO_CALLBACKS, _SHARED)
