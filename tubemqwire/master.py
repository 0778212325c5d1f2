"""The master link: one connection to the active master, and the registrations kept alive over it.

Masters run as one active node and standbys. A standby answers every request with a StandbyException
(``MasterStandbyError``); the link then moves to the next address, as it does when a connection fails or a
request times out. Each producer and consumer holds a :class:`Membership`: it registers, heartbeats on a
fixed period, registers again when the master no longer knows it (errCode 411) or when the link had to
reconnect since the last exchange (a new active master knows nothing of us), and deregisters on close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as _ssl
from abc import ABC, abstractmethod
from collections.abc import Sequence

from google.protobuf.message import Message

from mqwire.common.errors import (
    ClosedError,
    ConnectError,
    ConnectionLostError,
    FatalError,
    MqwireError,
    ProtocolError,
    RequestTimeoutError,
    RetriableError,
)
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.policy import AddressRotation, Backoff
from mqwire.common.stats import ClientCounters
from tubemqwire.connection import TubeConnection
from tubemqwire.errors import HeartbeatNoNodeError, MasterStandbyError
from tubemqwire.protocol.constants import ServiceType

log = logging.getLogger(__name__)

# Failures that say "try another master" rather than "this request is wrong".
_SWITCH_MASTER = (MasterStandbyError, ConnectError, ConnectionLostError, RequestTimeoutError)


class MasterLink:
    """Calls to whichever master is active, moving through the address list on failure."""

    def __init__(
        self,
        addresses: Sequence[tuple[str, int]],
        *,
        ssl: _ssl.SSLContext | None = None,
        connect_timeout: float = 10.0,
        request_timeout: float = 10.0,
        backoff_initial: float = 0.2,
        backoff_max: float = 5.0,
        counters: ClientCounters | None = None,
    ) -> None:
        self._rotation = AddressRotation(addresses)
        self.counters = ClientCounters() if counters is None else counters
        self._ssl = ssl
        self._connect_timeout = connect_timeout
        self._request_timeout = request_timeout
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._connection: TubeConnection | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        # Grows with every new connection: a registration made on an older one may be unknown now.
        self.generation = 0

    @property
    def connected(self) -> bool:
        """Whether a connection to a master is open now."""
        return self._connection is not None and not self._connection.closed

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return self._rotation.addresses

    @property
    def current_address(self) -> tuple[str, int]:
        return self._rotation.current()

    async def _connect(self) -> TubeConnection:
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        async with self._opening:
            connection = self._connection
            if connection is not None and not connection.closed:
                return connection
            if self._closed:
                raise ClosedError("TubeMQ client is closed")
            if connection is not None and connection.channel.error is not None:
                self.counters.lost(connection.channel.error)
            address = self._rotation.current()
            connection = await TubeConnection.open(
                address,
                ssl=self._ssl,
                connect_timeout=self._connect_timeout,
                request_timeout=self._request_timeout,
                name=f"tubemq master {address[0]}:{address[1]}",
            )
            self._connection = connection
            self.generation += 1
            self.counters.opened(address)
            log.info("connected to the TubeMQ master at %s:%d", *address)
            return connection

    def _switch(self, connection: TubeConnection | None, reason: MqwireError) -> None:
        if connection is not None:
            # Other sessions may be waiting on this connection: for them it is lost, and worth a retry.
            connection.close(ConnectionLostError(f"{connection.channel.name}: given up ({reason})"))
        if connection is None or self._connection is connection:
            self._connection = None
            nxt = self._rotation.advance()
            log.info("TubeMQ master: %s; trying %s:%d next", reason, nxt[0], nxt[1])

    async def connect(self) -> None:
        """Open a connection to the first master (in list order) that accepts one."""
        failures = []
        for _ in range(len(self._rotation)):
            try:
                await self._connect()
                return
            except ConnectError as exc:
                failures.append(str(exc))
                self._switch(None, exc)
        raise ConnectError(f"no TubeMQ master reachable: {'; '.join(failures)}")

    async def call(self, method: int, request: Message, *, timeout: float | None = None) -> bytes:
        """Send ``request`` to ``method`` of the active master and return the answer's body.

        Every address gets up to two tries (with backoff once the whole list has failed); then the last
        error is raised. Errors that another master would repeat are raised at once.
        """
        backoff = Backoff(initial=self._backoff_initial, maximum=self._backoff_max)
        attempts = max(2, 2 * len(self._rotation))
        last: MqwireError | None = None
        for attempt in range(attempts):
            if self._closed:
                raise ClosedError("TubeMQ client is closed")
            if attempt and attempt % len(self._rotation) == 0:
                await asyncio.sleep(backoff.next_delay())
            connection = None
            try:
                connection = await self._connect()
                return await connection.call(ServiceType.MASTER, method, request, timeout=timeout)
            except _SWITCH_MASTER as exc:
                last = exc
                self._switch(connection, exc)
        assert last is not None
        raise last

    async def close(self) -> None:
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.wait_closed(), self._connect_timeout)


class Membership(ABC):
    """A registration with the master kept alive by a heartbeat task.

    Subclasses say what registering, a heartbeat and deregistering mean; this class decides when each
    happens. ``on_fatal`` hears about an error no retry can fix (the group is forbidden, ...).
    """

    def __init__(
        self,
        link: MasterLink,
        *,
        interval: float,
        name: str,
        register_retries: int = 5,
        retry_backoff: float = 1.0,
        retry_backoff_max: float = 30.0,
    ) -> None:
        self.link = link
        self.interval = interval
        self.name = name
        self._register_retries = register_retries
        self._retry_backoff = retry_backoff
        self._retry_backoff_max = retry_backoff_max
        self._generation = -1
        self._registered = False
        self._wake = asyncio.Event()
        self._tasks = OwnedTasks(name)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._busy = False
        self.failure: MqwireError | None = None

    # ------------------------------------------------------------------------------------- hooks
    @abstractmethod
    async def register(self) -> None:
        """Register with the master; raise the typed error of a failed answer."""

    @abstractmethod
    async def heartbeat(self) -> None:
        """One heartbeat; raise HeartbeatNoNodeError when the master does not know us."""

    @abstractmethod
    async def deregister(self) -> None:
        """Tell the master we are leaving."""

    def on_fatal(self, error: MqwireError) -> None:  # noqa: B027 - optional hook
        """A registration or heartbeat failed for good; ``failure`` already holds it."""

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Register (retrying what can be retried) and start the heartbeat task."""
        backoff = Backoff(initial=self._retry_backoff, maximum=self._retry_backoff_max)
        for attempt in range(self._register_retries):
            try:
                await self._register()
                break
            except RetriableError as exc:
                if attempt + 1 >= self._register_retries:
                    raise
                log.warning("%s: register failed (%s); retrying", self.name, exc)
                await asyncio.sleep(backoff.next_delay())
        self._task = self._tasks.spawn(self._run(), name="heartbeat")

    async def _register(self) -> None:
        generation = self.link.generation
        await self.register()
        # A reconnection during register() is fine: the new master has just seen us.
        self._generation = max(generation, self.link.generation)
        self._registered = True
        log.debug("%s: registered with the master (generation %d)", self.name, self._generation)

    def next_delay(self) -> float:
        """Seconds until the next heartbeat; subclasses may beat faster for a while."""
        return self.interval

    def wake(self) -> None:
        """Heartbeat now rather than at the end of the period (a rebalance step finished, ...)."""
        self._wake.set()

    async def _run(self) -> None:
        backoff = Backoff(initial=self._retry_backoff, maximum=self._retry_backoff_max)
        delay = 0.0 if self._wake.is_set() else self.next_delay()
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            self._wake.clear()
            if self._closing:
                return
            self._busy = True
            try:
                if not self._registered or self._generation != self.link.generation:
                    log.info("%s: registering again with the master", self.name)
                    await self._register()
                else:
                    await self.heartbeat()
                backoff.reset()
                delay = self.next_delay()
            except HeartbeatNoNodeError as exc:
                log.info("%s: the master forgot this client (%s); registering again", self.name, exc)
                self._registered = False
                # The first re-registration goes at once; repeated ones back off.
                first = backoff.attempts == 0
                delay = backoff.next_delay()
                if first:
                    delay = 0.0
            except (RetriableError, ProtocolError) as exc:
                # A garbled answer is one bad exchange, not a reason to leave the cluster.
                log.warning("%s: master heartbeat failed: %s", self.name, exc)
                delay = min(self.interval, backoff.next_delay())
            except FatalError as exc:
                log.error("%s: giving up on the master: %s", self.name, exc)
                self.failure = exc
                self.on_fatal(exc)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # A bug must not silently stop the heartbeats; retry after a period.
                log.exception("%s: heartbeat failed unexpectedly: %r", self.name, exc)
                delay = self.interval
            finally:
                self._busy = False

    async def stop(self, *, timeout: float) -> None:
        """Stop heartbeating and deregister (best effort within ``timeout`` seconds)."""
        self._closing = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            if self._busy:
                # Let an exchange on the wire finish; the loop ends right after it.
                await asyncio.wait({task}, timeout=timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._registered:
            self._registered = False
            try:
                await asyncio.wait_for(self.deregister(), timeout)
            except (MqwireError, TimeoutError) as exc:
                log.info("%s: deregistering failed: %s", self.name, exc)
