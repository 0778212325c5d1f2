"""Start once, close once, and own the background tasks: the lifecycle every client object shares.

A producer, consumer or client embeds a ``Lifecycle``; its ``start`` and ``close`` run their steps exactly
once however many callers race, and ``spawn`` ties a background task to the object, so that ``close`` cancels
and awaits every task it started: no task outlives ``close()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from mqwire.common.affinity import Affinity
from mqwire.common.errors import ClosedError

__all__ = ["AsyncResource", "Children", "ClientSession", "Closable", "Lifecycle", "OwnedTasks", "SessionClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class OwnedTasks:
    """Background tasks that belong to one object and end with it."""

    __slots__ = ("_name", "_tasks")

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None, awaited: bool = False) -> asyncio.Task[T]:
        """Run ``coro`` in the background until it ends or ``cancel_all`` is awaited.

        A task nobody awaits (``awaited`` false) must handle its own failures: one that escapes is logged. An
        ``awaited`` task (a request whose outcome a caller waits for) leaves its failure to that caller.
        """
        label = name or getattr(coro, "__qualname__", "task")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self._name}: {label}")
        self._tasks.add(task)
        task.add_done_callback(self._forget if awaited else self._finished)
        return task

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # A task that should have handled its own failure did not: say so instead of losing it.
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    async def wait(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` seconds for the tasks to end by themselves (cancelling none)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    def cancel(self) -> None:
        """Cancel every task without waiting for them to end: for a close that cannot await (a connection's,
        closed from a callback); the tasks end on the loop's next turns."""
        for task in list(self._tasks):
            task.cancel()

    async def cancel_all(self) -> None:
        """Cancel every task and wait until each has ended (tasks spawned meanwhile included)."""
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            # A close that is itself cancelled still lets the tasks finish their cancellation.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)


class Lifecycle:
    """The state of an object that is started once and closed once.

    ``start(steps)`` runs ``steps`` the first time and makes later callers wait for that same start;
    ``close(steps)`` likewise, after which ``check_open`` raises ``ClosedError``. ``tasks`` are the object's
    background tasks, cancelled and awaited at the end of ``close``.
    """

    __slots__ = ("_closed", "_closing", "_starting", "_what", "tasks")

    def __init__(self, what: str) -> None:
        self._what = what
        self._starting: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._closed = False
        self.tasks = OwnedTasks(what)

    @property
    def started(self) -> bool:
        """Whether a start has completed successfully."""
        return self._starting is not None and self._starting.done() and self._starting.exception() is None

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun: no new work is accepted."""
        return self._closing is not None or self._closed

    def check_open(self) -> None:
        """Raise ``ClosedError`` once ``close`` has begun."""
        if self.closed:
            raise ClosedError(f"{self._what} is closed")

    async def start(self, steps: Callable[[], Awaitable[None]]) -> None:
        """Run ``steps`` once; concurrent and later callers share its outcome (a failed start may be retried)."""
        self.check_open()
        if self._starting is None or (self._starting.done() and self._starting.exception() is not None):
            self._starting = asyncio.ensure_future(self._run(steps))
        await asyncio.shield(self._starting)

    async def close(self, steps: Callable[[], Awaitable[None]] | None = None) -> None:
        """Run ``steps`` once, then cancel and await the background tasks; later callers wait for the same."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(steps))
        await asyncio.shield(self._closing)

    async def _run(self, steps: Callable[[], Awaitable[None]]) -> None:
        await steps()

    async def _close(self, steps: Callable[[], Awaitable[None]] | None) -> None:
        try:
            if self._starting is not None and not self._starting.done():
                self._starting.cancel()
                with contextlib.suppress(BaseException):
                    await self._starting
            if steps is not None:
                await steps()
        finally:
            await self.tasks.cancel_all()
            self._closed = True


class AsyncResource(ABC):
    """What opens with ``start`` and ends with ``close``: clients, producers, consumers, readers, table views.

    ``async with`` starts it and closes it however the block ends.
    """

    @abstractmethod
    async def start(self) -> None:
        """Open it (connect, register, subscribe): what a failure to reach the brokers raises is raised here."""

    @abstractmethod
    async def close(self) -> None:
        """Release what it holds."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class ClientSession(Protocol):
    """The state a client shares with what it makes: what its ``start`` and ``close`` drive."""

    affinity: Affinity

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""

    async def start(self) -> None:
        """Connect: a wrong address or refused credentials fail here."""

    async def close(self) -> None:
        """Close what the client made, then the connections."""


S = TypeVar("S", bound=ClientSession)


class SessionClient(AsyncResource, Generic[S]):
    """A client over its session: ``start`` connects, ``close`` closes what it made, then the connections."""

    _session: S

    async def start(self) -> None:
        """Connect, so that a wrong address or refused credentials fail here rather than at first use."""
        self._session.affinity.check_connect()
        await self._session.start()

    async def close(self) -> None:
        """Close every producer, consumer, reader and admin this client made (producers flush first), then the
        connections.

        In a process forked after the client was made it does nothing: the connections are the parent's."""
        if not self._session.affinity.may_close():
            return
        await self._session.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._session.closed


class Closable(Protocol):
    """Anything a client closes when it closes: producers, consumers, readers, admins."""

    async def close(self) -> None:
        """Release what it holds."""


class Children:
    """What a client made (producers, consumers, readers, admins): closed with the client, each once."""

    __slots__ = ("_children",)

    def __init__(self) -> None:
        self._children: set[Closable] = set()

    def adopt(self, child: Closable) -> None:
        """Close ``child`` when the client closes."""
        self._children.add(child)

    def release(self, child: Closable) -> None:
        """Forget a child that closed by itself."""
        self._children.discard(child)

    def __len__(self) -> int:
        return len(self._children)

    def __iter__(self) -> Iterator[Closable]:
        """The children open now (a copy: safe while one closes)."""
        return iter(list(self._children))

    async def close_all(self) -> None:
        """Close every child (a producer flushes first); one that fails to close does not keep the others open."""
        children, self._children = list(self._children), set()
        for child in children:
            try:
                await child.close()
            except Exception:
                log.exception("closing %r failed", child)

