"""The bridge from blocking code to the async clients: one event loop in a thread of its own.

A blocking client owns one ``Bridge``: an anyio ``BlockingPortal`` running an asyncio event loop in a daemon
thread, made when the client connects and stopped when it closes. Every blocking call hands a coroutine
function to that loop and waits for its outcome in the caller's thread, so the async client (which belongs to
the bridge's loop, see ``mqwire.common.affinity``) runs unchanged.

What the caller sees:

- the async call's result, or its exception as is (the library's typed errors, their cause chained);
- ``WrongLoopError`` when the call comes from the bridge's own loop thread (a callback of the client calling
  the blocking API would otherwise wait on itself forever);
- with ``timeout=``, ``RequestTimeoutError`` (or the error named) once that many seconds passed, the call on
  the loop being cancelled;
- on Ctrl-C (``KeyboardInterrupt`` in the caller's thread) the call on the loop is cancelled and the
  interrupt goes on; the bridge stays usable;
- ``ClosedError`` once the bridge is stopped, ``ForkedClientError`` in a process forked after it started (the
  loop thread does not exist there, so waiting on it would never end).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from mqwire.common.affinity import fork_generation
from mqwire.common.errors import ClosedError, ForkedClientError, RequestTimeoutError, WrongLoopError

__all__ = ["GRACE", "Bridge", "bound"]

T = TypeVar("T")

GRACE = 0.5
"""Seconds a blocking call whose async side has a timeout of its own (``receive``, ``getmany``, ``flush``)
waits beyond it for the loop to hand the outcome back, before cancelling the call itself."""


def bound(timeout: float | None) -> float | None:
    """How long the caller waits for an async call given ``timeout``: that timeout and ``GRACE`` (None: no
    bound). The async side ends the call itself at ``timeout``; this bound only matters on a stalled loop."""
    return None if timeout is None else max(timeout, 0.0) + GRACE


class Bridge:
    """An asyncio event loop in a thread of its own, and the blocking calls into it."""

    # In slots: a blocking producer's compiled put_value reads _closed in place for every record.
    __slots__ = (
        "__dict__", "__weakref__", "_closed", "_generation", "_lock", "_loop", "_name", "_pending", "_pid",
        "_portal", "_thread", "_thread_id",
    )

    def __init__(self, name: str = "mqwire-blocking") -> None:
        """Start the loop thread (named ``name``); it runs until ``stop``."""
        self._name = name
        self._pid = os.getpid()
        self._generation = fork_generation()  # a bridge started before a fork has no loop thread after it
        self._lock = threading.Lock()
        self._closed = False
        # The loop thread is started here rather than by anyio's start_blocking_portal, whose context manager,
        # finalized in a forked child (the bridge dropped, or the child exiting), waits on the parent's loop
        # thread, which does not exist there: the child would hang.
        started: concurrent.futures.Future[BlockingPortal] = concurrent.futures.Future()
        self._thread = threading.Thread(target=_serve, args=(started,), name=name, daemon=True)
        self._thread.start()
        self._portal = started.result()
        self._thread_id: int = self._portal.call(threading.get_ident)
        self._loop: asyncio.AbstractEventLoop = self._portal.call(asyncio.get_running_loop)
        self._pending: set[concurrent.futures.Future[Any]] = set()  # calls not finished yet

    @property
    def closed(self) -> bool:
        """Whether ``stop`` has begun."""
        return self._closed

    @property
    def generation(self) -> int:
        """The process's fork generation when the bridge started (``fork_generation``): none of it exists in a
        process of another."""
        return self._generation

    @property
    def thread_id(self) -> int:
        """The id of the loop thread."""
        return self._thread_id

    def call(self, async_fn: Callable[..., Awaitable[T]], /, *args: Any, timeout: float | None = None,
             timeout_error: type[BaseException] = RequestTimeoutError, late: Callable[[T], None] | None = None) -> T:
        """Run ``async_fn(*args)`` on the loop and return its result (or raise its exception) here.

        With ``timeout`` (seconds) the wait ends after it: the call is cancelled on the loop and
        ``timeout_error`` raised, unless the call finished meanwhile, whose outcome is then returned. A result
        that comes after the caller gave up (timeout, Ctrl-C) goes to ``late`` (called on the loop) instead of
        being lost: a consumer keeps the messages for its next call.
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:  # the future exists before the call is scheduled: a Ctrl-C anywhere from here on cancels it
            self._schedule(functools.partial(async_fn, *args), future, late)
            return self.wait(future, timeout=timeout, timeout_error=timeout_error)
        except KeyboardInterrupt:
            future.cancel()
            raise

    def run_sync(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run the plain function ``fn(*args, **kwargs)`` in the loop thread (where the async client's own
        synchronous methods must run) and return its result here."""

        async def run() -> T:
            return fn(*args, **kwargs)

        return self.call(run)

    def submit(self, async_fn: Callable[..., Awaitable[T]], /, *args: Any) -> concurrent.futures.Future[T]:
        """Start ``async_fn(*args)`` on the loop without waiting; the returned future is its outcome (cancelling
        the future cancels the call)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._schedule(functools.partial(async_fn, *args), future)
        return future

    def wait(self, future: concurrent.futures.Future[T], *, timeout: float | None = None,
             timeout_error: type[BaseException] = RequestTimeoutError) -> T:
        """The outcome of ``future`` (from ``submit``), waiting at most ``timeout`` seconds; on Ctrl-C or at the
        timeout the call is cancelled on the loop."""
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            raise ClosedError(f"{self._name} closed before the call ended") from None
        except concurrent.futures.TimeoutError:
            if future.cancel():
                raise timeout_error(f"no outcome within {timeout} s; the call was cancelled") from None
            return future.result()  # it finished while the wait ended
        except KeyboardInterrupt:
            future.cancel()  # the loop cancels the call: the client goes on with the next one
            raise

    def _schedule(
        self, fn: Callable[[], Awaitable[T]], future: concurrent.futures.Future[T],
        late: Callable[[T], None] | None = None,
    ) -> None:
        # Not the portal's start_task_soon, which waits until the task exists: the caller holds the future
        # before anything runs, so a Ctrl-C at any point can cancel the call.
        self.check()
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        try:
            self._loop.call_soon_threadsafe(self._spawn, fn, future, late)
        except RuntimeError as error:  # the loop closed between the check and the call
            if future.set_running_or_notify_cancel():
                future.set_exception(ClosedError(f"{self._name} is closed"))
            raise ClosedError(f"{self._name} is closed") from error

    def _spawn(
        self, fn: Callable[[], Awaitable[T]], future: concurrent.futures.Future[T], late: Callable[[T], None] | None
    ) -> None:
        """On the loop: run the call as a task whose outcome goes to ``future``, cancelled with it."""
        if future.cancelled():
            return
        loop = self._loop
        task = loop.create_task(_awaited(fn))

        def cancelled(done: concurrent.futures.Future[T]) -> None:
            if done.cancelled():
                with contextlib.suppress(RuntimeError):  # the loop is gone: so is the task
                    loop.call_soon_threadsafe(task.cancel)

        def finished(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                future.cancel()
                return
            error = done.exception()  # taken even when nobody waits any more, so asyncio does not log it
            if not future.set_running_or_notify_cancel():
                if error is None and late is not None:
                    late(done.result())  # finished as the caller gave up: kept, not dropped
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(done.result())

        future.add_done_callback(cancelled)
        task.add_done_callback(finished)

    def check(self) -> None:
        """Raise unless a blocking call may be made here: ``WrongLoopError`` in the loop thread itself,
        ``ForkedClientError`` in a forked child, ``ClosedError`` once stopped. Cheap: called once per record."""
        if self._generation != fork_generation():
            raise ForkedClientError(
                f"{self._name} was started in process {self._pid}, before the fork that made process"
                f" {os.getpid()}; its event loop thread does not exist here. Connect a new client in the child"
            )
        if threading.get_ident() == self._thread_id:
            raise WrongLoopError(
                f"a blocking call into {self._name} was made from its own event loop thread"
                f" ({threading.current_thread().name!r}): it would wait on itself forever. In code the client"
                " calls back (a serializer, a callback, a task on its loop), use the async client instead"
            )
        if self._closed:
            raise ClosedError(f"{self._name} is closed")

    def stop(self) -> None:
        """Stop the loop (cancelling what still runs there) and wait for its thread to end. Idempotent."""
        if self._generation != fork_generation():
            self._closed = True  # the child has no loop thread to stop
            return
        if threading.get_ident() == self._thread_id:
            raise WrongLoopError(f"{self._name} cannot be stopped from its own event loop thread")
        with self._lock:
            if self._closed:
                return
            self._closed = True
        # Calls still running are cancelled (a receive left waiting must not keep the thread alive), and their
        # callers told ClosedError; leaving the portal's context then joins the thread.
        for future in list(self._pending):
            future.cancel()
        with contextlib.suppress(RuntimeError):
            self._portal.call(self._portal.stop, True)
        self._thread.join()

    def __del__(self) -> None:
        # A bridge dropped unstopped still ends its loop thread, where that can be done: not in a forked child
        # (there is no thread to stop), nor from the loop thread itself, nor while the interpreter exits (its
        # daemon threads run no more then: waiting on the loop thread would hold the exit forever).
        if getattr(self, "_loop", None) is None or self._closed or self._generation != fork_generation():
            return
        if sys.is_finalizing():
            return
        if threading.get_ident() != self._thread_id:
            with contextlib.suppress(Exception):
                self.stop()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running"
        return f"Bridge({self._name!r}, {state}, thread id {self._thread_id})"


def _serve(started: concurrent.futures.Future[BlockingPortal]) -> None:
    """The loop thread: a portal whose loop runs until the portal is stopped; ``started`` gets the portal, or
    the error that kept the loop from starting."""

    async def serve() -> None:
        async with BlockingPortal() as portal:
            started.set_result(portal)
            await portal.sleep_until_stopped()

    try:
        anyio.run(serve, backend="asyncio")
    except BaseException as error:
        if not started.done():
            started.set_exception(error)
            return
        raise


async def _awaited(fn: Callable[[], Awaitable[T]]) -> T:
    return await fn()
