"""Retry and dead-letter topics: where a subscription sends messages it gave up on, or wants later.

A message that has been redelivered ``max_redeliver_count`` times is, at its next redelivery (negative
ack or ack timeout), published to the dead-letter topic and acknowledged instead. ``reconsume_later``
publishes a copy to the retry topic with a delivery delay (the consumer subscribes to that topic too) and
acknowledges the original; after ``max_redeliver_count`` retries the copy goes to the dead-letter topic.
The property names are those of the reference clients, so that their consumers read these messages alike.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pulsarwire.errors import ConsumerClosedError
from pulsarwire.message import Message
from pulsarwire.options import DLQ_SUFFIX, RETRY_SUFFIX, DeadLetterPolicy
from pulsarwire.producer import Producer
from pulsarwire.topics import complete_name

if TYPE_CHECKING:
    from pulsarwire.session import Session

log = logging.getLogger(__name__)

REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RETRY_TOPIC = "RETRY_TOPIC"
RECONSUME_TIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"


class DeadLetters:
    """The retry and dead-letter producers of one consumer, created when first needed."""

    def __init__(self, session: Session, policy: DeadLetterPolicy, topic: str, subscription: str) -> None:
        self._session = session
        self.policy = policy
        base = complete_name(topic)
        self.dead_letter_topic = complete_name(policy.dead_letter_topic or f"{base}-{subscription}{DLQ_SUFFIX}")
        self.retry_topic = complete_name(policy.retry_letter_topic or f"{base}-{subscription}{RETRY_SUFFIX}")
        self._producers: dict[str, Producer] = {}
        self._creating = asyncio.Lock()
        self._closed = False

    @property
    def max_redeliver_count(self) -> int:
        return self.policy.max_redeliver_count

    async def _producer(self, topic: str) -> Producer:
        async with self._creating:
            if self._closed:
                raise ConsumerClosedError(f"the consumer sending to {topic} is closed")
            producer = self._producers.get(topic)
            if producer is None:
                initial = self.policy.initial_subscription_name if topic == self.dead_letter_topic else None
                # One message per entry, as the reference clients do: each can be consumed and acked alone.
                producer = Producer(
                    self._session,
                    topic,
                    batching_enabled=False,
                    initial_subscription_name=initial,
                    auto_update_partitions=False,
                )
                await producer.start()
                self._producers[topic] = producer
            return producer

    async def send_to_dead_letter(self, messages: list[Message]) -> None:
        """Publish ``messages`` to the dead-letter topic; raises when any of them was not stored."""
        producer = await self._producer(self.dead_letter_topic)
        futures = []
        for message in messages:
            headers = dict(message.headers)
            headers.setdefault(REAL_TOPIC, message.topic_name.encode())
            headers.setdefault(ORIGIN_MESSAGE_ID, str(message.message_id).encode())
            futures.append(await producer.enqueue(
                message.payload,
                key=message.raw_key,
                headers=headers,
                ordering_key=message.ordering_key,
                event_time=message.event_time,
            ))
        await asyncio.gather(*futures)

    async def reconsume_later(self, message: Message, delay: float) -> None:
        """Publish ``message`` to the retry topic (or, past the limit, the dead-letter topic)."""
        headers = dict(message.headers)
        times = _int(headers.get(RECONSUME_TIMES)) + 1
        headers[RECONSUME_TIMES] = str(times).encode()
        headers[DELAY_TIME] = str(int(delay * 1000)).encode()
        headers.setdefault(REAL_TOPIC, message.topic_name.encode())
        headers.setdefault(ORIGIN_MESSAGE_ID, str(message.message_id).encode())
        headers[RETRY_TOPIC] = self.retry_topic.encode()
        if times > self.max_redeliver_count:
            producer = await self._producer(self.dead_letter_topic)
            await producer.send(
                message.payload, key=message.raw_key, headers=headers, ordering_key=message.ordering_key,
                event_time=message.event_time,
            )
            return
        producer = await self._producer(self.retry_topic)
        await producer.send(
            message.payload,
            key=message.raw_key,
            headers=headers,
            ordering_key=message.ordering_key,
            event_time=message.event_time,
            deliver_after=delay if delay > 0 else None,
        )

    async def close(self) -> None:
        self._closed = True
        producers, self._producers = list(self._producers.values()), {}
        await asyncio.gather(*(p.close() for p in producers), return_exceptions=True)


def _int(value: bytes | None) -> int:
    try:
        return int(value) if value else 0
    except ValueError:
        return 0
