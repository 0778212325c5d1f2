"""The public Kafka client: ``connect(url, ...)`` and the factories of producers, consumers and admins.

A ``Client`` is a thin face over a ``Session`` (``kafkawire.session``), the session that holds the
connections, the metadata and the coordinators. Every option is declared in ``kafkawire.options``
(``ClientOptions``, ``ProducerOptions``, ``ConsumerOptions``, ...), so a misspelled one is a type error in the
caller's code and an ``UnknownOptionError`` (a ``ConfigurationError``) naming it at run time; each factory
checks its options into the frozen config (``ProducerConfig``, ...) that the object it makes reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Unpack

from kafkawire.admin import Admin
from kafkawire.consumer import Consumer
from kafkawire.metadata import ClusterMetadata
from kafkawire.options import (
    AdminConfig,
    AdminOptions,
    ClientConfig,
    ClientOptions,
    ConsumerConfig,
    ConsumerOptions,
    ProducerConfig,
    ProducerOptions,
    ShareConsumerConfig,
    ShareConsumerOptions,
)
from kafkawire.producer import Producer
from kafkawire.session import Session
from kafkawire.share.consumer import ShareConsumer
from mqwire.common.errors import ConfigurationError, UnknownOptionError
from mqwire.common.lifecycle import SessionClient
from mqwire.common.options import build_config
from mqwire.common.stats import ClientStats

__all__ = [
    "AdminOptions",
    "Client",
    "ClientOptions",
    "ConsumerOptions",
    "ProducerOptions",
    "ShareConsumerOptions",
    "UnknownOptionError",
    "connect",
]


class Client(SessionClient[Session]):
    """A Kafka cluster. Use ``async with kafkawire.connect(url) as client``."""

    def __init__(self, url: str, **options: Unpack[ClientOptions]) -> None:
        self._session = Session(url, build_config(ClientConfig, "connect", options))

    @property
    def client_id(self) -> str:
        """The ``client_id`` sent with every request."""
        return self._session.client_id

    @property
    def metadata(self) -> ClusterMetadata:
        """What the client knows of the cluster: brokers, topics, partitions and their leaders."""
        return self._session.metadata

    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Reload metadata for ``topics`` (None: every topic; []: brokers only)."""
        self._session.affinity.check()
        return await self._session.refresh_metadata(topics)

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (waiting, bounded, while a new topic gets its leaders)."""
        self._session.affinity.check()
        return await self._session.partitions_for(topic)

    def stats(self) -> ClientStats:
        """Connections, reconnects and errors, with the stats of each producer and consumer open now."""
        return self._session.stats()

    def producer(self, topic: str | None = None, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A producer to ``topic`` (or to the ``topic=`` of each send); start it with ``async with``.

        The options are those of ``ProducerOptions``.
        """
        self._session.affinity.check()
        return Producer(self._session, topic, build_config(ProducerConfig, "producer", options))

    def consumer(
        self, topics: str | Iterable[str] | re.Pattern[str] = (), /, **options: Unpack[ConsumerOptions]
    ) -> Consumer:
        """A consumer of ``topics`` (or of a ``pattern=``, or of ``partitions=``); start it with ``async with``.

        ``topics`` may also be a compiled pattern, as in pulsarwire: ``client.consumer(re.compile("orders-.*"),
        group="billing")`` is ``client.consumer(pattern=...)``. The options are those of ``ConsumerOptions``.
        """
        self._session.affinity.check()
        if isinstance(topics, re.Pattern):
            if options.get("pattern") is not None:
                raise ConfigurationError("give topics or pattern, not both")
            options["pattern"] = topics
            topics = ()
        return Consumer(self._session, topics, build_config(ConsumerConfig, "consumer", options))

    def share_consumer(self, topics: str | Iterable[str], /, **options: Unpack[ShareConsumerOptions]) -> ShareConsumer:
        """A member of the share group ``group=`` reading ``topics`` (KIP-932); start it with ``async with``.

        The options are those of ``ShareConsumerOptions``; ``group`` is required.
        """
        if "group" not in options:
            raise ConfigurationError("share_consumer: the group option is required")
        self._session.affinity.check()
        config = build_config(ShareConsumerConfig, "share_consumer", options)
        return ShareConsumer(self._session, topics, config)

    def admin(self, **options: Unpack[AdminOptions]) -> Admin:
        """The administration client (topics, configs, groups); use it with ``async with``.

        The options are those of ``AdminOptions``.
        """
        self._session.affinity.check()
        return Admin(self._session, build_config(AdminConfig, "admin", options))

    def __repr__(self) -> str:
        return f"Client(client_id={self._session.client_id!r})"


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A client for the cluster at ``url`` (``kafka://host:port[,host:port]`` or ``kafka+ssl://``).

    Use it as ``async with connect(url) as client``; the connection is made on entering. The options are
    those of ``ClientOptions``.
    """
    return Client(url, **options)
