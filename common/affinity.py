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

Where a client cannot run at all, the first call says so with ``UnsupportedRuntimeError``: ``check_connect``
(the coroutines that connect) wants a running asyncio event loop, any check under trio names trio, and a loop
is looked over once per type when a client first binds to it (the methods the connections call must be its
own, not ``AbstractEventLoop``'s that raise ``NotImplementedError``).

No transport guard for a raw ``os.fork()`` in a running loop: the child's loop shares the parent's epoll and sockets,
takes replies in recv() before any callback, and aborting its copy unregisters the socket, deafening the parent.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from threading import get_ident as _thread_id  # bound once: check() runs on every send
from typing import Any

from mqwire.common.errors import ForkedClientError, UnsupportedRuntimeError, WrongLoopError

__all__ = ["Affinity", "fork_generation"]

# Forks seen by this process: each child's copy of the module counts one more than its parent did.
_generation = 0


def _forked() -> None:
    global _generation
    _generation += 1


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def fork_generation() -> int:
    """How many forks made this process from the first one: a thread or loop recorded under another count
    does not exist here."""
    return _generation


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
        if self._generation != _generation or _thread_id() != self._thread or not self._loop_running():
            self._mismatch(_running_loop())

    def check_connect(self) -> None:
        """For the coroutines that connect (``start``, ``async with``): raise ``UnsupportedRuntimeError`` unless an
        asyncio event loop runs here, then ``check()``."""
        if _running_loop() is None:
            raise UnsupportedRuntimeError(_no_loop_message(self._what))
        self.check()

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
        if loop is None and (library := _other_async_library()) is not None:
            raise UnsupportedRuntimeError(_no_loop_message(self._what, library))
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
        _check_loop(loop, self._what)
        self._loop = loop
        self._loop_running = loop.is_running
        self._thread = threading.get_ident()
        self._thread_name = threading.current_thread().name


# What the connections and clients call on their loop; a loop type that leaves one of them to
# AbstractEventLoop (which raises NotImplementedError) cannot carry a client.
_LOOP_NEEDS = ("create_connection", "create_future", "create_task", "call_soon", "call_later", "time")
# Loop types already looked over (a handful per process at most).
_served_loops: set[type] = set()


def _check_loop(loop: asyncio.AbstractEventLoop, what: str) -> None:
    kind = type(loop)
    if kind in _served_loops:
        return
    missing = [name for name in _LOOP_NEEDS if getattr(kind, name, None) is getattr(asyncio.AbstractEventLoop, name)]
    if missing:
        raise UnsupportedRuntimeError(
            f"this {what} cannot run on event loop {kind.__module__}.{kind.__qualname__}: it does not implement"
            f" {', '.join(missing)}. mqwire runs on asyncio's own event loops and on uvloop"
        )
    # Whether the loop hands reads to asyncio.BufferedProtocol shows only when data arrives: a loop that calls
    # data_received instead fails the connection then, naming the loop (common.transport).
    _served_loops.add(kind)


def _other_async_library() -> str | None:
    """The async library running this task when it is not asyncio, or None. Asked of sniffio and of trio only
    when they are imported already: a library that reports itself to sniffio has imported it."""
    sniffio: Any = sys.modules.get("sniffio")
    if sniffio is not None:
        try:
            library = str(sniffio.current_async_library())
        except sniffio.AsyncLibraryNotFoundError:
            library = None
        if library is not None:
            return None if library == "asyncio" else library
    trio: Any = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            return None
        return "trio"
    return None


def _no_loop_message(what: str, library: str | None = None) -> str:
    library = library or _other_async_library()
    running = f"{library} is running here, not asyncio" if library else "no asyncio event loop is running"
    message = (
        f"this {what} needs a running asyncio event loop and {running}. mqwire runs on asyncio's own event loop"
        " (asyncio.run) or on uvloop (uvloop.run)"
    )
    if library == "trio":
        message += "; from trio, run it through trio-asyncio, or write the program with anyio on its asyncio backend"
    elif library is not None:
        message += f"; from {library}, run it through a bridge to an asyncio loop (anyio's asyncio backend)"
    return message


def _never() -> bool:
    return False


def _describe(loop: asyncio.AbstractEventLoop) -> str:
    state = "closed" if loop.is_closed() else "running" if loop.is_running() else "idle"
    return f"{type(loop).__module__}.{type(loop).__qualname__} at {id(loop):#x} ({state})"
