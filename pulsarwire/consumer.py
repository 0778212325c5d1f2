"""The public consumer: one subscription over one or more topics, every partition feeding one queue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from common.errors import MqwireError
from pulsarwire.client import Client
from pulsarwire.client_errors import ConsumerClosedError
from pulsarwire.message import Message, MessageId
from pulsarwire.options import ConsumerOptions
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.topic_consumer import TopicConsumer
from pulsarwire.topics import complete_name, partition_name

log = logging.getLogger(__name__)


class Subscriber:
    """What consumers and readers share: sub-consumers per partition merged into one receive queue."""

    def __init__(self, client: Client, topics: Sequence[str], options: ConsumerOptions, name: str) -> None:
        self.client = client
        self.options = options
        self._topics = [(topic, complete_name(topic)) for topic in topics]
        if len({full for _, full in self._topics}) != len(self._topics):
            raise ValueError(f"topics {list(topics)!r} name the same topic twice")
        self._queue = ReceiveQueue(name)
        self._consumers: list[TopicConsumer] = []
        self._owners: set[TopicConsumer] = set()
        self._started = False
        self._closed = False
        self._starting: asyncio.Lock | None = None

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Any:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _make(self, given: str, topic: str, partition: int, queue_size: int) -> TopicConsumer:
        return TopicConsumer(
            self.client,
            self._queue,
            topic,
            given,
            partition,
            self.options,
            queue_size=queue_size,
            on_failure=self._partition_failed,
        )

    async def start(self) -> None:
        """Subscribe on every partition (done by ``async with`` or the first receive)."""
        if self._closed:
            raise ConsumerClosedError("consumer is closed")
        if self._started:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._started:
                return
            self.client.adopt(self)
            consumers: list[TopicConsumer] = []
            try:
                for given, topic in self._topics:
                    partitions = await self.client.partitions_for(topic)
                    if partitions == 0:
                        consumers.append(self._make(given, topic, -1, self.options.receiver_queue_size))
                        continue
                    # As the Java client does: the total across partitions stays bounded.
                    total = self.options.max_total_receiver_queue_size_across_partitions
                    size = max(1, min(self.options.receiver_queue_size, total // partitions))
                    consumers += [
                        self._make(given, partition_name(topic, index), index, size) for index in range(partitions)
                    ]
                results = await asyncio.gather(*(c.start() for c in consumers), return_exceptions=True)
                failure = next((r for r in results if isinstance(r, BaseException)), None)
                if failure is not None:
                    raise failure
            except BaseException:
                await asyncio.gather(*(c.close() for c in consumers), return_exceptions=True)
                self.client.release(self)
                raise
            self._consumers = consumers
            self._owners = set(consumers)
            self._started = True

    async def close(self) -> None:
        """Send the pending acknowledgements and close every sub-consumer; receivers get ConsumerClosedError."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.gather(*(c.close() for c in self._consumers), return_exceptions=True)
        finally:
            self._queue.close()
            self.client.release(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _partition_failed(self, consumer: TopicConsumer, error: MqwireError) -> None:
        log.error("%s failed: %s", consumer.label, error)
        self._queue.fail(error)

    # ---------------------------------------------------------------------------------- receiving
    async def receive(self, timeout: float | None = None) -> Message:
        """The next message; waits up to ``timeout`` seconds (None: until one comes or the consumer closes).

        Raises ReceiveTimeoutError after ``timeout`` and ConsumerClosedError once closed.
        """
        if not self._started:
            await self.start()
        message = self._queue.get_nowait()
        if message is None:
            message = await self._queue.get(timeout)
        message._owner.dequeued(message)
        return message

    def receive_nowait(self) -> Message | None:
        """The next message if one is queued, else None."""
        message = self._queue.get_nowait()
        if message is not None:
            message._owner.dequeued(message)
        return message

    def __aiter__(self) -> Subscriber:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except ConsumerClosedError:
            raise StopAsyncIteration from None

    @property
    def topics(self) -> list[str]:
        return [topic for _, topic in self._topics]

    def _owner_of(self, message: Message) -> TopicConsumer:
        if not isinstance(message, Message):
            raise TypeError(f"expected a Message, not {type(message).__name__}")
        owner = message._owner
        if owner not in self._owners:
            raise ValueError("the message was not received by this consumer")
        assert isinstance(owner, TopicConsumer)
        return owner


class Consumer(Subscriber):
    """A subscription; ``async with client.consumer(topics, group="name", **options) as consumer``.

    Options, with the reference clients' names and defaults: ``group`` or ``subscription`` (the
    subscription name, required), ``subscription_type`` ("Exclusive", "Shared", "Failover",
    "Key_Shared"), ``start`` ("latest" or "earliest": where a new subscription begins),
    ``receiver_queue_size`` (1000 per partition), ``max_total_receiver_queue_size_across_partitions``
    (50000), ``consumer_name``, ``ack_group_time_ms`` (100; acks leave together) and
    ``ack_group_max_size`` (1000), ``negative_ack_redelivery_delay_ms`` (60000), ``read_compacted``,
    ``properties`` (consumer metadata), ``subscription_properties``, ``priority_level``,
    ``key_shared_mode`` ("auto_split" or "sticky"), ``replicate_subscription_state``.
    """

    def __init__(self, client: Client, topics: str | Sequence[str], **options: Any) -> None:
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names:
            raise ValueError("a consumer needs at least one topic")
        built = ConsumerOptions.build(dict(options))
        super().__init__(client, names, built, f"consumer {built.subscription}")
        self.subscription = built.subscription

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def ack(self, message: Message) -> None:
        """Acknowledge one message (sent within ``ack_group_time_ms``; a batch once all of it is acked)."""
        self._owner_of(message).ack(message)

    async def ack_cumulative(self, message: Message) -> None:
        """Acknowledge ``message`` and everything before it on its partition (not for Shared subscriptions)."""
        if self.options.subscription_type_name in ("Shared", "Key_Shared"):
            raise ValueError(f"cumulative acknowledgement is not allowed on a {self.options.subscription_type_name} "
                             "subscription")
        self._owner_of(message).ack_cumulative(message)

    async def negative_ack(self, message: Message) -> None:
        """Have ``message`` delivered again after ``negative_ack_redelivery_delay_ms``.

        On Exclusive and Failover subscriptions every unacknowledged message comes again, in order.
        """
        self._owner_of(message).negative_ack(message)

    async def flush_acks(self) -> None:
        """Send the grouped acknowledgements now."""
        for consumer in self._consumers:
            consumer.flush_acks()

    async def redeliver_unacknowledged_messages(self) -> None:
        """Ask for every unacknowledged message again."""
        for consumer in self._consumers:
            consumer.redeliver_all()

    async def seek(self, target: MessageId | int | datetime) -> None:
        """Move the subscription to a message id (a topic without partitions) or a publish time (ms or datetime)."""
        if isinstance(target, MessageId):
            if len(self._consumers) != 1:
                raise ValueError("seek to a message id needs a single topic without partitions; seek by time instead")
            await self._consumers[0].seek(message_id=target)
            return
        if isinstance(target, datetime):
            millis = int(target.timestamp() * 1000)
        elif isinstance(target, int) and not isinstance(target, bool):
            millis = target
        else:
            raise TypeError(f"seek needs a MessageId, milliseconds or a datetime, not {type(target).__name__}")
        await asyncio.gather(*(c.seek(publish_time=millis) for c in self._consumers))

    async def unsubscribe(self) -> None:
        """Delete the subscription on every partition, and close."""
        if self._closed:
            raise ConsumerClosedError(f"consumer {self.subscription} is closed")
        self._closed = True
        try:
            await asyncio.gather(*(c.close(unsubscribe=True) for c in self._consumers))
        finally:
            self._queue.close()
            self.client.release(self)

    def __repr__(self) -> str:
        return f"Consumer(topics={self.topics!r}, subscription={self.subscription!r})"
