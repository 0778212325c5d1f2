"""The session under a client: options, connections per broker, lookups, ids, retries, and what it made.

Producers, consumers and readers use the session; ``pulsarwire.Client`` is the thin public factory over it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl as _ssl
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mqwire.common.affinity import Affinity
from mqwire.common.errors import AuthenticationError, ConfigurationError, ConnectError, RetriableError
from mqwire.common.lifecycle import Children, Closable, Lifecycle
from mqwire.common.policy import AddressRotation, Backoff
from mqwire.common.pool import ConnectionPool
from mqwire.common.stats import ClientCounters, ClientStats, split_children
from mqwire.common.transport import Address
from mqwire.common.urls import parse_service_url
from pulsarwire.admin import check_admin_url
from pulsarwire.connection import PulsarConnection
from pulsarwire.lookup import SCHEMES, BrokerAddress, Lookup
from pulsarwire.memory_budget import MemoryBudget
from pulsarwire.options import ClientConfig
from pulsarwire.tls import tls_context

log = logging.getLogger(__name__)

T = TypeVar("T")

class Session:
    """One cluster's connections, lookups and retry policy, and the producers, consumers and readers made on it.

    Built by ``pulsarwire.Client`` (see there for the options); closing it closes what it made.
    """

    def __init__(self, url: str, config: ClientConfig) -> None:
        self._url = parse_service_url(url, schemes=SCHEMES)
        self.service_url = url
        self.operation_timeout = config.operation_timeout
        self.connect_timeout = config.connect_timeout
        self.keepalive_interval = config.keepalive_interval
        self.max_lookup_redirects = config.max_lookup_redirects
        self.max_message_size = config.max_message_size
        # Received messages waiting in the receiver queues of all this client's consumers and readers.
        self.memory = MemoryBudget(config.memory_limit_bytes)
        self.initial_backoff_interval = config.initial_backoff_interval
        self.max_backoff_interval = config.max_backoff_interval
        self.listener_name = config.listener_name
        self._auth_data: bytes | None = None
        self._auth_token_callback: Callable[[], Awaitable[str]] | None = None
        auth_token = config.auth_token
        if callable(auth_token):
            self._auth_token_callback = auth_token
        elif auth_token is not None:
            self._auth_data = auth_token.encode()
        # The client certificate of the TLS handshake is the credential; the CONNECT only names the method.
        self._auth_method: str | None = "tls" if config.tls_authentication else None
        ssl_context = config.ssl_context
        if self._auth_method is not None:
            if not self._url.tls or (config.tls_cert_file is None and ssl_context is None):
                raise ConfigurationError(
                    "option tls_authentication needs a pulsar+ssl:// URL and option tls_cert_file"
                )
            self._auth_data = b""
        self.client_version = config.client_version
        self.admin_url = config.admin_url
        self.admin_timeout = config.admin_timeout
        self.admin_allow_insecure_http = config.admin_allow_insecure_http
        if self.admin_url is not None:
            self.check_admin_url(self.admin_url, self.admin_allow_insecure_http)
        if ssl_context is not None and not self._url.tls:
            # Ignoring it would connect in clear where TLS was asked for.
            raise ConfigurationError("option ssl_context needs a pulsar+ssl:// URL (the URL is pulsar://)")
        tls_files = (config.tls_ca_file, config.tls_cert_file, config.tls_key_file)
        if self._url.tls and ssl_context is None:
            ssl_context = tls_context(
                ca_file=config.tls_ca_file,
                cert_file=config.tls_cert_file,
                key_file=config.tls_key_file,
                validate_hostname=config.tls_validate_hostname,
                allow_insecure=config.tls_allow_insecure_connection,
            )
        elif not self._url.tls and any(f is not None for f in tls_files):
            raise ConfigurationError("options tls_ca_file, tls_cert_file and tls_key_file need a pulsar+ssl:// URL")
        self._ssl = ssl_context if self._url.tls else None
        self._service = AddressRotation(self._url.addresses)
        self._pool: ConnectionPool[tuple[str, Address], PulsarConnection] = ConnectionPool(self._open)
        self.lookup = Lookup(
            self._connection,
            self._service_address,
            tls=self._url.tls,
            timeout=self.operation_timeout,
            max_redirects=self.max_lookup_redirects,
            listener_name=self.listener_name,
        )
        self._producer_ids = itertools.count()
        self._consumer_ids = itertools.count()
        self._children = Children()
        self.counters = ClientCounters()
        self._life = Lifecycle("Pulsar client")
        # The process and event loop it belongs to, checked by the client, producers, consumers and readers.
        self.affinity = Affinity("Pulsar client")

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Connect to the service URL, so that a wrong address fails here rather than at first use."""
        await self._life.start(self._connect_service)

    async def _connect_service(self) -> None:
        await self.retrying(self.service_connection, "connect to the service URL")

    async def close(self) -> None:
        """Close every producer (after it flushed), consumer and reader made on this session, then the connections."""
        await self._life.close(self._close_all)

    async def _close_all(self) -> None:
        await self._children.close_all()
        await self._pool.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._life.closed

    def check_open(self) -> None:
        """Raise ClosedError once ``close`` has begun."""
        self._life.check_open()

    def adopt(self, child: Closable) -> None:
        """Remember a producer, consumer or reader so that closing the client closes it too."""
        self.check_open()
        self._children.adopt(child)

    def release(self, child: Closable) -> None:
        """Forget a producer, consumer or reader that closed on its own."""
        self._children.release(child)

    # -------------------------------------------------------------------------------- connections
    def next_producer_id(self) -> int:
        """A producer id unique on this session's connections."""
        return next(self._producer_ids)

    def next_consumer_id(self) -> int:
        """A consumer id unique on this session's connections."""
        return next(self._consumer_ids)

    def new_backoff(self) -> Backoff:
        """The reconnection delays configured for the session."""
        return Backoff(initial=self.initial_backoff_interval, maximum=self.max_backoff_interval)

    def _service_address(self) -> BrokerAddress:
        host, port = address = self._service.current()
        return BrokerAddress(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", address)

    async def _token(self) -> bytes:
        """The token from the callback given as ``auth_token`` (asked for each connection and challenge)."""
        assert self._auth_token_callback is not None
        token = await self._auth_token_callback()
        if not isinstance(token, str) or not token:
            # The type only: what came back may be the token itself (bytes of it, say).
            what = "an empty str" if isinstance(token, str) else type(token).__name__
            raise AuthenticationError(f"the auth_token callback must return a non-empty str, not {what}")
        return token.encode()

    async def auth_token(self) -> str | None:
        """The token to present to the admin API (asked of the callback each time), or None."""
        if self._auth_token_callback is not None:
            return (await self._token()).decode()
        if self._auth_method is not None:
            return None  # TLS authentication: the admin API gets the certificate from the TLS context
        return None if self._auth_data is None else self._auth_data.decode()

    def check_admin_url(self, admin_url: str, allow_insecure_http: bool) -> None:
        """Refuse an ``http://`` admin URL that would carry the token in clear while the brokers use TLS."""
        token = self._auth_token_callback is not None or (self._auth_data is not None and self._auth_method is None)
        check_admin_url(
            admin_url, brokers_tls=self._url.tls, sends_token=token, allow_insecure_http=allow_insecure_http
        )

    @property
    def ssl(self) -> _ssl.SSLContext | None:
        """The TLS context of ``pulsar+ssl://`` connections (None for plain ones)."""
        return self._ssl

    async def _open(self, key: tuple[str, Address]) -> PulsarConnection:
        logical, physical = key
        address = BrokerAddress(logical, physical)
        auth_data = self._auth_data
        refresh = None
        if self._auth_token_callback is not None:
            auth_data, refresh = await self._token(), self._token
        connection = await PulsarConnection.open(
            physical,
            ssl=self._ssl,
            connect_timeout=self.connect_timeout,
            keepalive_interval=self.keepalive_interval,
            client_version=self.client_version,
            auth_method=None if auth_data is None else self._auth_method or "token",
            auth_data=auth_data,
            auth_refresh=refresh,
            proxy_to_broker_url=logical if address.proxied else None,
            max_message_size=self.max_message_size,
        )
        self.counters.opened(key)
        log.info("connected to %s", connection.name)
        self._life.tasks.spawn(self._watch(connection), name=f"watch {connection.name}")
        return connection

    async def _watch(self, connection: PulsarConnection) -> None:
        """Count (and log) a connection that closes on an error while the session is open."""
        await connection.wait_closed()
        error = connection.channel.error
        if error is not None and not self.closed:
            self.counters.lost(error)
            log.info("connection %s lost: %s", connection.name, error)

    def stats(self) -> ClientStats:
        """Connections opened, lost and open now, and the stats of every producer and consumer open now."""
        producers, consumers = split_children(self._children)
        return self.counters.snapshot("pulsar", connections=len(self._pool), producers=producers, consumers=consumers)

    async def _connection(self, address: BrokerAddress) -> PulsarConnection:
        self.check_open()
        try:
            return await self._pool.get((address.logical, address.physical))
        except ConnectError:
            if address.physical == self._service.current():
                # The next attempt tries the next host of the service URL.
                self._service.advance()
            raise

    async def service_connection(self) -> PulsarConnection:
        """A connection to the broker (or proxy) at the service URL."""
        return await self._connection(self._service_address())

    async def connection_for(self, topic: str) -> PulsarConnection:
        """A connection to the broker serving ``topic`` (a complete topic or partition name)."""
        address = await self.lookup.find_broker(topic)
        return await self._connection(address)

    async def partitions_for(self, topic: str) -> int:
        """The partition count of ``topic`` (0 when it has none), retrying within ``operation_timeout``."""
        return await self.retrying(lambda: self.lookup.partitions(topic), f"partition metadata of {topic}")

    async def retrying(self, operation: Callable[[], Awaitable[T]], what: str) -> T:
        """Run ``operation`` until it succeeds, a fatal error, or ``operation_timeout`` runs out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.operation_timeout
        backoff = Backoff(initial=self.initial_backoff_interval, maximum=min(self.max_backoff_interval, 5.0))
        while True:
            self.check_open()
            try:
                return await operation()
            except RetriableError as exc:
                delay = backoff.next_delay()
                if loop.time() + delay >= deadline:
                    raise
                log.debug("%s failed (%s); retrying in %.2f s", what, exc, delay)
                await asyncio.sleep(delay)
