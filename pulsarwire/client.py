"""The public Pulsar client: ``connect(url, ...)`` and the factories of producers, consumers, readers and admins."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Unpack

from mqwire.common.errors import ConfigurationError, OptionTypeError
from mqwire.common.lifecycle import SessionClient
from mqwire.common.options import build_config
from mqwire.common.stats import ClientStats
from pulsarwire.admin import Admin, AdminConfig, AdminOptions
from pulsarwire.consumer import Consumer
from pulsarwire.options import (
    ClientConfig,
    ClientOptions,
    ConsumerOptions,
    ProducerOptions,
    ReaderConfig,
    ReaderOptions,
)
from pulsarwire.producer import Producer
from pulsarwire.reader import Reader
from pulsarwire.schema import TopicSchema
from pulsarwire.schema_fetch import fetch_schema
from pulsarwire.session import Session
from pulsarwire.table_view import TableView, TableViewConfig, TableViewOptions
from pulsarwire.topics import complete_name, partition_name
from pulsarwire.transaction import Transaction, TransactionCoordinators

__all__ = ["Client", "connect"]


class Client(SessionClient[Session]):
    """A Pulsar cluster reached through its service URL. Use ``async with pulsarwire.connect(url) as client``.

    The options (timeouts, reconnection delays, authentication, TLS, the admin API) are those of
    :class:`pulsarwire.ClientOptions`. Producers, consumers, readers and admins are made by the methods
    below; closing the client closes every one of them.
    """

    def __init__(self, url: str, /, **options: Unpack[ClientOptions]) -> None:
        self._session = Session(url, build_config(ClientConfig, "connect", options))
        self._coordinators: TransactionCoordinators | None = None

    @property
    def service_url(self) -> str:
        """The URL given to ``connect``."""
        return self._session.service_url

    # ---------------------------------------------------------------------------------- factories
    def stats(self) -> ClientStats:
        """Connections, reconnects and errors, with the stats of each producer and consumer open now."""
        return self._session.stats()

    def producer(self, topic: str, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A producer for ``topic`` (partitioned or not); use ``async with``.

        The options are described in :class:`pulsarwire.ProducerOptions`; see also :class:`Producer`.
        """
        self._session.affinity.check()
        return Producer(self._session, topic, **options)

    def consumer(
        self,
        topics: str | Sequence[str] | re.Pattern[str] = (),
        /,
        *,
        pattern: str | re.Pattern[str] | None = None,
        **options: Unpack[ConsumerOptions],
    ) -> Consumer:
        """A consumer of ``topics`` (names or a compiled pattern) in subscription ``group``; use ``async with``.

        ``pattern`` — the topics whose complete names match this regular expression (str or compiled), in
        place of ``topics``: ``pattern="orders-.*"`` is ``re.compile("orders-.*")`` as ``topics``, the name
        kafkawire and aiokafka use. The options are described in :class:`pulsarwire.ConsumerOptions`; see
        also :class:`Consumer`.
        """
        self._session.affinity.check()
        return Consumer(self._session, _subscribed(topics, pattern), **options)

    def reader(self, topic: str, /, **options: Unpack[ReaderOptions]) -> Reader:
        """A reader of ``topic`` from ``start`` ("latest", "earliest" or a MessageId); use ``async with``.

        The options are described in :class:`pulsarwire.ReaderOptions`; see also :class:`Reader`.
        """
        config = build_config(ReaderConfig, "reader", options)
        self._session.affinity.check()
        return Reader(self._session, topic, config)

    def transaction(self, *, timeout_ms: int = 60_000) -> Transaction:
        """A transaction, begun on a coordinator by ``await`` or ``async with await``: ``txn = await
        client.transaction(timeout_ms=30_000)``; pass it to ``producer.send(..., transaction=txn)`` and
        ``consumer.ack(message, transaction=txn)``, then ``await txn.commit()`` or ``await txn.abort()``.

        ``timeout_ms`` (at least 1000; default 60000, Java ``withTransactionTimeout``): after it the coordinator
        aborts the transaction. The brokers need ``transactionCoordinatorEnabled=true``.
        """
        self._session.affinity.check()
        self._session.check_open()
        if self._coordinators is None:
            self._coordinators = TransactionCoordinators(self._session)
        return Transaction(self._coordinators, timeout_ms)

    def table_view(self, topic: str, /, **options: Unpack[TableViewOptions]) -> TableView:
        """The latest value of each key of ``topic``, kept current; use ``async with``.

        The options are described in :class:`pulsarwire.TableViewOptions`; see also :class:`TableView`.
        """
        self._session.affinity.check()
        return TableView(self._session, topic, build_config(TableViewConfig, "table_view", options))

    def admin(self, **options: Unpack[AdminOptions]) -> Admin:
        """Topic administration over the admin REST API at ``admin_url`` (this call's or the client's).

        Options: ``admin_url``, ``admin_timeout`` (seconds per request) and ``admin_allow_insecure_http``, each
        defaulting to the client's option of the same name.
        """
        session = self._session
        # Each option not given here is the client's option of the same name.
        given = {
            "admin_url": session.admin_url,
            "admin_timeout": session.admin_timeout,
            "admin_allow_insecure_http": session.admin_allow_insecure_http,
            **options,
        }
        config = build_config(AdminConfig, "admin", given)
        session.affinity.check()
        session.check_open()
        session.check_admin_url(config.admin_url, config.admin_allow_insecure_http)
        return Admin(config, ssl=session.ssl, token=session.auth_token)

    async def get_schema(self, topic: str, version: int | None = None) -> TopicSchema | None:
        """The schema registered on ``topic`` (its latest, or ``version``), or None when it has none.

        For readers that want the writer's schema: a message's ``schema_version`` names the one it was written
        with. Asked of the broker at the service URL (GetSchema), retried within ``operation_timeout``.
        """
        self._session.affinity.check()
        return await self._session.retrying(
            lambda: fetch_schema(self._session, complete_name(topic), version), f"schema of {topic}"
        )

    async def get_topic_partitions(self, topic: str) -> list[str]:
        """The complete names of the partitions of ``topic``, or its own complete name when it has none."""
        self._session.affinity.check()
        name = complete_name(topic)
        count = await self._session.partitions_for(name)
        return [partition_name(name, index) for index in range(count)] if count else [name]


def _subscribed(
    topics: str | Sequence[str] | re.Pattern[str], pattern: str | re.Pattern[str] | None
) -> str | Sequence[str] | re.Pattern[str]:
    """What a consumer subscribes to: ``topics``, or ``pattern`` compiled when it is given instead of them."""
    if pattern is None:
        if not isinstance(topics, re.Pattern) and not topics:
            raise ConfigurationError("a consumer needs topics or pattern")
        return topics
    if isinstance(topics, re.Pattern) or topics:
        raise ConfigurationError("give topics or pattern, not both")
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise OptionTypeError(f"option pattern must be a str or re.Pattern, not {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError(f"option pattern: {pattern!r} is no regular expression: {exc}") from None


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A client for the cluster at ``url`` (``pulsar://host:port`` or ``pulsar+ssl://host:port``).

    Use it as ``async with connect(url) as client``; the service URL is contacted on entering. The options
    are described in :class:`pulsarwire.ClientOptions`.
    """
    return Client(url, **options)
