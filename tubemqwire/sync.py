"""The blocking TubeMQ client, for scripts, notebooks and synchronous frameworks.

The same shape as the async API, without ``await``::

    with tubemqwire.sync.connect("tubemq://127.0.0.1:8715") as client:
        with client.producer("orders") as producer:
            receipt = producer.send(b"v", key=b"k", headers={"h": "v"})
            future = producer.enqueue(b"w")      # a concurrent.futures.Future of the Receipt
            producer.flush(timeout=10)
        with client.consumer("orders", group="billing", start="earliest") as consumer:
            message = consumer.receive(timeout=5)
            consumer.ack(message)

It runs the async client of ``tubemqwire`` in an event loop of its own (one thread per client, stopped by
``close``); options (those of ``tubemqwire.connect``, ``Client.producer`` and ``Client.consumer``) and errors
are the async ones'. Client-balanced consumers (``client_balance_consumer``: the application picks the
partitions) are offered too. There is no ``admin()``: ``tubemqwire`` has no administration, async or blocking
(TubeMQ's topics are managed through the master's web API).
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, cast

from mqwire.common.blocking_clients import (
    BlockingClient,
    BlockingConsumer,
    BlockingProducer,
    CallerSerializers,
    same_arguments,
    same_function_arguments,
)
from tubemqwire.client import Client as AsyncClient
from tubemqwire.client import connect as async_connect
from tubemqwire.client_balance import ClientBalanceConsumer as AsyncClientBalanceConsumer
from tubemqwire.client_balance import PartitionOffsets
from tubemqwire.message import Message, Receipt
from tubemqwire.producer import Producer as AsyncProducer

__all__ = ["Client", "ClientBalanceConsumer", "Consumer", "Producer", "connect"]


class Producer(BlockingProducer[Receipt]):
    """A blocking TubeMQ producer; threads may share one."""

    @same_arguments(AsyncProducer.enqueue)
    def send(self, *args: Any, **kwargs: Any) -> Receipt:
        """Send one message and wait for its ``Receipt`` (the arguments of ``enqueue``)."""
        return self._send(args, kwargs)

    @same_arguments(AsyncProducer.enqueue)
    def enqueue(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Receipt]:
        """Start sending one message; the future resolves with its ``Receipt`` once the broker accepts it."""
        return self._enqueue(args, kwargs)


class Consumer(BlockingConsumer[Message]):
    """A blocking TubeMQ consumer, its partitions assigned by the master; ``ack`` confirms a message."""

    @property
    def assignment(self) -> frozenset[str]:
        """The keys of the partitions the master gave this consumer, held now (empty before its first round)."""
        return cast(frozenset[str], self._bridge.run_sync(lambda: self._async.assignment))


class ClientBalanceConsumer(BlockingConsumer[Message]):
    """A blocking client-balanced TubeMQ consumer: the application connects and disconnects the partitions
    it reads (``partition_metadata`` lists them); ``ack`` confirms a message."""

    def partition_metadata(self) -> dict[str, bool]:
        """Every partition of the consumed topics, by key, and whether it may be consumed now."""
        return cast(dict[str, bool], self._call(self._async.partition_metadata))

    @same_arguments(AsyncClientBalanceConsumer.connect_partition)
    def connect_partition(self, *args: Any, **kwargs: Any) -> PartitionOffsets:
        """Take a partition (from ``offset`` when given) and start reading it; its positions as the broker
        gives them."""
        return cast(PartitionOffsets, self._call(self._async.connect_partition, *args, **kwargs))

    @same_arguments(AsyncClientBalanceConsumer.disconnect_partition)
    def disconnect_partition(self, *args: Any, **kwargs: Any) -> None:
        """Stop reading a partition and give it back to the group."""
        self._call(self._async.disconnect_partition, *args, **kwargs)

    def offsets(self) -> dict[str, PartitionOffsets]:
        """The read position and end of every partition held, as the broker last told them."""
        return cast(dict[str, PartitionOffsets], self._bridge.run_sync(self._async.offsets))

    @property
    def assignment(self) -> frozenset[str]:
        """The keys of the partitions held now."""
        return cast(frozenset[str], self._bridge.run_sync(lambda: self._async.assignment))


class Client(BlockingClient[AsyncClient]):
    """A blocking TubeMQ client; ``close`` (or leaving ``with``) closes what it made and its loop thread."""

    @same_arguments(AsyncClient.producer)
    def producer(self, *args: Any, **kwargs: Any) -> Producer:
        """A started producer publishing ``topics``; the options are those of ``tubemqwire.Client.producer``."""
        serializers = CallerSerializers(kwargs)
        made = self._start(lambda client: client.producer(*args, **kwargs))
        return self._adopt(Producer(self.bridge, made, "tubemqwire producer", serializers))

    @same_arguments(AsyncClient.consumer)
    def consumer(self, *args: Any, **kwargs: Any) -> Consumer:
        """A started consumer of ``topics`` in ``group``; the options are those of ``tubemqwire.Client.consumer``."""
        made = self._start(lambda client: client.consumer(*args, **kwargs))
        return self._adopt(Consumer(self.bridge, made))

    @same_arguments(AsyncClient.client_balance_consumer)
    def client_balance_consumer(self, *args: Any, **kwargs: Any) -> ClientBalanceConsumer:
        """A started client-balanced consumer of ``topics`` in ``group``; the options are those of
        ``tubemqwire.Client.client_balance_consumer``."""
        made = self._start(lambda client: client.client_balance_consumer(*args, **kwargs))
        return self._adopt(ClientBalanceConsumer(self.bridge, made))


@same_function_arguments(async_connect)
def connect(*args: Any, **kwargs: Any) -> Client:
    """A connected blocking client for the cluster at ``url``; the options are those of ``tubemqwire.connect``."""
    return Client(lambda: async_connect(*args, **kwargs), what="tubemqwire")
