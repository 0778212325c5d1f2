"""The session with one TubeMQ cluster: the master link, the broker connections, and what every producer
and consumer of a client shares (our address, timeouts, the user's credentials, the open children).

Producers and consumers work against a ``Session``; ``tubemqwire.Client`` is the public factory over it.
"""

from __future__ import annotations

import logging
import ssl as _ssl

from mqwire.common.affinity import Affinity
from mqwire.common.errors import ClosedError
from mqwire.common.lifecycle import Children, Closable, Lifecycle
from mqwire.common.options import check_positive, check_str
from mqwire.common.stats import ClientCounters, ClientStats, split_children
from mqwire.common.urls import parse_service_url
from tubemqwire import identity
from tubemqwire.auth import Credentials
from tubemqwire.brokers import BrokerConnections
from tubemqwire.master import MasterLink
from tubemqwire.protocol.constants import (
    DEFAULT_BROKER_PORT,
    DEFAULT_BROKER_TLS_PORT,
    DEFAULT_MASTER_PORT,
    DEFAULT_MASTER_TLS_PORT,
)

log = logging.getLogger(__name__)

SCHEMES = {"tubemq": DEFAULT_MASTER_PORT, "tubemq+ssl": DEFAULT_MASTER_TLS_PORT}
# The master drops a consumer after 30 s without a heartbeat; a slower period would churn the group.
MAX_HEARTBEAT_INTERVAL_MS = 25_000




class Session:
    """Connections and settings shared by the producers and consumers of one client."""

    def __init__(
        self,
        url: str,
        *,
        request_timeout_ms: int,
        connect_timeout_ms: int,
        heartbeat_interval_ms: int,
        username: str | None,
        password: str | None,
        ssl_context: _ssl.SSLContext | None,
    ) -> None:
        parsed = parse_service_url(url, schemes=SCHEMES)
        self.request_timeout = check_positive("request_timeout_ms", request_timeout_ms) / 1000
        self.connect_timeout = check_positive("connect_timeout_ms", connect_timeout_ms) / 1000
        interval_ms = check_positive("heartbeat_interval_ms", heartbeat_interval_ms)
        if interval_ms > MAX_HEARTBEAT_INTERVAL_MS:
            raise ValueError(
                f"option heartbeat_interval_ms must be at most {MAX_HEARTBEAT_INTERVAL_MS}, got {heartbeat_interval_ms}"
            )
        self.heartbeat_interval = interval_ms / 1000
        if username is not None and not check_str("username", username).strip():
            raise ValueError("option username must not be blank")
        if password is not None:
            check_str("password", password)
            if username is None:
                raise ValueError("option password needs option username")
        self.username = username
        self._password = password
        if ssl_context is not None and not isinstance(ssl_context, _ssl.SSLContext):
            raise TypeError(f"option ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}")
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
