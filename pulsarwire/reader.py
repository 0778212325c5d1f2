"""The public reader: a non-durable subscription that starts where asked and needs no acknowledgements."""

from __future__ import annotations

import uuid

from pulsarwire.consumer import Subscriber
from pulsarwire.message import EARLIEST, LATEST
from pulsarwire.options import ConsumerConfig, ReaderConfig
from pulsarwire.session import Session
from pulsarwire.topic_consumer import TopicConsumer


class Reader(Subscriber):
    """Reads a topic from ``start``: ``async with client.reader(topic, start="earliest") as reader``.

    ``start`` is "latest" (the default, as for consumers), "earliest" or a MessageId (a send ``Receipt``
    too; topics without partitions; the message itself is included when ``start_inclusive``). The options
    are described in :class:`pulsarwire.ReaderOptions`. A reader needs no acknowledgements: its
    subscription is non-durable. After a reconnection the reader goes on after the last message it handed
    out.
    """

    def __init__(self, session: Session, topic: str, config: ReaderConfig) -> None:
        self._start = config.start
        self._start_inclusive = config.start_inclusive
        # A reader is an Exclusive, non-durable subscription of its own; it acknowledges nothing.
        options = ConsumerConfig.build(
            {
                "subscription": f"{config.subscription_role_prefix}-{uuid.uuid4().hex[:10]}",
                "receiver_queue_size": config.receiver_queue_size,
                "consumer_name": config.reader_name,
                "read_compacted": config.read_compacted,
                "schema": config.schema,
                "crypto_key_reader": config.crypto_key_reader,
                "crypto_failure_action": config.crypto_failure_action,
            },
            "reader",
        )
        super().__init__(
            session,
            [topic],
            options,
            f"reader of {topic}",
            key_deserializer=config.key_deserializer,
            value_deserializer=config.value_deserializer,
            schema=config.schema,
        )
        self.topic = self.topics[0]

    def _make(self, given: str, topic: str, partition: int, queue_size: int) -> TopicConsumer:
        start = self._start
        if partition >= 0 and start not in (EARLIEST, LATEST):
            raise ValueError(f"{self.topic} has partitions; a reader can start at a message id only without them")
        return TopicConsumer(
            self._session,
            self._queue,
            topic,
            given,
            partition,
            self.options,
            queue_size=queue_size,
            on_failure=self._partition_failed,
            durable=False,
            start_message_id=start,
            start_inclusive=self._start_inclusive,
            counters=self._counters,
        )

    async def has_message_available(self) -> bool:
        """Whether a message after the last one read is stored (asks the broker for its last message id)."""
        self._affinity.check()
        if not self._started:
            await self.start()
        if len(self._queue):
            return True
        for consumer in self._consumers:
            if await consumer.has_message_available():
                return True
        return False

    def __repr__(self) -> str:
        return f"Reader(topic={self.topic!r})"


__all__ = ["Reader"]
