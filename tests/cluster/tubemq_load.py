"""Steady TubeMQ traffic for the cluster tests: a paced producer that keeps every outcome, a reader of a
whole topic."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from dataclasses import dataclass, field

import tubemqwire
from tests.cluster.pauses import AckClock

SENDS_PER_SECOND = 200


@dataclass
class Sent:
    """What a paced producer sent: values in order, acknowledged values, failures by error class."""

    clock: AckClock = field(default_factory=AckClock)
    values: list[bytes] = field(default_factory=list)
    acknowledged: set[bytes] = field(default_factory=set)
    failures: dict[str, int] = field(default_factory=dict)
    pending: set[asyncio.Future[tubemqwire.Receipt]] = field(default_factory=set)

    def done(self, value: bytes, future: asyncio.Future[tubemqwire.Receipt]) -> None:
        """Record the outcome of the send of ``value``."""
        self.pending.discard(future)
        if future.cancelled():
            self.failures["cancelled"] = self.failures.get("cancelled", 0) + 1
        elif future.exception() is not None:
            name = type(future.exception()).__name__
            self.failures[name] = self.failures.get(name, 0) + 1
        else:
            self.acknowledged.add(value)
            self.clock.ack()


async def produce(producer: tubemqwire.Producer, sent: Sent, stop: asyncio.Event, prefix: str = "") -> None:
    """Send at a steady rate until ``stop``; a send that cannot even start is counted as failed."""
    prefix = prefix or uuid.uuid4().hex[:6]
    i = 0
    started = time.monotonic()
    while not stop.is_set():
        value = f"{prefix}-{i}".encode()
        i += 1
        sent.values.append(value)
        try:
            future = await producer.enqueue(value)
        except Exception as err:  # counted, the load goes on: what matters is what was acknowledged
            sent.failures[type(err).__name__] = sent.failures.get(type(err).__name__, 0) + 1
        else:
            sent.pending.add(future)
            future.add_done_callback(functools.partial(sent.done, value))
        ahead = i / SENDS_PER_SECOND - (time.monotonic() - started)
        if ahead > 0:
            await asyncio.sleep(ahead)


async def settle(sent: Sent, timeout: float = 120) -> None:
    """Wait until every send has an outcome."""
    async with asyncio.timeout(timeout):
        while sent.pending:
            await asyncio.sleep(0.2)


async def consume(consumer: tubemqwire.Consumer, seen: list[bytes], stop: asyncio.Event) -> None:
    """Process (record) each message, then acknowledge it: the batch is confirmed after processing."""
    while not stop.is_set():
        for message in await consumer.getmany(timeout=0.5, max_records=500):
            seen.append(message.value)
            await consumer.ack(message)


async def read_topic(
    url: str, topic: str, wanted: set[bytes], quiet_seconds: float = 15, timeout: float = 150
) -> set[bytes]:
    """Everything a new group reads from the start of ``topic``: until all of ``wanted`` came, or nothing new
    came for ``quiet_seconds``."""
    seen: set[bytes] = set()
    async with (
        tubemqwire.connect(url, heartbeat_interval_ms=1000, request_timeout_ms=5_000) as client,
        client.consumer(topic, group=f"reader-{uuid.uuid4().hex[:8]}", start="earliest") as consumer,
    ):
        last_new = time.monotonic()
        async with asyncio.timeout(timeout):
            while not wanted <= seen and time.monotonic() - last_new < quiet_seconds:
                for message in await consumer.getmany(timeout=1, max_records=1000):
                    if message.value not in seen:
                        seen.add(message.value)
                        last_new = time.monotonic()
                    await consumer.ack(message)
    return seen
