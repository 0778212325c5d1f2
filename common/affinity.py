"""Which process and event loop a client belongs to, checked at every public call.

A client's sockets, futures and background tasks belong to the process and the event loop that made them.
After a fork the child holds copies of the parent's sockets: a write there would interleave with the parent's
frames on the same connection, a read would take the parent's responses. On another loop (a second
``asyncio.run``, a thread with a loop of its own) the client's futures would never be woken. So a client
records where it was made, its producers and consumers share that record, and each public entry point calls
``check()``: the first wrong use raises ``ForkedClientError`` or ``WrongLoopError`` instead of corrupting a
connection or waiting forever.

A client made outside a running loop (``client = connect(url)`` at import time, then ``asyncio.run(main())``)
takes the loop of its first use. The per-call cost is one identity compare of the running loop and one integer
compare of the fork generation that ``os.register_at_fork`` moves on in each child.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable

from mqwire.common.errors import ForkedClientError, WrongLoopError

__all__ = ["Affinity"]

# Forks seen by this process: each child's copy of the module counts one more than its parent did.
_generation = 0


def _forked() -> None:
    global _generation
    _generation += 1


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Affinity:
    """The process, event loop and thread one client (with everything it made) belongs to."""

    __slots__ = ("_generation", "_loop", "_loop_running", "_pid", "_thread", "_thread_name", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._generation = _generation
        self._pid = os.getpid()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_running: Callable[[], bool] = _never
        self._thread = 0  # no thread has this id: every check takes the long way until the client is bound
        self._thread_name = ""
        loop = _running_loop()
        if loop is not None:
            self._bind(loop)

    @property
    def forked(self) -> bool:
        """Whether this process is a child forked after the client was made (its sockets are the parent's)."""
        return self._generation != _generation or self._pid != os.getpid()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the client belongs to (None until its first use inside a running loop)."""
        return self._loop

    def check(self) -> None:
        """Raise ``ForkedClientError`` in a forked child, ``WrongLoopError`` on another loop or thread; bind
        the client to the running loop on its first use there."""
        # Asking for the running loop costs a getpid() system call per call on CPython 3.11, too much for
        # send(). The same answer, cheaper: on the client's own thread, with the client's loop running there,
        # the running loop is the client's (a thread runs one loop at a time, and only from inside it).
        if self._generation != _generation or threading.get_ident() != self._thread or not self._loop_running():
            self._mismatch(_running_loop())

    def may_close(self) -> bool:
        """For ``close``: False in a forked child, where closing does nothing at all (no frame sent, no socket
        shut, so the parent's connections live on); otherwise ``check()`` and True."""
        if self.forked:
            return False
        self.check()
        return True

    def _mismatch(self, loop: asyncio.AbstractEventLoop | None) -> None:
        if self.forked:
            raise ForkedClientError(
                f"this {self._what} was made in process {self._pid}, before the fork that made process"
                f" {os.getpid()}; its connections belong to that process. Connect a new client in the child"
                " (after the fork), and leave this one to the parent"
            )
        if self._loop is None:
            if loop is not None:
                self._bind(loop)
            return  # not used in a loop yet: anything goes until then
        if loop is None and threading.get_ident() == self._thread and not self._loop.is_closed():
            return  # a plain call from the loop's own thread between two runs of that loop
        used_from = "no event loop" if loop is None else f"event loop {_describe(loop)}"
        raise WrongLoopError(
            f"this {self._what} belongs to event loop {_describe(self._loop)} in thread {self._thread_name!r}"
            f" (id {self._thread}) but was used from {used_from} in thread"
            f" {threading.current_thread().name!r} (id {threading.get_ident()}). A client and its producers and"
            " consumers work only on the loop of their first use (each asyncio.run() makes a new one): connect a"
            " client on each loop or thread, or hand the work to the client's loop with"
            " asyncio.run_coroutine_threadsafe"
        )

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._loop_running = loop.is_running
        self._thread = threading.get_ident()
        self._thread_name = threading.current_thread().name


def _never() -> bool:
    return False


def _describe(loop: asyncio.AbstractEventLoop) -> str:
    state = "closed" if loop.is_closed() else "running" if loop.is_running() else "idle"
    return f"{type(loop).__module__}.{type(loop).__qualname__} at {id(loop):#x} ({state})"
