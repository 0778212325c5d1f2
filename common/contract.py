"""The public API the three clients share, as typing protocols.

``kafkawire``, ``pulsarwire`` and ``tubemqwire`` each implement these (mypy checks it in
``mqwire/_contract_check.py``), so code written against them runs with any of the three::

    async def copy(client: Client[Any], source: str, target: str) -> None:
        async with client.producer(target) as producer, client.consumer(source, group="copier") as consumer:
            async for message in consumer:
                await producer.send(message.value, key=message.key, headers=message.headers)
                await consumer.ack(message)

Only what means the same thing in the three systems is here; each package adds its own options and
methods under the reference clients' names. Arguments that name a topic or a value are positional-only here
because the packages name them after their systems (``topic`` / ``topics``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol, Self, TypeVar

from mqwire.common.stats import ClientStats, ConsumerStats, ProducerStats

__all__ = [
    "Client",
    "Consumer",
    "Deserializer",
    "Message",
    "Producer",
    "Receipt",
    "Serializer",
    "Start",
]

Serializer = Callable[[Any], bytes | None]
"""Turns an application object into the bytes sent (``key_serializer``, ``value_serializer``).

A ``None`` key or value is sent as none without calling the serializer (a Kafka tombstone stays one)."""

Deserializer = Callable[[bytes], Any]
"""Turns received bytes into an application object (``key_deserializer``, ``value_deserializer``).

It is not called for a missing key or a null value: those stay ``None``."""

Start = Literal["latest", "earliest"]
"""Where a consumer without a stored position begins. ``"latest"`` by default, as in the reference clients."""


class Message(Protocol):
    """One received message. ``key`` and ``value`` are bytes (or None) unless a deserializer is given."""

    @property
    def topic(self) -> str:
        """The topic it was read from (for a partitioned Pulsar topic, the topic's own name)."""

    @property
    def partition(self) -> int:
        """The partition it was read from (-1 for a non-partitioned Pulsar topic)."""

    @property
    def key(self) -> Any:
        """The key, deserialized if the consumer has a ``key_deserializer``."""

    @property
    def value(self) -> Any:
        """The value, deserialized if the consumer has a ``value_deserializer``."""

    @property
    def headers(self) -> Mapping[str, bytes]:
        """Kafka headers, Pulsar properties or TubeMQ attributes, by name."""

    @property
    def timestamp(self) -> int | None:
        """Milliseconds since the epoch, as the producer or broker set it (None where the system has none)."""


class Receipt(Protocol):
    """What the broker acknowledged for one sent message; each package adds where it was stored."""

    @property
    def topic(self) -> str:
        """The topic the message was stored in."""

    @property
    def partition(self) -> int:
        """The partition the message was stored in."""


MessageT = TypeVar("MessageT", bound=Message)


class Producer(Protocol):
    """Sends to one topic; an async context manager that flushes and closes on exit."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def send(self, value: Any, /, *, key: Any = None, headers: Mapping[str, bytes] | None = None) -> Receipt:
        """Send one message and wait for the broker's acknowledgement."""

    async def enqueue(
        self, value: Any, /, *, key: Any = None, headers: Mapping[str, bytes] | None = None
    ) -> Awaitable[Receipt]:
        """Buffer one message into the current batch; the returned future is its acknowledgement."""

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until everything buffered so far is acknowledged or failed.

        ``timeout`` is in seconds (None waits as long as it takes); when it passes first, ``RequestTimeoutError``
        (a ``TimeoutError``) is raised and the messages still go on being sent.
        """

    async def close(self) -> None:
        """Flush, then release everything the producer holds."""

    def stats(self) -> ProducerStats:
        """What the producer has sent so far and holds now (see ``mqwire.common.stats``)."""


class Consumer(Protocol[MessageT]):
    """Receives from one or more topics; an async context manager and an async iterator of messages."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[MessageT]: ...

    async def receive(self, timeout: float | None = None) -> MessageT:
        """The next message; raises ``ReceiveTimeoutError`` (a ``TimeoutError``) after ``timeout`` seconds."""

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> Sequence[MessageT]:
        """The messages ready within ``timeout`` seconds (at most ``max_records``); ``[]`` when none came."""

    async def ack(self, message: MessageT, /) -> None:
        """Mark the message processed (Kafka: its offset; Pulsar: an ack; TubeMQ: a confirm)."""

    def skip(self, message: MessageT, /) -> None:
        """Go on past a message whose deserializer failed (``DeserializationError.message``).

        The message counts as processed: Kafka commits past it, Pulsar acknowledges it, TubeMQ confirms it.
        """

    async def seek_to_beginning(self) -> None:
        """Read the assigned partitions again from their first retained message."""

    async def seek_to_end(self) -> None:
        """Skip to the end of the assigned partitions: only messages written later are received."""

    async def close(self) -> None:
        """Stop receiving and release everything the consumer holds."""

    def stats(self) -> ConsumerStats:
        """What the consumer has received so far, holds now, and its lag (see ``mqwire.common.stats``)."""


class Client(Protocol[MessageT]):
    """A connection to one cluster, made by ``connect(url, ...)``; closing it closes what it made."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def producer(
        self, topic: str, /, *, key_serializer: Serializer | None = None, value_serializer: Serializer | None = None
    ) -> Producer:
        """A producer to ``topic`` (start it with ``async with``)."""

    def consumer(
        self,
        topics: str | Sequence[str],
        /,
        *,
        group: str | None = None,
        start: Start = "latest",
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
    ) -> Consumer[MessageT]:
        """A consumer of ``topics`` in ``group`` (start it with ``async with``)."""

    def stats(self) -> ClientStats:
        """Connections, and the statistics of every producer and consumer open now."""

    async def close(self) -> None:
        """Close every producer and consumer made by this client, then the connections."""
