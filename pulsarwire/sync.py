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
        with client.admin(admin_url="http://127.0.0.1:8080") as admin:
            admin.create_topic("audit", partitions=3)
            print(admin.list_partitioned_topics("public/default"))

It runs the async client of ``pulsarwire`` in an event loop of its own (one thread per client, stopped by
``close``); options and errors are the async ones'. Readers are offered too, and ``client.admin()``, every
method of the async ``pulsarwire.admin.Admin`` blocking, with the same arguments and results; table views and
transactions are not offered here yet.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Sequence
from typing import Any, Unpack

from mqwire.common.blocking_clients import (
    BlockingAdmin,
    BlockingClient,
    BlockingConsumer,
    BlockingProducer,
    CallerSerializers,
    same_arguments,
)
from pulsarwire.admin import Admin as AsyncAdmin
from pulsarwire.admin import AdminOptions
from pulsarwire.client import Client as AsyncClient
from pulsarwire.consumer import Consumer as AsyncConsumer
from pulsarwire.message import Message, Receipt
from pulsarwire.options import ClientOptions, ConsumerOptions, ProducerOptions, ReaderOptions
from pulsarwire.producer import Producer as AsyncProducer
from pulsarwire.reader import Reader as AsyncReader

__all__ = ["Admin", "Client", "Consumer", "Producer", "Reader", "connect"]


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


class Admin(BlockingAdmin[AsyncAdmin]):
    """A blocking Pulsar admin: lists, creates, deletes and describes topics through the admin REST API. Each
    method takes what the async ``pulsarwire.admin.Admin`` method of the same name takes and returns what it
    returns."""

    @property
    def admin_url(self) -> str:
        """The admin REST API this admin speaks to."""
        return self._async.admin_url

    @same_arguments(AsyncAdmin.list_topics)
    def list_topics(self, *args: Any, **kwargs: Any) -> list[str]:
        """The persistent topics of ``tenant/namespace``: each topic without partitions and each partition."""
        return self._call(self._async.list_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.list_partitioned_topics)
    def list_partitioned_topics(self, *args: Any, **kwargs: Any) -> list[str]:
        """The partitioned topics of ``tenant/namespace`` (their own names, not their partitions')."""
        return self._call(self._async.list_partitioned_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.create_topic)
    def create_topic(self, *args: Any, **kwargs: Any) -> str:
        """Create a topic (``partitions=0``: without partitions); returns its complete name."""
        return self._call(self._async.create_topic, *args, **kwargs)

    @same_arguments(AsyncAdmin.delete_topic)
    def delete_topic(self, *args: Any, **kwargs: Any) -> None:
        """Delete a topic with its partitions (``force``: even with producers or subscriptions)."""
        return self._call(self._async.delete_topic, *args, **kwargs)

    @same_arguments(AsyncAdmin.partitions)
    def partitions(self, *args: Any, **kwargs: Any) -> int:
        """The partition count of a topic (0: without partitions); the async admin's error when it is not there."""
        return self._call(self._async.partitions, *args, **kwargs)


class Client(BlockingClient[AsyncClient]):
    """A blocking Pulsar client; ``close`` (or leaving ``with``) closes what it made and its loop thread."""

    def producer(self, topic: str, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A started producer for ``topic``; the options are those of ``ProducerOptions``."""
        given: dict[str, Any] = dict(options)
        # With a schema the async producer encodes values (and declares the schema): only keys are done here.
        serializers = CallerSerializers(given, values=given.get("schema") is None)
        made = self._start(lambda client: client.producer(topic, **given))
        return self._adopt(Producer(self.bridge, made, "pulsarwire producer", serializers))

    def consumer(
        self,
        topics: str | Sequence[str] | re.Pattern[str] = (),
        /,
        *,
        pattern: str | re.Pattern[str] | None = None,
        **options: Unpack[ConsumerOptions],
    ) -> Consumer:
        """A started consumer of ``topics`` (names or a compiled pattern, or a ``pattern=`` instead) in
        subscription ``group``; the options are those of ``ConsumerOptions``."""
        made = self._start(lambda client: client.consumer(topics, pattern=pattern, **options))
        return self._adopt(Consumer(self.bridge, made))

    def reader(self, topic: str, /, **options: Unpack[ReaderOptions]) -> Reader:
        """A started reader of ``topic`` from ``start`` ("latest", "earliest" or a MessageId); the options are
        those of ``ReaderOptions``."""
        made = self._start(lambda client: client.reader(topic, **options))
        return self._adopt(Reader(self.bridge, made))

    def admin(self, **options: Unpack[AdminOptions]) -> Admin:
        """Topic administration over the admin REST API at ``admin_url`` (this call's or the client's), closed
        with this client at the latest; the options are those of ``AdminOptions``."""
        made = self._start(lambda client: client.admin(**options))
        return self._adopt(Admin(self.bridge, made, "pulsarwire admin"))


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A connected blocking client for the cluster at ``url``; the options are those of ``ClientOptions``."""
    return Client(lambda: AsyncClient(url, **options), what="pulsarwire")
