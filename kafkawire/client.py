"""The public Kafka client: bootstrap, cluster metadata, connections per broker, and the factories."""

from __future__ import annotations

import asyncio
import logging
import ssl as _ssl
from types import TracebackType
from typing import Any

from common.errors import ClosedError, ConfigurationError, ConnectError, ConnectionLostError, RetriableError
from common.options import check_bool, check_positive, check_str
from common.policy import AddressRotation, Backoff
from common.pool import ConnectionPool
from common.urls import parse_service_url
from kafkawire import errors
from kafkawire.connection import KafkaConnection
from kafkawire.metadata import BrokerNode, ClusterMetadata
from kafkawire.protocol.messages import MetadataRequest, MetadataRequestTopic

log = logging.getLogger(__name__)

SCHEMES = {"kafka": 9092, "kafka+ssl": 9093}


class Client:
    """A Kafka cluster. Use ``async with kafkawire.connect(url) as client``."""

    def __init__(
        self,
        url: str,
        *,
        client_id: str = "mqwire",
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        metadata_max_age_ms: int = 300_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        allow_auto_create_topics: bool = True,
        ssl_context: _ssl.SSLContext | None = None,
    ) -> None:
        self._url = parse_service_url(url, schemes=SCHEMES)
        self.client_id = check_str("client_id", client_id)
        self.request_timeout = check_positive("request_timeout_ms", request_timeout_ms) / 1000
        self.connect_timeout = check_positive("connect_timeout_ms", connect_timeout_ms) / 1000
        self.metadata_max_age = check_positive("metadata_max_age_ms", metadata_max_age_ms) / 1000
        self.retry_backoff = check_positive("retry_backoff_ms", retry_backoff_ms) / 1000
        self.retry_backoff_max = check_positive("retry_backoff_max_ms", retry_backoff_max_ms) / 1000
        self.allow_auto_create_topics = check_bool("allow_auto_create_topics", allow_auto_create_topics)
        if ssl_context is not None and not isinstance(ssl_context, _ssl.SSLContext):
            raise TypeError("ssl_context must be an ssl.SSLContext")
        if self._url.tls and ssl_context is None:
            ssl_context = _ssl.create_default_context()
        self._ssl = ssl_context
        self.metadata = ClusterMetadata()
        self._bootstrap = AddressRotation(self._url.addresses)
        self._pool: ConnectionPool[tuple[str, int], KafkaConnection] = ConnectionPool(self._open)
        self._refreshing: asyncio.Future[None] | None = None
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
        """Connect to a bootstrap server and load the cluster metadata."""
        await self.refresh_metadata([])

    async def close(self) -> None:
        self._closed = True
        await self._pool.close()

    def new_backoff(self) -> Backoff:
        return Backoff(initial=self.retry_backoff, maximum=self.retry_backoff_max)

    # ------------------------------------------------------------------------------- connections
    async def _open(self, address: tuple[str, int]) -> KafkaConnection:
        return await KafkaConnection.open(
            address,
            client_id=self.client_id,
            ssl=self._ssl,
            connect_timeout=self.connect_timeout,
            request_timeout=self.request_timeout,
        )

    async def connection(self, node_id: int) -> KafkaConnection:
        """The connection to broker ``node_id`` (refreshing metadata once if the node is unknown)."""
        node = self.metadata.brokers.get(node_id)
        if node is None:
            await self.refresh_metadata()
            node = self.metadata.brokers.get(node_id)
            if node is None:
                raise errors.BrokerNotAvailableError(f"broker {node_id} is not in the cluster metadata")
        return await self._pool.get(node.address)

    async def request(self, node_id: int, body: Any, *, timeout: float | None = None) -> Any:
        """Send ``body`` to broker ``node_id``; a dropped connection is discarded so the next call reconnects."""
        connection = await self.connection(node_id)
        try:
            return await connection.request(body, timeout=timeout)
        except ConnectionLostError:
            self._pool.discard(self.metadata.brokers[node_id].address)
            raise

    async def any_connection(self) -> KafkaConnection:
        """A connection to some broker: a known one, else a bootstrap address."""
        if self._closed:
            raise ClosedError("client is closed")
        candidates: list[tuple[str, int]] = [node.address for node in self.metadata.brokers.values()]
        for _ in range(len(self._bootstrap)):
            candidates.append(self._bootstrap.current())
            self._bootstrap.advance()
        last_error: Exception | None = None
        for address in candidates:
            try:
                return await self._pool.get(address)
            except ConnectError as exc:
                last_error = exc
        raise ConnectError(f"no Kafka broker reachable at {', '.join(f'{h}:{p}' for h, p in candidates)}: "
                           f"{last_error}")

    # ---------------------------------------------------------------------------------- metadata
    async def refresh_metadata(self, topics: list[str] | None = None) -> ClusterMetadata:
        """Reload metadata for ``topics`` (None: every topic; []: brokers only). Concurrent calls share one."""
        if self._refreshing is not None and topics is None:
            await asyncio.shield(self._refreshing)
            return self.metadata
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if topics is None:
            self._refreshing = future
        try:
            await self._load_metadata(topics)
            future.set_result(None)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # marked retrieved: the caller below re-raises it
            raise
        finally:
            if self._refreshing is future:
                self._refreshing = None
        return self.metadata

    async def _load_metadata(self, topics: list[str] | None) -> None:
        body = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_create_topics,
        )
        backoff = self.new_backoff()
        deadline = asyncio.get_running_loop().time() + self.request_timeout
        while True:
            connection = await self.any_connection()
            try:
                response = await connection.request(body)
                break
            except RetriableError as exc:
                self._pool.discard(connection.address)
                if asyncio.get_running_loop().time() > deadline:
                    raise
                log.debug("metadata request failed (%s); retrying", exc)
                await asyncio.sleep(backoff.next_delay())
        self.metadata.update(response, requested=topics)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic``, waiting (bounded) while a new topic gets its leaders."""
        backoff = self.new_backoff()
        deadline = asyncio.get_running_loop().time() + self.request_timeout
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
            if asyncio.get_running_loop().time() > deadline:
                if code is not None:
                    raise errors.error_for(code, f"topic {topic!r}")
                raise errors.LeaderNotAvailableError(f"topic {topic!r} has partitions without a leader")
            await asyncio.sleep(backoff.next_delay())

    def leader_for(self, topic: str, partition: int) -> BrokerNode | None:
        return self.metadata.leader(topic, partition)

    # --------------------------------------------------------------------------------- factories
    def producer(self, topic: str | None = None, **options: Any) -> Any:
        from kafkawire.producer import Producer

        return Producer(self, topic, **options)

    def consumer(self, topics: str | list[str], **options: Any) -> Any:
        from kafkawire.consumer import Consumer

        return Consumer(self, topics, **options)

    def admin(self) -> Any:
        from kafkawire.admin import Admin

        return Admin(self)


def connect(url: str, **options: Any) -> Client:
    """A client for the cluster at ``url`` (``kafka://host:port[,host:port]`` or ``kafka+ssl://``).

    Use it as ``async with connect(url) as client``; the connection is made on entering.
    """
    try:
        return Client(url, **options)
    except TypeError as exc:
        raise ConfigurationError(str(exc)) from exc
