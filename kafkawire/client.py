"""The public Kafka client: ``connect(url, ...)`` and the factories of producers, consumers and admins.

A ``Client`` is a thin face over a ``Cluster`` (``kafkawire.cluster``), the session that holds the
connections, the metadata and the coordinators. Every option is declared (``ClientOptions``,
``ProducerOptions``, ``ConsumerOptions``), so a misspelled one is a type error in the caller's code and a
``ConfigurationError`` naming it at run time.
"""

from __future__ import annotations

import difflib
import inspect
import re
import ssl as _ssl
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypedDict, TypeVar, Unpack

from kafkawire.admin import Admin
from kafkawire.cluster import Cluster
from kafkawire.consumer import Consumer, PartitionsCallback, PartitionSpec
from kafkawire.metadata import ClusterMetadata
from kafkawire.producer import Partitioner, Producer
from kafkawire.sasl import TokenProvider
from mqwire.common.contract import Deserializer, Serializer, Start
from mqwire.common.errors import ConfigurationError

__all__ = [
    "AdminOptions",
    "Client",
    "ClientOptions",
    "ConsumerOptions",
    "ProducerOptions",
    "UnknownOptionError",
    "connect",
]

T = TypeVar("T")


class UnknownOptionError(ConfigurationError, TypeError):
    """An option name that ``connect``, ``producer``, ``consumer`` or ``admin`` does not know (a TypeError, as
    Python's own for an unexpected keyword)."""


class ClientOptions(TypedDict, total=False):
    """The options of ``connect``: the Java client's and aiokafka's names, times in ms."""

    client_id: str
    request_timeout_ms: int
    connect_timeout_ms: int
    metadata_max_age_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    allow_auto_create_topics: bool
    ssl_context: _ssl.SSLContext | None
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_check_hostname: bool
    sasl_mechanism: str | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_oauth_token_provider: TokenProvider | None


class ProducerOptions(TypedDict, total=False):
    """The options of ``client.producer``: the Java client's and aiokafka's names, times in ms."""

    key_serializer: Serializer | None
    value_serializer: Serializer | None
    acks: int | str
    linger_ms: float
    batch_size: int
    compression: str | None
    compression_type: str | None
    max_request_size: int
    request_timeout_ms: float
    delivery_timeout_ms: float
    retry_backoff_ms: float
    retry_backoff_max_ms: float
    retries: int
    enable_idempotence: bool | None
    max_in_flight_requests_per_connection: int
    buffer_memory: int
    max_buffer_size: int | None
    max_block_ms: float
    partitioner: Partitioner | None
    transactional_id: str | None
    transaction_timeout_ms: int


class ConsumerOptions(TypedDict, total=False):
    """The options of ``client.consumer``: the Java client's and aiokafka's names, times in ms."""

    group: str | None
    start: Start
    auto_offset_reset: Start | None
    partitions: Iterable[PartitionSpec] | None
    pattern: str | re.Pattern[str] | None
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    isolation_level: Literal["read_uncommitted", "read_committed"]
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    max_buffered_records: int
    enable_auto_commit: bool
    auto_commit_interval_ms: float
    commit_acknowledged_only: bool
    check_crcs: bool
    group_protocol: Literal["classic", "consumer"]
    partition_assignment_strategy: str | Sequence[str]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    rebalance_timeout_ms: int | None
    group_instance_id: str | None
    group_remote_assignor: str | None
    on_assigned: PartitionsCallback | None
    on_revoked: PartitionsCallback | None
    on_lost: PartitionsCallback | None


class AdminOptions(TypedDict, total=False):
    """The options of ``client.admin``."""

    timeout_ms: float


class Client:
    """A Kafka cluster. Use ``async with kafkawire.connect(url) as client``."""

    def __init__(self, url: str, **options: Unpack[ClientOptions]) -> None:
        self._cluster = _build(Cluster, "connect", url, **options)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._cluster.closed

    @property
    def client_id(self) -> str:
        """The ``client_id`` sent with every request."""
        return self._cluster.client_id

    @property
    def metadata(self) -> ClusterMetadata:
        """What the client knows of the cluster: brokers, topics, partitions and their leaders."""
        return self._cluster.metadata

    async def start(self) -> None:
        """Connect to a bootstrap server and load the cluster metadata."""
        await self._cluster.start()

    async def close(self) -> None:
        """Close the producers, consumers and admins made by this client (producers flush), then the connections."""
        await self._cluster.close()

    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Reload metadata for ``topics`` (None: every topic; []: brokers only)."""
        return await self._cluster.refresh_metadata(topics)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (waiting, bounded, while a new topic gets its leaders)."""
        return await self._cluster.partitions_for(topic)

    def producer(self, topic: str | None = None, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A producer to ``topic`` (or to the ``topic=`` of each send); start it with ``async with``."""
        return _build(Producer, "producer", self._cluster, topic, **options)

    def consumer(self, topics: str | Iterable[str] = (), /, **options: Unpack[ConsumerOptions]) -> Consumer:
        """A consumer of ``topics`` (or of a ``pattern=``, or of ``partitions=``); start it with ``async with``."""
        return _build(Consumer, "consumer", self._cluster, topics, **options)

    def admin(self, **options: Unpack[AdminOptions]) -> Admin:
        """The administration client (topics, configs, groups); use it with ``async with``."""
        return _build(Admin, "admin", self._cluster, **options)

    def __repr__(self) -> str:
        return f"Client(client_id={self._cluster.client_id!r})"


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A client for the cluster at ``url`` (``kafka://host:port[,host:port]`` or ``kafka+ssl://``).

    Use it as ``async with connect(url) as client``; the connection is made on entering.
    """
    return Client(url, **options)


def _build(factory: Callable[..., T], what: str, *args: Any, **options: Any) -> T:
    """``factory(*args, **options)``, an unknown option being a ConfigurationError that names it."""
    known = inspect.signature(factory).parameters
    for name in options:
        if name not in known or known[name].kind is not inspect.Parameter.KEYWORD_ONLY:
            close = difflib.get_close_matches(name, [n for n, p in known.items() if p.kind is p.KEYWORD_ONLY])
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UnknownOptionError(f"{what}: unknown option {name!r}{hint}")
    return factory(*args, **options)
