"""The blocking Kafka client, for scripts, notebooks and synchronous frameworks.

The same shape as the async API, without ``await``::

    with kafkawire.sync.connect("kafka://127.0.0.1:9092") as client:
        with client.producer("orders") as producer:
            receipt = producer.send(b"v", key=b"k", headers={"h": b"v"})
            future = producer.enqueue(b"w")      # a concurrent.futures.Future of the RecordMetadata
            producer.flush(timeout=10)
        with client.consumer("orders", group="billing", start="earliest") as consumer:
            message = consumer.receive(timeout=5)
            consumer.commit()

It runs the async client of ``kafkawire`` in an event loop of its own (one thread per client, stopped by
``close``); options and errors are the async ones'. Administration is not offered here yet.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable
from typing import Any, Unpack

from kafkawire.client import Client as AsyncClient
from kafkawire.client import ClientOptions, ConsumerOptions, ProducerOptions
from kafkawire.consumer import Consumer as AsyncConsumer
from kafkawire.message import Message, RecordMetadata
from kafkawire.producer import Producer as AsyncProducer
from mqwire.common.blocking_clients import BlockingClient, BlockingConsumer, BlockingProducer, same_arguments

__all__ = ["Client", "Consumer", "Producer", "connect"]


class Producer(BlockingProducer[RecordMetadata]):
    """A blocking Kafka producer; threads may share one."""

    @same_arguments(AsyncProducer.enqueue)
    def send(self, *args: Any, **kwargs: Any) -> RecordMetadata:
        """Produce one record and wait for its ``RecordMetadata`` (the arguments of ``enqueue``)."""
        return self._send(args, kwargs)

    @same_arguments(AsyncProducer.enqueue)
    def enqueue(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[RecordMetadata]:
        """Buffer one record; the future resolves with its ``RecordMetadata`` once acknowledged."""
        return self._enqueue(args, kwargs)


class Consumer(BlockingConsumer[Message]):
    """A blocking Kafka consumer: also ``getone``, ``commit`` and partition-wise seeks."""

    @same_arguments(AsyncConsumer.getone)
    def getone(self, *args: Any, **kwargs: Any) -> Message:
        """The next message (of the partitions given), waiting as long as it takes: aiokafka's ``getone``."""
        return self._take_one(self._async.getone, *args, **kwargs)

    @same_arguments(AsyncConsumer.getmany)
    def getmany(self, *args: Any, **kwargs: Any) -> list[Message]:
        """The records ready within ``timeout`` seconds (at most ``max_records``); ``[]`` when none came."""
        timeout = kwargs.get("timeout", 0)
        if kwargs.get("timeout_ms") is not None:
            timeout = kwargs["timeout_ms"] / 1000
        return self._getmany(timeout, kwargs.get("max_records"), lambda: self._async.getmany(*args, **kwargs))

    @same_arguments(AsyncConsumer.commit)
    def commit(self, *args: Any, **kwargs: Any) -> None:
        """Commit the delivered (or the given) offsets of the group and wait for the coordinator's answer."""
        self._call(self._async.commit, *args, **kwargs)

    @same_arguments(AsyncConsumer.seek_to_beginning)
    def seek_to_beginning(self, *args: Any, **kwargs: Any) -> None:
        """Read the partitions given (default: all assigned) again from their first retained record."""
        self._call(self._async.seek_to_beginning, *args, **kwargs)

    @same_arguments(AsyncConsumer.seek_to_end)
    def seek_to_end(self, *args: Any, **kwargs: Any) -> None:
        """Skip to the end of the partitions given (default: all assigned)."""
        self._call(self._async.seek_to_end, *args, **kwargs)


class Client(BlockingClient[AsyncClient]):
    """A blocking Kafka client; ``close`` (or leaving ``with``) closes what it made and its loop thread."""

    def producer(self, topic: str | None = None, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A started producer to ``topic``; the options are those of ``ProducerOptions``."""
        made = self._start(lambda client: client.producer(topic, **options))
        return self._adopt(Producer(self.bridge, made, "kafkawire producer"))

    def consumer(self, topics: str | Iterable[str] = (), /, **options: Unpack[ConsumerOptions]) -> Consumer:
        """A started consumer of ``topics``; the options are those of ``ConsumerOptions``."""
        made = self._start(lambda client: client.consumer(topics, **options))
        return self._adopt(Consumer(self.bridge, made))


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A connected blocking client for the cluster at ``url``; the options are those of ``ClientOptions``."""
    return Client(lambda: AsyncClient(url, **options), what="kafkawire")
