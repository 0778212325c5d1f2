"""The session with one Kafka cluster: bootstrap, metadata, a connection per broker, group and transaction
coordinators, and the producers, consumers and admins to close with it.

Producers, consumers and the admin client work through a ``Session``; the public ``Client`` is a thin factory
over one, so that nothing below the public surface imports ``client.py``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl as _ssl
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from kafkawire import errors
from kafkawire.connection import KafkaConnection
from kafkawire.metadata import BrokerNode, ClusterMetadata, RebootstrapTrigger
from kafkawire.protocol.messages import FindCoordinatorRequest, MetadataRequest, MetadataRequestTopic
from kafkawire.sasl import SaslSettings, kerberos_settings
from kafkawire.telemetry.measures import ClientMeasures
from kafkawire.telemetry.reporter import TelemetryReporter
from mqwire.common.affinity import Affinity
from mqwire.common.errors import (
    ClosedError,
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    MqwireError,
    RequestTimeoutError,
    RetriableError,
)
from mqwire.common.lifecycle import Children, Closable, Lifecycle
from mqwire.common.policy import AddressRotation, Backoff
from mqwire.common.pool import ConnectionPool
from mqwire.common.stats import ClientCounters, ClientStats, split_children
from mqwire.common.urls import parse_service_url

if TYPE_CHECKING:
    # Only an annotation here: kafkawire.options imports the modules that import this one.
    from kafkawire.options import ClientConfig

log = logging.getLogger(__name__)

T = TypeVar("T")
# A coordinator's answers that call for asking again (looking the coordinator up again after those marked
# ``refresh_coordinator``: moved or not available; a loading one is asked again as it is).
_COORDINATOR_MOVED_OR_LOADING = (
    errors.NotCoordinatorError,
    errors.CoordinatorNotAvailableError,
    errors.CoordinatorLoadInProgressError,
)

SCHEMES = {"kafka": 9092, "kafka+ssl": 9093}
FIND_COORDINATOR_KEY = 10
# FindCoordinator key types.
GROUP_COORDINATOR = 0
TRANSACTION_COORDINATOR = 1
# The metadata response's top-level error (v13+, KIP-1102) that asks the client to bootstrap again.
REBOOTSTRAP_REQUIRED = 129


class Session:
    """The connections to one Kafka cluster and what is known of it, shared by everything a client made."""

    def __init__(self, url: str, config: ClientConfig) -> None:
        self._url = parse_service_url(url, schemes=SCHEMES)
        self._sasl = (
            None
            if config.sasl_mechanism is None
            else SaslSettings(
                config.sasl_mechanism,
                config.sasl_plain_username,
                config.sasl_plain_password,
                config.sasl_oauth_token_provider,
                kerberos_settings(config),
            )
        )
        self.client_id = config.client_id
        self.request_timeout = config.request_timeout
        self.connect_timeout = config.connect_timeout
        self.metadata_max_age = config.metadata_max_age
        self.retry_backoff = config.retry_backoff
        self.retry_backoff_max = config.retry_backoff_max
        self.allow_auto_create_topics = config.allow_auto_create_topics
        ssl_context = config.ssl_context
        files = {
            "ssl_cafile": config.ssl_cafile, "ssl_certfile": config.ssl_certfile, "ssl_keyfile": config.ssl_keyfile
        }
        given = [name for name, value in files.items() if value is not None]
        if given and (ssl_context is not None or not self._url.tls):
            raise ConfigurationError(f"option {given[0]} needs a kafka+ssl:// URL and no ssl_context")
        if self._url.tls and ssl_context is None:
            # Certificates and host names are verified unless the application says otherwise.
            ssl_context = _ssl.create_default_context(cafile=config.ssl_cafile)
            ssl_context.check_hostname = config.ssl_check_hostname
            if not config.ssl_check_hostname:
                ssl_context.verify_mode = _ssl.CERT_REQUIRED
            if config.ssl_certfile is not None:
                ssl_context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile)
        self._ssl = ssl_context
        self.metadata = ClusterMetadata()
        self._bootstrap = AddressRotation(self._url.addresses)
        self._recovery = RebootstrapTrigger(
            config.metadata_recovery_strategy, config.metadata_recovery_rebootstrap_trigger
        )
        # Whether connections for metadata go to the bootstrap servers rather than the brokers the metadata
        # names: until the first answer, and again after a rebootstrap until the next one.
        self._bootstrapping = True
        # Rebootstraps since the client started.
        self.rebootstraps = 0
        self._pool: ConnectionPool[tuple[str, int], KafkaConnection] = ConnectionPool(self._open)
        # The pool's connections, to pick an already open one without waiting.
        self._opened: dict[tuple[str, int], KafkaConnection] = {}
        # Refreshes under way: the topics each one asks for (None: all) and the task doing it.
        self._refreshes: list[tuple[frozenset[str] | None, asyncio.Task[None]]] = []
        # Topics the producers and consumers of this client use; a background refresh keeps them current.
        self._tracked: dict[str, int] = {}
        self._refresher: asyncio.Task[None] | None = None
        self._coordinators: dict[tuple[int, str], BrokerNode] = {}
        self._children = Children()
        self.counters = ClientCounters()
        # Timings for client telemetry; the producers and consumers add to them per request.
        self.measures = ClientMeasures()
        self.telemetry = TelemetryReporter(
            self, enabled=config.enable_metrics_push
        )
        # Children are still closed (and request metadata) while the lifecycle is closing; this marks the end.
        self._closing = False
        self.lifecycle = Lifecycle("kafka client")
        # The process and event loop it belongs to, checked by the client, producers, consumers and admins.
        self.affinity = Affinity("kafka client")

    # ---------------------------------------------------------------------------------- lifecycle
    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self.lifecycle.closed

    async def start(self) -> None:
        """Connect to a bootstrap server and load the cluster metadata (once)."""
        await self.lifecycle.start(self._start)

    async def _start(self) -> None:
        await self.refresh_metadata([])
        self.telemetry.start(lambda coro: self.lifecycle.tasks.spawn(coro, name="client telemetry"))

    async def close(self) -> None:
        """Close the producers, consumers and admins made over this cluster (producers flush), then the
        connections; every background task has ended when it returns."""
        await self.lifecycle.close(self._close)

    async def _close(self) -> None:
        children = self.children()
        await self._children.close_all()
        # After the children closed (producers flushed), so that their last counts are in it.
        await self.telemetry.close(children)
        self._closing = True
        loading = [task for _, task in self._refreshes]
        for task in loading:
            task.cancel()
        await asyncio.gather(*loading, return_exceptions=True)
        await self.lifecycle.tasks.cancel_all()
        await self._pool.close()

    def new_backoff(self) -> Backoff:
        """A backoff with the client's ``retry_backoff_ms`` / ``retry_backoff_max_ms``."""
        return Backoff(initial=self.retry_backoff, maximum=self.retry_backoff_max)

    def _check_open(self) -> None:
        if self._closing:
            raise ClosedError("client is closed")

    def adopt(self, child: Closable) -> None:
        """Remember a producer, consumer or admin so that closing the client closes it too."""
        self.lifecycle.check_open()
        self._children.adopt(child)

    def release(self, child: Closable) -> None:
        """Forget a child that closed by itself."""
        self._children.release(child)
        self.telemetry.retire(child)

    def children(self) -> list[object]:
        """The producers, consumers and admins open now."""
        return list(self._children)

    @property
    def connects(self) -> int:
        """Connections opened since the client started."""
        return self.counters.connects

    def stats(self) -> ClientStats:
        """Connections opened, lost and open now, and the stats of every producer and consumer open now."""
        producers, consumers = split_children(self._children)
        connections = sum(1 for c in self._opened.values() if not c.closed)
        return self.counters.snapshot("kafka", connections=connections, producers=producers, consumers=consumers)

    # ------------------------------------------------------------------------------- connections
    async def _open(self, address: tuple[str, int]) -> KafkaConnection:
        connection = await KafkaConnection.open(
            address,
            client_id=self.client_id,
            ssl=self._ssl,
            connect_timeout=self.connect_timeout,
            request_timeout=self.request_timeout,
            sasl=self._sasl,
        )
        self._opened[address] = connection
        self.counters.opened(address)
        log.info("connected to %s:%d", *address)
        return connection

    async def connection(self, node_id: int) -> KafkaConnection:
        """The connection to broker ``node_id`` (refreshing metadata once if the node is unknown)."""
        self._check_open()
        node = self.metadata.brokers.get(node_id)
        if node is None:
            await self.refresh_metadata([])
            node = self.metadata.brokers.get(node_id)
            if node is None:
                raise errors.BrokerNotAvailableError(f"broker {node_id} is not in the cluster metadata")
        return await self._pool.get(node.address)

    async def connection_to(self, node: BrokerNode) -> KafkaConnection:
        """The pooled connection to ``node``."""
        self._check_open()
        return await self._pool.get(node.address)

    async def dedicated_connection(self, node: BrokerNode) -> KafkaConnection:
        """A connection to ``node`` of the caller's own, outside the pool; the caller closes it.

        For requests the broker may hold for long (JoinGroup waits for the whole rebalance): a broker
        answers one request per connection at a time, so they must not share one with fetches.
        """
        self._check_open()
        return await KafkaConnection.open(
            node.address,
            client_id=self.client_id,
            ssl=self._ssl,
            connect_timeout=self.connect_timeout,
            request_timeout=self.request_timeout,
            sasl=self._sasl,
        )

    def discard(self, connection: KafkaConnection, error: BaseException | None = None) -> None:
        """Drop a connection after it failed, so that the next request opens a fresh one.

        A request that timed out leaves the connection in doubt (responses arrive in order), so it goes too.
        """
        if error is None or isinstance(error, ConnectionLostError | RequestTimeoutError | ConnectError):
            # What else waits on this connection fails as lost (retriable), not as closed by the application.
            connection.close(ConnectionLostError(f"{connection.address[0]}:{connection.address[1]}: dropped ({error})"))
            # Only this connection goes: the pool may already hold a fresh one to the same broker, with
            # other requests on it, when a request on an older connection fails late.
            if self._opened.get(connection.address) is connection:
                self.counters.lost(error)
                log.info("connection to %s:%d dropped: %s", *connection.address, error)
                self._pool.discard(connection.address)

    async def request(self, node_id: int, body: Any, *, timeout: float | None = None) -> Any:
        """Send ``body`` to broker ``node_id``; a dropped connection is discarded so the next call reconnects."""
        connection = await self.connection(node_id)
        try:
            return await connection.request(body, timeout=timeout)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.discard(connection, exc)
            raise

    async def any_connection(self) -> KafkaConnection:
        """A connection to some broker: preferably an open one with the fewest requests in flight.

        Once metadata has named the cluster's brokers only they are tried; when none of them can be connected
        to, the client bootstraps again (``metadata_recovery_strategy="rebootstrap"``) or fails.
        """
        self._check_open()
        tried: list[tuple[str, int]] = []
        error: ConnectError | None = None
        if not self._bootstrapping and self.metadata.brokers:
            open_connections = [
                connection
                for node in self.metadata.brokers.values()
                if (connection := self._pool_peek(node.address)) is not None
            ]
            if open_connections:
                return min(open_connections, key=lambda c: c.in_flight)
            known = tried = [node.address for node in self.metadata.brokers.values()]
            connection, error = await self._first_reachable(known)
            if connection is not None:
                return connection
            now = asyncio.get_running_loop().time()
            if not self._recovery.due(now, none_reachable=True):
                raise ConnectError(f"no Kafka broker reachable at {_listed(known)}: {error}")
            # Concurrent callers find the same dead brokers: the first one rebootstraps, the others follow it
            # (a second rebootstrap would drop the bootstrap connection the first has just opened).
            if not self._bootstrapping:
                self._rebootstrap(now, f"no known broker reachable ({error})")
        addresses = await self._resolve_bootstrap()
        # A bootstrap address that was a known broker's has just refused: not tried twice in one call.
        untried = [address for address in addresses if address not in tried]
        connection, error = await self._first_reachable(untried) if untried else (None, error)
        if connection is not None:
            return connection
        raise ConnectError(f"no Kafka broker reachable at {_listed(untried or addresses)}: {error}")

    async def _first_reachable(
        self, addresses: list[tuple[str, int]]
    ) -> tuple[KafkaConnection | None, ConnectError | None]:
        last_error: ConnectError | None = None
        for address in addresses:
            try:
                return await self._pool.get(address), None
            except ConnectError as exc:
                last_error = exc
        return None, last_error

    async def _resolve_bootstrap(self) -> list[tuple[str, int]]:
        """The bootstrap addresses whose names resolve now (looked up again each time, never cached), in
        rotation order; a typed error naming every one that failed when none does."""
        order = []
        for _ in range(len(self._bootstrap)):
            order.append(self._bootstrap.current())
            self._bootstrap.advance()
        # Looked up together, so that resolvers that never answer hold the client one request timeout at most.
        failures = await asyncio.gather(*(self._lookup(host, port) for host, port in order))
        resolved = [address for address, failure in zip(order, failures, strict=True) if failure is None]
        if not resolved:
            raise ConnectError(f"bootstrap server name does not resolve: {'; '.join(filter(None, failures))}")
        return resolved

    async def _lookup(self, host: str, port: int) -> str | None:
        """None when ``host`` resolves, else what failed, naming it."""
        try:
            async with asyncio.timeout(self.request_timeout):
                await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError:
            return f"{host}:{port} (name lookup timed out after {self.request_timeout:g} s)"
        except OSError as exc:
            return f"{host}:{port} ({exc.strerror or exc})"
        return None

    def _rebootstrap(self, now: float, reason: str) -> None:
        """Send the next metadata requests to the bootstrap servers, on fresh connections (their names are
        looked up again), until one answers."""
        self._recovery.rebootstrapped(now)
        self._bootstrapping = True
        self.rebootstraps += 1
        # The coordinators found on the old brokers are looked up again on whatever answers now.
        self._coordinators.clear()
        known = {node.address for node in self.metadata.brokers.values()}
        for address in self._bootstrap.addresses:
            # A bootstrap address that is also a known broker's stays: producers and consumers may use it.
            if address not in known:
                self._pool.discard(address)
        log.warning("bootstrapping again from %s: %s", _listed(self._bootstrap.addresses), reason)

    def _pool_peek(self, address: tuple[str, int]) -> KafkaConnection | None:
        connection = self._opened.get(address)
        if connection is not None and connection.closed:
            del self._opened[address]
            return None
        return connection

    async def request_any(self, body: Any, *, timeout: float | None = None) -> Any:
        """Send ``body`` to some broker (requests any broker can answer: Metadata, InitProducerId, ...)."""
        connection = await self.any_connection()
        try:
            return await connection.request(body, timeout=timeout)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.discard(connection, exc)
            raise

    # ---------------------------------------------------------------------------------- metadata
    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Reload metadata for ``topics`` (None: every topic; []: brokers only).

        A refresh already under way that covers the same topics is shared rather than repeated.
        """
        self._check_open()
        wanted = None if topics is None else frozenset(topics)
        for covered, task in self._refreshes:
            if covered is None or (wanted is not None and wanted <= covered):
                await asyncio.shield(task)
                return self.metadata
        # Its failure belongs to the callers awaiting it; close cancels it with the others.
        loading = self._load_metadata(None if wanted is None else sorted(wanted))
        task = self.lifecycle.tasks.spawn(loading, name="metadata", awaited=True)
        entry = (wanted, task)
        self._refreshes.append(entry)
        task.add_done_callback(lambda _t: self._refreshes.remove(entry) if entry in self._refreshes else None)
        await asyncio.shield(task)
        return self.metadata

    def request_update(self, topics: Iterable[str] | None = None) -> None:
        """Start a metadata refresh in the background (after a leader moved); failures are only logged."""
        if self._closing:
            return
        self.lifecycle.tasks.spawn(self._refresh_quietly(topics), name="metadata update")

    async def _refresh_quietly(self, topics: Iterable[str] | None) -> None:
        try:
            await self.refresh_metadata(topics)
        except MqwireError as exc:
            log.debug("background metadata refresh failed: %s", exc)

    async def _load_metadata(self, topics: list[str] | None) -> None:
        body = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_create_topics,
        )
        backoff = self.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout
        while True:
            now = loop.time()
            self._recovery.attempting(now)
            if not self._bootstrapping and self._recovery.due(now):
                self._rebootstrap(now, f"no metadata from the known brokers for {self._recovery.trigger:g} s")
            connection = await self.any_connection()
            try:
                response = await connection.request(body)
            except RetriableError as exc:
                self.discard(connection, exc)
                if loop.time() > deadline:
                    raise
                log.debug("metadata request failed (%s); retrying", exc)
                await asyncio.sleep(backoff.next_delay())
                continue
            if getattr(response, "error_code", 0) == REBOOTSTRAP_REQUIRED:
                # The answer names no brokers: it must not replace what is known.
                self._recovery.require()
                if self._recovery.strategy == "none" or loop.time() > deadline:
                    raise errors.error_for(REBOOTSTRAP_REQUIRED, f"metadata from {_listed([connection.address])}")
                self._rebootstrap(loop.time(), "a broker answered REBOOTSTRAP_REQUIRED")
                await asyncio.sleep(backoff.next_delay())
                continue
            break
        self.metadata.update(response, requested=topics)
        self._recovery.answered()
        self._bootstrapping = False

    def track(self, topics: Iterable[str]) -> None:
        """Keep ``topics`` in the periodic refresh (every ``metadata_max_age_ms``) until ``untrack``."""
        for topic in topics:
            self._tracked[topic] = self._tracked.get(topic, 0) + 1
        if self._refresher is None and not self._closing:
            self._refresher = self.lifecycle.tasks.spawn(self._refresh_periodically(), name="metadata refresh")

    def untrack(self, topics: Iterable[str]) -> None:
        """Stop refreshing ``topics`` once every ``track`` of them is undone."""
        for topic in topics:
            count = self._tracked.get(topic, 0) - 1
            if count <= 0:
                self._tracked.pop(topic, None)
            else:
                self._tracked[topic] = count

    async def _refresh_periodically(self) -> None:
        while not self._closing:
            await asyncio.sleep(self.metadata_max_age)
            if self._tracked:
                try:
                    await self.refresh_metadata(list(self._tracked))
                except MqwireError as exc:
                    log.warning("periodic metadata refresh failed: %s", exc)

    async def partitions_for(self, topic: str, *, timeout: float | None = None) -> list[int]:
        """The partition ids of ``topic``, waiting (bounded) while a new topic gets its leaders."""
        backoff = self.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.request_timeout if timeout is None else timeout)
        while True:
            await self.refresh_metadata([topic])
            partitions = self.metadata.partitions(topic)
            leaders = self.metadata.leaders.get(topic, {})
            if partitions and all(leader >= 0 for leader in leaders.values()):
                return partitions
            code = self.metadata.topic_errors.get(topic)
            if code is not None:
                error = errors.error_for(code, f"topic {topic!r}")
                if not error.retriable:
                    raise error
            if loop.time() > deadline:
                if code is not None:
                    raise errors.error_for(code, f"topic {topic!r}")
                raise errors.LeaderNotAvailableError(f"topic {topic!r} has partitions without a leader")
            await asyncio.sleep(backoff.next_delay())

    def leader_for(self, topic: str, partition: int) -> BrokerNode | None:
        """The leader of the partition as far as the metadata knows."""
        return self.metadata.leader(topic, partition)

    # ------------------------------------------------------------------------------ coordinators
    async def coordinator(self, key: str, key_type: int = GROUP_COORDINATOR) -> BrokerNode:
        """The broker coordinating group ``key`` (or transactional id, ``key_type=1``), looked up once."""
        node = self._coordinators.get((key_type, key))
        if node is not None:
            return node
        backoff = self.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout
        while True:
            try:
                node = await self._find_coordinator(key, key_type)
                self._coordinators[(key_type, key)] = node
                return node
            except RetriableError as exc:
                if loop.time() > deadline:
                    raise
                log.debug("coordinator lookup for %r failed (%s); retrying", key, exc)
                await asyncio.sleep(backoff.next_delay())

    async def _find_coordinator(self, key: str, key_type: int) -> BrokerNode:
        connection = await self.any_connection()
        version = connection.version_for(FIND_COORDINATOR_KEY)
        body = FindCoordinatorRequest(key=key, key_type=key_type, coordinator_keys=[key])
        try:
            response = await connection.request(body, version=version)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.discard(connection, exc)
            raise
        if version >= 4:
            found = next((c for c in response.coordinators if c.key == key), None)
            if found is None:
                raise errors.CoordinatorNotAvailableError(f"no coordinator returned for {key!r}")
            code, message, node_id, host, port = (
                found.error_code, found.error_message, found.node_id, found.host, found.port
            )
        else:
            code, message = response.error_code, getattr(response, "error_message", None)
            node_id, host, port = response.node_id, response.host, response.port
        if code:
            raise errors.error_for(code, message or f"coordinator for {key!r}")
        return BrokerNode(node_id, host, port)

    def forget_coordinator(self, key: str, key_type: int = GROUP_COORDINATOR) -> None:
        """Look the coordinator up again next time (after NOT_COORDINATOR or a lost connection)."""
        self._coordinators.pop((key_type, key), None)

    async def with_coordinator(
        self, key: str, attempt: Callable[[], Awaitable[T]], *, key_type: int = GROUP_COORDINATOR
    ) -> T:
        """Run ``attempt`` (a request to the coordinator of ``key`` and the reading of its answer), and again
        while the answer says that the coordinator moved, is loading or is not available, until the request
        timeout: right after a broker starts, or when a coordinator moves, the first answer is often such."""
        backoff = self.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout
        while True:
            try:
                return await attempt()
            except _COORDINATOR_MOVED_OR_LOADING as exc:
                if exc.refresh_coordinator:
                    self.forget_coordinator(key, key_type)
                if loop.time() > deadline:
                    raise
                log.debug("coordinator of %r answered %s; asking again", key, exc)
                await asyncio.sleep(backoff.next_delay())

    async def request_coordinator(
        self, key: str, body: Any, *, key_type: int = GROUP_COORDINATOR, timeout: float | None = None
    ) -> Any:
        """Send ``body`` to the coordinator of ``key``; a failed connection forgets the coordinator."""
        node = await self.coordinator(key, key_type)
        try:
            connection = await self.connection_to(node)
            return await connection.request(body, timeout=timeout)
        except (ConnectError, ConnectionLostError, RequestTimeoutError) as exc:
            self.forget_coordinator(key, key_type)
            self._pool.discard(node.address)
            raise exc


def _listed(addresses: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{host}:{port}" for host, port in addresses)
