"""The public TubeMQ client: ``connect(url)`` and the factories of producers and consumers.

The connections and what producers and consumers share live in a :class:`~tubemqwire.session.Session`;
the client only makes things over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from mqwire.common.lifecycle import SessionClient
from mqwire.common.options import build_config
from mqwire.common.stats import ClientStats
from tubemqwire.client_balance import ClientBalanceConsumer
from tubemqwire.consumer import Consumer
from tubemqwire.options import (
    ClientBalanceConsumerConfig,
    ClientBalanceConsumerOptions,
    ClientConfig,
    ClientOptions,
    ConsumerConfig,
    ConsumerOptions,
    MsgTypes,
    ProducerConfig,
    ProducerOptions,
)
from tubemqwire.producer import Producer
from tubemqwire.session import Session

Topics = str | Sequence[str]
"""One topic name, or several."""

__all__ = ["Client", "MsgTypes", "Topics", "connect"]


class Client(SessionClient[Session]):
    """A TubeMQ cluster reached through its masters. Use ``async with tubemqwire.connect(url) as client``.

    The options are those of :class:`tubemqwire.ClientOptions`. Closing the client closes
    every producer and consumer it made.
    """

    def __init__(self, url: str, /, **options: Unpack[ClientOptions]) -> None:
        self._session = Session(url, build_config(ClientConfig, "connect", options))

    # ---------------------------------------------------------------------------------- lifecycle
    def stats(self) -> ClientStats:
        """Connections, reconnects and errors, with the stats of each producer and consumer open now."""
        return self._session.stats()

    # ---------------------------------------------------------------------------------- factories
    def producer(self, topics: Topics, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A producer publishing ``topics`` (one name or several); use ``async with``.

        The options are those of :class:`tubemqwire.ProducerOptions`, which describes them.
        """
        producer = Producer(self._session, topics, build_config(ProducerConfig, "producer", options))
        self._session.affinity.check()
        self._session.adopt(producer)
        return producer

    def consumer(self, topics: Topics, /, **options: Unpack[ConsumerOptions]) -> Consumer:
        """A consumer of ``topics`` (one name or several) in ``group``, its partitions assigned by the
        master; use ``async with``.

        The options are those of :class:`tubemqwire.ConsumerOptions`, which describes them.
        """
        consumer = Consumer(self._session, topics, build_config(ConsumerConfig, "consumer", options))
        self._session.affinity.check()
        self._session.adopt(consumer)
        return consumer

    def client_balance_consumer(
        self, topics: Topics, /, **options: Unpack[ClientBalanceConsumerOptions]
    ) -> ClientBalanceConsumer:
        """A consumer of ``topics`` (one name or several) in ``group`` that claims the partitions it is
        told to (the ``partitions`` option, ``connect_partition``) rather than those the master assigns;
        use ``async with``.

        The options are those of :class:`tubemqwire.ClientBalanceConsumerOptions`: the
        consumer's, and ``partitions``, ``source_count`` and ``node_id``.
        """
        config = build_config(ClientBalanceConsumerConfig, "client_balance_consumer", options)
        consumer = ClientBalanceConsumer(self._session, topics, config)
        self._session.affinity.check()
        self._session.adopt(consumer)
        return consumer


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A client for the cluster at ``url``; use it as ``async with connect(url) as client`` (a master is
    contacted on entering).

    ``url`` is ``tubemq://master1:port[,master2:port...]`` (master port 8715 by default) or
    ``tubemq+ssl://...`` (TLS, master port 8716 by default).

    The options are those of :class:`tubemqwire.ClientOptions`, which describes them.
    """
    return Client(url, **options)
