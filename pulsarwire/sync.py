"""The blocking Pulsar client, for scripts, notebooks and synchronous frameworks.

The same shape as the async API, without ``await``::

    with pulsarwire.sync.connect("pulsar://127.0.0.1:6650") as client:
        with client.producer("orders") as producer:
            receipt = producer.send(b"v", key=b"k", headers={"h": b"v"})
            future = producer.enqueue(b"w")      # a concurrent.futures.Future of the Receipt
            producer.flush(timeout=10)
        with client.consumer("orders", group="billing", start="earliest") as consumer:
            message = consumer.receive(timeout=5)
            consumer.ack(message)

It runs the async client of ``pulsarwire`` in an event loop of its own (one thread per client, stopped by
``close``); options and errors are the async ones'. Readers are offered too; table views, transactions and
administration are not offered here yet.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Sequence
from typing import Any, Unpack

from mqwire.common.blocking_clients import BlockingClient, BlockingConsumer, BlockingProducer, same_arguments
from pulsarwire.client import Client as AsyncClient
from pulsarwire.consumer import Consumer as AsyncConsumer
from pulsarwire.message import Message, Receipt
from pulsarwire.options import ClientOptions, ConsumerOptions, ProducerOptions, ReaderOptions
from pulsarwire.producer import Producer as AsyncProducer
from pulsarwire.reader import Reader as AsyncReader

__all__ = ["Client", "Consumer", "Producer", "Reader", "connect"]


class Producer(BlockingProducer[Receipt]):
    """A blocking Pulsar producer; threads may share one."""

    @same_arguments(AsyncProducer.enqueue)
    def send(self, *args: Any, **kwargs: Any) -> Receipt:
        """Publish one message and wait for its ``Receipt`` (the arguments of ``enqueue``)."""
        return self._send(args, kwargs)

    @same_arguments(AsyncProducer.enqueue)
    def enqueue(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Receipt]:
        """Buffer one message; the future resolves with its ``Receipt`` once the broker confirms it."""
        return self._enqueue(args, kwargs)


class Consumer(BlockingConsumer[Message]):
    """A blocking Pulsar consumer (a subscription's member)."""

    @same_arguments(AsyncConsumer.ack)
    def ack(self, *args: Any, **kwargs: Any) -> None:
        """Acknowledge the message (within ``transaction`` when given)."""
        self._call(self._async.ack, *args, **kwargs)

    @same_arguments(AsyncConsumer.ack_cumulative)
    def ack_cumulative(self, *args: Any, **kwargs: Any) -> None:
        """Acknowledge the message and every one before it on its partition (not for Shared subscriptions)."""
        self._call(self._async.ack_cumulative, *args, **kwargs)

    @same_arguments(AsyncConsumer.negative_ack)
    def negative_ack(self, *args: Any, **kwargs: Any) -> None:
        """Have the message delivered again after the negative-ack delay."""
        self._call(self._async.negative_ack, *args, **kwargs)

    @same_arguments(AsyncConsumer.seek)
    def seek(self, *args: Any, **kwargs: Any) -> None:
        """Move the subscription to a MessageId, a time (datetime) or a publish time in ms."""
        self._call(self._async.seek, *args, **kwargs)


class Reader(BlockingConsumer[Message]):
    """A blocking Pulsar reader: ``receive``, ``getmany``, iteration, seeks and ``has_message_available``. A
    reader keeps its own position and acknowledges nothing."""

    def ack(self, message: Message, /) -> None:
        """Refused with TypeError: a reader keeps its own position and acknowledges nothing."""
        raise TypeError("a Pulsar reader acknowledges nothing: it keeps its own position (use a consumer to ack)")

    @same_arguments(AsyncReader.seek)
    def seek(self, *args: Any, **kwargs: Any) -> None:
        """Move the reader to a MessageId, a time (datetime) or a publish time in ms."""
        self._call(self._async.seek, *args, **kwargs)

    def has_message_available(self) -> bool:
        """Whether a message after the reader's position exists on the topic now (asks the broker)."""
        return bool(self._call(self._async.has_message_available))


class Client(BlockingClient[AsyncClient]):
    """A blocking Pulsar client; ``close`` (or leaving ``with``) closes what it made and its loop thread."""

    def producer(self, topic: str, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A started producer for ``topic``; the options are those of ``ProducerOptions``."""
        made = self._start(lambda client: client.producer(topic, **options))
        return self._adopt(Producer(self.bridge, made, "pulsarwire producer"))

    def consumer(
        self, topics: str | Sequence[str] | re.Pattern[str], /, **options: Unpack[ConsumerOptions]
    ) -> Consumer:
        """A started consumer of ``topics`` in subscription ``group``; the options are those of
        ``ConsumerOptions``."""
        made = self._start(lambda client: client.consumer(topics, **options))
        return self._adopt(Consumer(self.bridge, made))

    def reader(self, topic: str, /, **options: Unpack[ReaderOptions]) -> Reader:
        """A started reader of ``topic`` from ``start`` ("latest", "earliest" or a MessageId); the options are
        those of ``ReaderOptions``."""
        made = self._start(lambda client: client.reader(topic, **options))
        return self._adopt(Reader(self.bridge, made))


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A connected blocking client for the cluster at ``url``; the options are those of ``ClientOptions``."""
    return Client(lambda: AsyncClient(url, **options), what="pulsarwire")
