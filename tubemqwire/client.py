"""The public TubeMQ client: the master session, the broker connections, and the factories."""

from __future__ import annotations

import logging
import ssl as _ssl
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from mqwire.common.errors import ClosedError
from mqwire.common.options import check_positive, check_str
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
    HEARTBEAT_INTERVAL_MS,
)

if TYPE_CHECKING:
    from tubemqwire.client_balance import ClientBalanceConsumer
    from tubemqwire.consumer import Consumer
    from tubemqwire.producer import Producer

log = logging.getLogger(__name__)

SCHEMES = {"tubemq": DEFAULT_MASTER_PORT, "tubemq+ssl": DEFAULT_MASTER_TLS_PORT}
# The master drops a consumer after 30 s without a heartbeat; a slower period would churn the group.
_MAX_HEARTBEAT_INTERVAL_MS = 25_000


class _Closable(Protocol):
    async def close(self) -> None: ...


class Client:
    """A TubeMQ cluster reached through its masters. Use ``async with tubemqwire.connect(url) as client``.

    Options: ``request_timeout_ms`` (each RPC; also sent to the server, which drops requests that waited
    longer), ``connect_timeout_ms``, ``heartbeat_interval_ms`` (master and broker heartbeats of every
    producer and consumer, default 13000), ``username`` and ``password`` (when the cluster authenticates
    clients), ``ssl_context`` (``tubemq+ssl://`` makes a default one).
    """

    def __init__(
        self,
        url: str,
        *,
        request_timeout_ms: int = 10_000,
        connect_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        username: str | None = None,
        password: str | None = None,
        ssl_context: _ssl.SSLContext | None = None,
    ) -> None:
        self._url = parse_service_url(url, schemes=SCHEMES)
        self.request_timeout = check_positive("request_timeout_ms", request_timeout_ms) / 1000
        self.connect_timeout = check_positive("connect_timeout_ms", connect_timeout_ms) / 1000
        interval_ms = check_positive("heartbeat_interval_ms", heartbeat_interval_ms)
        if interval_ms > _MAX_HEARTBEAT_INTERVAL_MS:
            raise ValueError(
                f"option heartbeat_interval_ms must be at most {_MAX_HEARTBEAT_INTERVAL_MS}, "
                f"got {heartbeat_interval_ms}"
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
        if self._url.tls and ssl_context is None:
            ssl_context = _ssl.create_default_context()
        # A blank port in the master's broker list means the broker's default one.
        self.default_broker_port = DEFAULT_BROKER_TLS_PORT if self._url.tls else DEFAULT_BROKER_PORT
        self.master = MasterLink(
            self._url.addresses,
            ssl=ssl_context,
            connect_timeout=self.connect_timeout,
            request_timeout=self.request_timeout,
        )
        self.brokers = BrokerConnections(
            ssl=ssl_context, connect_timeout=self.connect_timeout, request_timeout=self.request_timeout
        )
        # The address masters and brokers see us at; producers and consumers report it.
        self.host = "127.0.0.1"
        self._children: set[_Closable] = set()
        self._started = False
        self._closed = False

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Find our own address and check that some master accepts a connection."""
        if self._closed:
            raise ClosedError("TubeMQ client is closed")
        if self._started:
            return
        self.host = await identity.local_ipv4(self.master.current_address)
        await self.master.connect()
        self._started = True

    async def close(self) -> None:
        """Close every producer and consumer made by this client, then the connections."""
        if self._closed:
            return
        self._closed = True
        children, self._children = list(self._children), set()
        for child in children:
            try:
                await child.close()
            except Exception:
                log.exception("closing %r failed", child)
        await self.brokers.close()
        await self.master.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def credentials(self) -> Credentials:
        """Fresh token state for one registration, with this client's user (if any)."""
        return Credentials(self.username, self._password)

    def _adopt(self, child: _Closable) -> None:
        if self._closed:
            raise ClosedError("TubeMQ client is closed")
        self._children.add(child)

    def _release(self, child: _Closable) -> None:
        self._children.discard(child)

    # ---------------------------------------------------------------------------------- factories
    def producer(self, topics: str | list[str] | tuple[str, ...], **options: Any) -> Producer:
        """A producer publishing ``topics`` (one name or several); use ``async with``."""
        from tubemqwire.producer import Producer

        producer = Producer(self, topics, **options)
        self._adopt(producer)
        return producer

    def consumer(self, topics: str | list[str] | tuple[str, ...], **options: Any) -> Consumer:
        """A consumer of ``topics`` in ``group``, balanced by the master; use ``async with``."""
        from tubemqwire.consumer import Consumer

        consumer = Consumer(self, topics, **options)
        self._adopt(consumer)
        return consumer

    def client_balance_consumer(
        self, topics: str | list[str] | tuple[str, ...], **options: Any
    ) -> ClientBalanceConsumer:
        """A consumer of ``topics`` in ``group`` that claims the partitions it is told to (``partitions``
        option, ``connect_partition``) rather than those the master assigns; use ``async with``."""
        from tubemqwire.client_balance import ClientBalanceConsumer

        consumer = ClientBalanceConsumer(self, topics, **options)
        self._adopt(consumer)
        return consumer


def connect(url: str, **options: Any) -> Client:
    """A client for the cluster at ``url`` (``tubemq://master1:port[,master2:port]`` or ``tubemq+ssl://``).

    Use it as ``async with connect(url) as client``; a master is contacted on entering.
    """
    return Client(url, **options)
