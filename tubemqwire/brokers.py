"""Connections to the brokers, one per address, shared by every producer and consumer of a client."""

from __future__ import annotations

import asyncio
import logging
import ssl as _ssl
from collections.abc import Iterable

from google.protobuf.message import Message

from mqwire.common.errors import ConnectError, MqwireError
from mqwire.common.pool import ConnectionPool
from mqwire.common.stats import ClientCounters
from tubemqwire.connection import TubeConnection

log = logging.getLogger(__name__)

Address = tuple[str, int]


class BrokerConnections:
    """``await brokers.call(address, service, method, request)`` over a pooled connection."""

    def __init__(
        self,
        *,
        ssl: _ssl.SSLContext | None,
        connect_timeout: float,
        request_timeout: float,
        idle_timeout: float | None = None,
        counters: ClientCounters | None = None,
    ) -> None:
        self._ssl = ssl
        self.counters = ClientCounters() if counters is None else counters
        self._connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._pool: ConnectionPool[Address, TubeConnection] = ConnectionPool(self._open, idle_timeout=idle_timeout)
        # The pool's connections, reachable without awaiting: the producer's hot path is callbacks only.
        self._ready: dict[Address, TubeConnection] = {}

    async def _open(self, address: Address) -> TubeConnection:
        connection = await TubeConnection.open(
            address,
            ssl=self._ssl,
            connect_timeout=self._connect_timeout,
            request_timeout=self.request_timeout,
            name=f"tubemq broker {address[0]}:{address[1]}",
        )
        self.counters.opened(address)
        log.info("connected to the TubeMQ broker at %s:%d", *address)
        return connection

    async def get(self, address: Address) -> TubeConnection:
        connection = await self._pool.get(address)
        previous = self._ready.get(address)
        if previous is not connection:
            if previous is not None and previous.channel.error is not None:
                # Counted when it is replaced: the pool learns of a dropped connection only then.
                self.counters.lost(previous.channel.error)
            self._ready[address] = connection
        return connection

    def __len__(self) -> int:
        """Connections open now."""
        return sum(1 for c in self._ready.values() if not c.closed)

    def ready(self, address: Address) -> TubeConnection | None:
        """The open connection to ``address`` if there is one, without waiting."""
        connection = self._ready.get(address)
        if connection is None or connection.closed:
            return None
        return connection

    async def call(
        self, address: Address, service_type: int, method: int, request: Message, *, timeout: float | None = None
    ) -> bytes:
        """One RPC to the broker at ``address``. A connection that dropped is replaced by the pool on the
        next call; one that merely timed out is kept, as other requests may still be answered on it."""
        connection = await self.get(address)
        return await connection.call(service_type, method, request, timeout=timeout)

    async def connect_all(self, addresses: Iterable[Address]) -> dict[Address, MqwireError]:
        """Open connections ahead of use; returns the addresses that failed and why."""
        wanted = sorted(set(addresses))
        results = await asyncio.gather(*(self.get(a) for a in wanted), return_exceptions=True)
        failed: dict[Address, MqwireError] = {}
        for address, result in zip(wanted, results, strict=True):
            if isinstance(result, MqwireError):
                failed[address] = result
            elif isinstance(result, BaseException):
                failed[address] = ConnectError(f"{address[0]}:{address[1]}: {result!r}")
        for address, error in failed.items():
            log.warning("TubeMQ broker %s:%d is not reachable yet: %s", address[0], address[1], error)
        return failed

    async def close(self) -> None:
        self._ready.clear()
        await self._pool.close()
