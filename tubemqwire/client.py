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
from mqwire.common.stats import ClientStats
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

    The options are those of :func:`tubemqwire.connect`, which describes them. Closing the client closes
    every producer and consumer it made.
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
        self._session.affinity.check_connect()
        await self._session.start()

    async def close(self) -> None:
        """Close every producer and consumer made by this client, then the connections.

        In a process forked after the client was made it does nothing: the connections are the parent's."""
        if not self._session.affinity.may_close():
            return
        await self._session.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._session.closed

    def stats(self) -> ClientStats:
        """Connections, reconnects and errors, with the stats of each producer and consumer open now."""
        return self._session.stats()

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

        Options (keyword only):

        - ``key_serializer`` — callable turning a key into bytes (a None key is not passed to it: no key);
          default None: keys must be bytes.
        - ``value_serializer`` — callable turning a value into bytes; default None: values must be bytes.
        - ``max_in_flight`` — sends outstanding (not yet acknowledged or failed) before ``enqueue`` waits
          for one to finish; 1 to 1000000, default 1000.
        - ``retries`` — further tries of a send that failed in a way a retry can fix (including finding
          no partition), each on another partition while one remains (a keyed message keeps its key's
          partition); 0 to 1000, default 3.
        - ``retry_backoff_ms`` — pause before a retry, in ms, times the retry's number (100, 200, ...);
          default 100.
        - ``metadata_timeout_ms`` — how long opening the producer waits for the master to place every
          topic's partitions on brokers, in ms, before ``TopicNoPartitionError``; default 30000.
        - ``checksum`` — compute each message's CRC-32 here so the broker verifies it; default False (the
          broker computes it, as it does for the Java producer).
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
        self._session.affinity.check()
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
        """A consumer of ``topics`` (one name or several) in ``group``, its partitions assigned by the
        master; use ``async with``.

        Options (keyword only):

        - ``group`` — the consumer group; default None: a group of its own (``mqwire_`` and 16 random hex
          digits), so the consumer reads alone and its position is not reused.
        - ``start`` — where a partition begins when the group has no stored position in it: ``"latest"``
          (only messages written from now on, the default) or ``"earliest"`` (the first message kept).
          Java client: ``consumePosition``.
        - ``key_deserializer`` — callable applied to each key (bytes) as messages are delivered; default
          None: keys stay bytes.
        - ``value_deserializer`` — callable applied to each value (bytes) as messages are delivered;
          default None: values stay bytes.
        - ``msg_types`` — consume only messages of these types (filtered by the broker): a str, an
          iterable of str, or a mapping of topic to types (topics left out are not filtered); default
          None: every message.
        - ``confirm_timeout_ms`` — how long a delivered batch may stay not wholly acknowledged, in ms,
          before it is given back and served again; default 60000. Java client:
          ``pullProtectConfirmTimeoutMs``.
        - ``msg_not_found_wait_ms`` — pause before fetching again from a partition that had no new
          message, in ms; default 400. Java client: ``msgNotFoundWaitPeriodMs``.
        - ``rebalance_confirm_wait_ms`` — how long a partition the master takes away waits for its
          delivered batch to be acknowledged before releasing it, in ms; default 3000. Java client:
          ``pullRebConfirmWaitPeriodMs``.
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
        self._session.affinity.check()
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
        """A consumer of ``topics`` (one name or several) in ``group`` that claims the partitions it is
        told to (the ``partitions`` option, ``connect_partition``) rather than those the master assigns;
        use ``async with``.

        Options (keyword only):

        - ``group`` — the consumer group; default None: a group of its own (``mqwire_`` and 16 random hex
          digits). The master refuses to mix master-balanced and client-balanced members in one group.
        - ``start`` — where a partition claimed without an offset begins when the group has no stored
          position in it: ``"latest"`` (the default) or ``"earliest"``. Java client: ``consumePosition``.
        - ``key_deserializer`` — callable applied to each key (bytes) as messages are delivered; default
          None: keys stay bytes.
        - ``value_deserializer`` — callable applied to each value (bytes) as messages are delivered;
          default None: values stay bytes.
        - ``msg_types`` — consume only messages of these types (filtered by the broker): a str, an
          iterable of str, or a mapping of topic to types (topics left out are not filtered); default
          None: every message.
        - ``confirm_timeout_ms`` — how long a delivered batch may stay not wholly acknowledged, in ms,
          before it is given back and served again; default 60000. Java client:
          ``pullProtectConfirmTimeoutMs``.
        - ``msg_not_found_wait_ms`` — pause before fetching again from a partition that had no new
          message, in ms; default 400. Java client: ``msgNotFoundWaitPeriodMs``.
        - ``rebalance_confirm_wait_ms`` — how long ``disconnect_partition`` waits for a delivered batch
          to be acknowledged before releasing the partition, in ms, unless given ``confirm_wait``;
          default 3000. Java client: ``pullRebConfirmWaitPeriodMs``.
        - ``partitions`` — partitions to claim on start: keys (``brokerId:topic:partitionId``), or a
          mapping of key to the index offset to start from (None: the group's stored position); default
          None: none.
        - ``source_count`` — how many members the group has, reported to the master; default -1: not
          used. Java client: ``sourceCount`` of ``start``.
        - ``node_id`` — which member this is, 0 to ``source_count`` - 1, reported to the master; ignored
          (-1) unless ``source_count`` is positive; default -1. Java client: ``nodeId`` of ``start``.
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
        self._session.affinity.check()
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
    """A client for the cluster at ``url``; use it as ``async with connect(url) as client`` (a master is
    contacted on entering).

    ``url`` is ``tubemq://master1:port[,master2:port...]`` (master port 8715 by default) or
    ``tubemq+ssl://...`` (TLS, master port 8716 by default).

    Options (keyword only):

    - ``request_timeout_ms`` — how long each request to a master or broker may take, in ms; also sent
      with the request, so the server drops one that waited longer; default 10000. Java client:
      ``rpcTimeoutMs``.
    - ``connect_timeout_ms`` — how long opening a connection to a master or broker may take, in ms;
      default 10000.
    - ``heartbeat_interval_ms`` — period of the heartbeats every producer and consumer sends to the
      master and the brokers, in ms; at most 25000 (the master drops a client after 30 s of silence);
      default 13000. Java client: ``heartbeatPeriodMs``.
    - ``username`` — user name, when the cluster authenticates clients; default None: no
      authentication. Java client: ``usrName`` of ``setAuthenticInfo``.
    - ``password`` — the user's password (needs ``username``); default None. Java client:
      ``usrPassWord`` of ``setAuthenticInfo``.
    - ``ssl_context`` — the ``ssl.SSLContext`` of the connections to masters and brokers (when given,
      they use TLS whatever the scheme); default None: plain TCP, or for ``tubemq+ssl://`` a default
      context (``ssl.create_default_context()``).
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

