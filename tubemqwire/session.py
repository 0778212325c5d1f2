"""The session with one TubeMQ cluster: the master link, the broker connections, and what every producer
and consumer of a client shares (our address, timeouts, the user's credentials, the open children).

Producers and consumers work against a ``Session``; ``tubemqwire.Client`` is the public factory over it.
"""

from __future__ import annotations

import logging
import ssl as _ssl
from collections.abc import Iterable, Mapping

from mqwire.common.affinity import Affinity
from mqwire.common.errors import ClosedError
from mqwire.common.lifecycle import Children, Closable, Lifecycle
from mqwire.common.stats import ClientCounters, ClientStats, split_children
from mqwire.common.urls import parse_service_url
from tubemqwire import identity
from tubemqwire.auth import Credentials
from tubemqwire.brokers import BrokerConnections
from tubemqwire.master import MasterLink
from tubemqwire.member import Member
from tubemqwire.options import ClientConfig
from tubemqwire.protocol.constants import (
    DEFAULT_BROKER_PORT,
    DEFAULT_BROKER_TLS_PORT,
    DEFAULT_MASTER_PORT,
    DEFAULT_MASTER_TLS_PORT,
)

log = logging.getLogger(__name__)

SCHEMES = {"tubemq": DEFAULT_MASTER_PORT, "tubemq+ssl": DEFAULT_MASTER_TLS_PORT}


class Session:
    """Connections and settings shared by the producers and consumers of one client."""

    def __init__(self, url: str, config: ClientConfig) -> None:
        parsed = parse_service_url(url, schemes=SCHEMES)
        self.request_timeout = config.request_timeout
        self.connect_timeout = config.connect_timeout
        self.heartbeat_interval = config.heartbeat_interval
        self.username = config.username
        self._password = config.password
        ssl_context = config.ssl_context
        if parsed.tls and ssl_context is None:
            ssl_context = _ssl.create_default_context()
        # A blank port in the master's broker list means the broker's default one.
        self.default_broker_port = DEFAULT_BROKER_TLS_PORT if parsed.tls else DEFAULT_BROKER_PORT
        self.counters = ClientCounters()
        self.master = MasterLink(
            parsed.addresses, ssl=ssl_context, connect_timeout=self.connect_timeout,
            request_timeout=self.request_timeout, counters=self.counters,
        )
        self.brokers = BrokerConnections(
            ssl=ssl_context, connect_timeout=self.connect_timeout, request_timeout=self.request_timeout,
            counters=self.counters,
        )
        # The address masters and brokers see us at; producers and consumers report it.
        self.host = "127.0.0.1"
        self._children = Children()
        self.lifecycle = Lifecycle("TubeMQ client")
        # The process and event loop it belongs to, checked by the client, producers and consumers.
        self.affinity = Affinity("TubeMQ client")

    async def start(self) -> None:
        """Find our own address and check that some master accepts a connection (once)."""
        await self.lifecycle.start(self._start)

    async def _start(self) -> None:
        self.host = await identity.local_ipv4(self.master.current_address)
        await self.master.connect()

    async def close(self) -> None:
        """Close every producer and consumer of the session, then the connections."""
        await self.lifecycle.close(self._close)

    async def _close(self) -> None:
        await self._children.close_all()
        await self.brokers.close()
        await self.master.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self.lifecycle.closed

    def credentials(self) -> Credentials:
        """Fresh token state for one registration, with the session's user (if any)."""
        return Credentials(self.username, self._password)

    def member(
        self,
        client_id: str,
        topics: Iterable[str],
        credentials: Credentials,
        *,
        group: str = "",
        filters: Mapping[str, Iterable[str]] | None = None,
    ) -> Member:
        """Who a producer or consumer is to the master, with this session's address, heartbeat period,
        request timeout and default broker port."""
        return Member.of(
            client_id=client_id,
            host=self.host,
            topics=topics,
            credentials=credentials,
            interval=self.heartbeat_interval,
            request_timeout=self.request_timeout,
            default_broker_port=self.default_broker_port,
            group=group,
            filters=filters,
        )

    def adopt(self, child: Closable) -> None:
        """Close ``child`` with the session."""
        if self.lifecycle.closed:
            raise ClosedError("TubeMQ client is closed")
        self._children.adopt(child)

    def release(self, child: Closable) -> None:
        """``child`` closed by itself."""
        self._children.release(child)

    def stats(self) -> ClientStats:
        """Master and broker connections opened, lost and open now, with the stats of every producer and
        consumer open now."""
        producers, consumers = split_children(self._children)
        connections = len(self.brokers) + (1 if self.master.connected else 0)
        return self.counters.snapshot("tubemq", connections=connections, producers=producers, consumers=consumers)
