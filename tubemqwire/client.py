"""The public TubeMQ client: ``connect(url)`` and the factories of producers and consumers.

The connections and what producers and consumers share live in a :class:`~tubemqwire.session.Session`;
the client only makes things over it.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Self

from mqwire.common.contract import Deserializer, Serializer, Start
from tubemqwire.client_balance import ClientBalanceConsumer
from tubemqwire.consumer import Consumer
from tubemqwire.producer import Producer
from tubemqwire.protocol.constants import HEARTBEAT_INTERVAL_MS
from tubemqwire.session import Session

Topics = str | Sequence[str]
"""One topic name, or several."""

MsgTypes = str | Iterable[str] | Mapping[str, Iterable[str]] | None
"""Message types to consume: for every topic, or a mapping of topic to types."""


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
        self._session = Session(
            url,
            request_timeout_ms=request_timeout_ms,
            connect_timeout_ms=connect_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            username=username,
            password=password,
            ssl_context=ssl_context,
        )

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Find our own address and check that some master accepts a connection."""
        await self._session.start()

    async def close(self) -> None:
        """Close every producer and consumer made by this client, then the connections."""
        await self._session.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._session.closed

    # ---------------------------------------------------------------------------------- factories
    def producer(
        self,
        topics: Topics,
        /,
        *,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        max_in_flight: int = 1000,
        retries: int = 3,
        retry_backoff_ms: int = 100,
        metadata_timeout_ms: int = 30_000,
        checksum: bool = False,
    ) -> Producer:
        """A producer publishing ``topics`` (one name or several); use ``async with``.

        ``key_serializer`` / ``value_serializer``: callables turning keys and values into bytes (without
        one they must be bytes); ``max_in_flight``: sends outstanding before ``enqueue`` waits (1000);
        ``retries``: tries on other partitions after a failure a retry can fix (3); ``retry_backoff_ms``:
        pause before a retry (100); ``metadata_timeout_ms``: how long opening waits for the master to place
        every topic (30000); ``checksum``: compute the CRC here so the broker verifies it (False).
        """
        producer = Producer(
            self._session,
            topics,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
            max_in_flight=max_in_flight,
            retries=retries,
            retry_backoff_ms=retry_backoff_ms,
            metadata_timeout_ms=metadata_timeout_ms,
            checksum=checksum,
        )
        self._session.adopt(producer)
        return producer

    def consumer(
        self,
        topics: Topics,
        /,
        *,
        group: str | None = None,
        start: Start = "latest",
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        msg_types: MsgTypes = None,
        confirm_timeout_ms: int = 60_000,
        msg_not_found_wait_ms: int = 400,
        rebalance_confirm_wait_ms: int = 3_000,
    ) -> Consumer:
        """A consumer of ``topics`` in ``group``, balanced by the master; use ``async with``.

        ``group``: the consumer group (None: a group of its own, ``mqwire_`` and random hex);
        ``start``: "latest" (default) or "earliest", where a group without a stored position begins;
        ``key_deserializer`` / ``value_deserializer``: callables applied to keys and values as messages
        are delivered; ``msg_types``: consume only messages of these types (a str, an iterable, or a
        mapping of topic to types); ``confirm_timeout_ms``: how long a delivered batch may stay
        unacknowledged before it is given back (60000); ``msg_not_found_wait_ms``: pause after an empty
        fetch (400); ``rebalance_confirm_wait_ms``: how long a partition being taken away waits for its
        batch to be acknowledged (3000).
        """
        consumer = Consumer(
            self._session,
            topics,
            group=group,
            start=start,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            msg_types=msg_types,
            confirm_timeout_ms=confirm_timeout_ms,
            msg_not_found_wait_ms=msg_not_found_wait_ms,
            rebalance_confirm_wait_ms=rebalance_confirm_wait_ms,
        )
        self._session.adopt(consumer)
        return consumer

    def client_balance_consumer(
        self,
        topics: Topics,
        /,
        *,
        group: str | None = None,
        start: Start = "latest",
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        msg_types: MsgTypes = None,
        confirm_timeout_ms: int = 60_000,
        msg_not_found_wait_ms: int = 400,
        rebalance_confirm_wait_ms: int = 3_000,
        partitions: Iterable[str] | Mapping[str, int | None] | None = None,
        source_count: int = -1,
        node_id: int = -1,
    ) -> ClientBalanceConsumer:
        """A consumer of ``topics`` in ``group`` that claims the partitions it is told to (``partitions``
        option, ``connect_partition``) rather than those the master assigns; use ``async with``.

``group``: the consumer group (None: a group of its own, ``mqwire_`` and random hex);
        ``start``: "latest" (default) or "earliest", where a group without a stored position begins;
        ``key_deserializer`` / ``value_deserializer``: callables applied to keys and values as messages
        are delivered; ``msg_types``: consume only messages of these types (a str, an iterable, or a
        mapping of topic to types); ``confirm_timeout_ms``: how long a delivered batch may stay
        unacknowledged before it is given back (60000); ``msg_not_found_wait_ms``: pause after an empty
        fetch (400); ``rebalance_confirm_wait_ms``: how long a partition being taken away waits for its
        batch to be acknowledged (3000). ``partitions``: keys to claim on start, or a mapping of
        key to the offset to start from (None for the group's stored position); ``source_count`` and
        ``node_id``: how many members the group has and which one this is (-1 when not used).
        """
        consumer = ClientBalanceConsumer(
            self._session,
            topics,
            group=group,
            start=start,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            msg_types=msg_types,
            confirm_timeout_ms=confirm_timeout_ms,
            msg_not_found_wait_ms=msg_not_found_wait_ms,
            rebalance_confirm_wait_ms=rebalance_confirm_wait_ms,
            partitions=partitions,
            source_count=source_count,
            node_id=node_id,
        )
        self._session.adopt(consumer)
        return consumer


def connect(
    url: str,
    *,
    request_timeout_ms: int = 10_000,
    connect_timeout_ms: int = 10_000,
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
    username: str | None = None,
    password: str | None = None,
    ssl_context: _ssl.SSLContext | None = None,
) -> Client:
    """A client for the cluster at ``url`` (``tubemq://master1:port[,master2:port]`` or ``tubemq+ssl://``).

    Use it as ``async with connect(url) as client``; a master is contacted on entering.
    ``request_timeout_ms``: each RPC (10000; also sent to the server, which drops requests that waited
    longer); ``connect_timeout_ms`` (10000); ``heartbeat_interval_ms``: master and broker heartbeats of
    every producer and consumer (13000, at most 25000); ``username`` and ``password``: when the cluster
    authenticates clients; ``ssl_context``: for ``tubemq+ssl://`` (a default one when None).
    """
    return Client(
        url,
        request_timeout_ms=request_timeout_ms,
        connect_timeout_ms=connect_timeout_ms,
        heartbeat_interval_ms=heartbeat_interval_ms,
        username=username,
        password=password,
        ssl_context=ssl_context,
    )

