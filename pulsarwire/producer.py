"""The public producer: message arguments, partition routing, and one TopicProducer per partition."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Unpack

from mqwire.common.blocking_clients import same_arguments
from mqwire.common.errors import MqwireError, RequestTimeoutError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.serde import check_serializer, to_bytes
from mqwire.common.stats import ProducerCounters, ProducerStats
from pulsarwire.errors import ProducerClosedError, ProducerQueueIsFullError
from pulsarwire.message import Receipt
from pulsarwire.options import ProducerConfig, ProducerOptions
from pulsarwire.routing import PartitionRouter
from pulsarwire.session import Session
from pulsarwire.topic_producer import Properties, TopicProducer
from pulsarwire.topics import complete_name, partition_name
from pulsarwire.transaction import Transaction

log = logging.getLogger(__name__)

Headers = Mapping[str, bytes | str] | None


class Producer(AsyncResource):
    """Publishes to one topic; ``async with client.producer(topic, **options) as producer``.

    Values and keys are bytes (or None) unless ``value_serializer`` / ``key_serializer`` (callables
    returning bytes) are given; anything else, a ``str`` included, is a ``SerializationError`` naming the
    option. ``send`` returns a :class:`Receipt` (the message's ``MessageId``, knowing its ``topic``).

    The options (naming, sequence ids, send timeout, compression, pending-message limit, batching,
    chunking, partition routing, access mode) are described in :class:`pulsarwire.ProducerOptions`.
    """

    def __init__(self, session: Session, topic: str, **options: Unpack[ProducerOptions]) -> None:
        self._session = session
        self.topic = complete_name(topic)
        self.options = ProducerConfig.build(dict(options))
        self._key_serializer = check_serializer("key_serializer", options.get("key_serializer"))
        self._value_serializer = check_serializer("value_serializer", options.get("value_serializer"))
        schema = options.get("schema")
        if schema is not None:
            self._value_serializer = schema.encode  # checked by ProducerConfig.build
        delay_ms = self.options.batching_max_publish_delay * 1000
        self._router = PartitionRouter(
            mode=self.options.message_routing_mode,
            hashing_scheme=self.options.hashing_scheme,
            batching=self.options.batching_enabled,
            partition_switch_ms=delay_ms,
            router=self.options.message_router,
        )
        self._producers: list[TopicProducer] = []
        self._counters = ProducerCounters()
        self._partitioned = False
        # True once started: the hot path tests this flag rather than asking the lifecycle.
        self._started = False
        self._life = Lifecycle(f"producer on {self.topic}")
        self._affinity = session.affinity

    # ---------------------------------------------------------------------------------- lifecycle
    @property
    def _closed(self) -> bool:
        return self._life.closed

    async def start(self) -> None:
        """Find the partitions and create a producer on each (done by ``async with`` or the first send)."""
        self._affinity.check()
        if self._life.closed:
            raise ProducerClosedError(f"producer on {self.topic} is closed")
        if not self._started:
            await self._life.start(self._begin)

    async def _begin(self) -> None:
        self._session.adopt(self)
        try:
            partitions = await self._session.partitions_for(self.topic)
            if partitions == 0:
                producers = [TopicProducer(self._session, self.topic, -1, self.options, counters=self._counters)]
            else:
                producers = [
                    TopicProducer(
                        self._session,
                        partition_name(self.topic, index),
                        index,
                        self.options,
                        self.topic,
                        self._counters,
                    )
                    for index in range(partitions)
                ]
            results = await asyncio.gather(*(p.start() for p in producers), return_exceptions=True)
            failure = next((r for r in results if isinstance(r, BaseException)), None)
            if failure is not None:
                await asyncio.gather(*(p.close() for p in producers), return_exceptions=True)
                raise failure
        except BaseException:
            self._session.release(self)
            raise
        self._producers = producers
        self._partitioned = partitions > 0
        self._started = True
        if self._partitioned and self.options.auto_update_partitions:
            self._life.tasks.spawn(self._watch_partitions(), name="partition watch")

    async def _watch_partitions(self) -> None:
        """Look for partitions added to the topic; new ones get a producer and take part in routing."""
        while not self._closed:
            await asyncio.sleep(self.options.auto_update_partitions_interval)
            try:
                await self._add_partitions()
            except MqwireError as exc:
                log.warning("producer on %s: checking its partitions failed (%s); trying again later", self.topic, exc)

    async def _add_partitions(self) -> None:
        known = len(self._producers)
        partitions = await self._session.partitions_for(self.topic)
        if partitions <= known or self._closed:
            return
        new = [
            TopicProducer(
                self._session, partition_name(self.topic, index), index, self.options, self.topic, self._counters
            )
            for index in range(known, partitions)
        ]
        results = await asyncio.gather(*(p.start() for p in new), return_exceptions=True)
        failure = next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None or self._closed:
            await asyncio.gather(*(p.close() for p in new), return_exceptions=True)
            if isinstance(failure, MqwireError):
                raise failure
            return
        self._producers = [*self._producers, *new]
        log.info("producer on %s: %d partitions now (were %d)", self.topic, partitions, known)

    async def close(self) -> None:
        """Send what is buffered, wait (within the send timeout) for the receipts, and close. In a process
        forked after the client was made it does nothing (what is buffered and connected is the parent's)."""
        if not self._affinity.may_close():
            return
        await self._life.close(self._close)

    async def _close(self) -> None:
        # The partition watch ends first, so that no partition producer is added while closing.
        await self._life.tasks.cancel_all()
        try:
            await asyncio.gather(*(p.close() for p in self._producers))
        finally:
            self._session.release(self)

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._life.closed

    @property
    def producer_name(self) -> str | None:
        """The name the broker gave (or the one configured); per partition see ``producer_names``."""
        return self._producers[0].producer_name if self._producers else self.options.producer_name

    @property
    def producer_names(self) -> list[str | None]:
        """The name of each partition's producer, in partition order (one name without partitions)."""
        return [p.producer_name for p in self._producers]

    @property
    def partitions(self) -> int:
        """The partition count (0 for a topic without partitions)."""
        return len(self._producers) if self._partitioned else 0

    @property
    def last_sequence_id(self) -> int:
        """The highest sequence id given to a message so far, over the partitions.

        Before the first message, the starting point: ``initial_sequence_id``, or the last id the broker
        stored for the producer name; -1 before the producer started. The message with that id may still
        await the broker's confirmation.
        """
        return max((p.last_sequence_id for p in self._producers), default=-1)

    # ------------------------------------------------------------------------------------ sending
    async def enqueue(
        self,
        value: Any,
        /,
        *,
        key: Any = None,
        headers: Headers = None,
        ordering_key: bytes | str | None = None,
        event_time: int | datetime | None = None,
        deliver_at: int | datetime | None = None,
        deliver_after: float | timedelta | None = None,
        partition: int | None = None,
        transaction: Transaction | None = None,
    ) -> asyncio.Future[Receipt]:
        """Buffer one message and return the future of its receipt.

        Returns as soon as the message is in the batch; waits only while ``max_pending_messages`` are
        unconfirmed. ``value`` (bytes, or what ``value_serializer`` takes) None publishes a null value (a
        tombstone for compaction). ``key`` (bytes, or what ``key_serializer`` takes) is the partition key;
        ``headers`` become the message properties. ``event_time`` and
        ``deliver_at`` are milliseconds since the epoch or datetimes; ``deliver_after`` is seconds or a
        timedelta. ``partition`` bypasses routing. With ``transaction`` the message is part of it: sent
        unbatched, delivered only once the transaction is committed.
        """
        self._affinity.check()
        if not self._started:
            await self.start()
        null_value = False
        # The common case first: bytes and no serializer.
        if type(value) is bytes and self._value_serializer is None:
            payload = value
        else:
            data = to_bytes(value, self._value_serializer, "value")
            payload, null_value = (b"", True) if data is None else (data, False)
        if key is not None and (self._key_serializer is not None or type(key) is not bytes):
            key = to_bytes(key, self._key_serializer, "key")
        partition_text, partition_key, key_b64 = _partition_key(key)
        properties = _properties(headers) if headers else None
        ordering = None if ordering_key is None else _ordering_key(ordering_key)
        event_ms = 0 if event_time is None else _millis("event_time", event_time)
        deliver_ms = _deliver_at(deliver_at, deliver_after)
        producers = self._producers
        if not producers:
            raise ProducerClosedError(f"producer on {self.topic} is closed")
        if partition is not None:
            if not isinstance(partition, int) or not 0 <= partition < len(producers) or not self._partitioned:
                raise ValueError(f"partition {partition!r} is not a partition of {self.topic}")
            producer = producers[partition]
        elif self._partitioned:
            producer = producers[self._router.choose(partition_text, len(producers))]
        else:
            producer = producers[0]
        txn = None if transaction is None else await transaction.register_partition(producer.topic)
        while True:
            future = producer.add(
                payload, properties, partition_key, key_b64, ordering, event_ms, deliver_ms, null_value, txn
            )
            if future is not None:
                if transaction is not None:
                    transaction.track(future)
                return future
            if not self.options.block_if_queue_full:
                raise ProducerQueueIsFullError(
                    f"{self.options.max_pending_messages} messages of {producer.topic} await confirmation"
                )
            await producer.wait_for_space()

    @same_arguments(enqueue)
    async def send(self, *args: Any, **kwargs: Any) -> Receipt:
        """Publish one message and wait for the broker's receipt (its ``MessageId``, knowing its topic); the
        arguments of ``enqueue``."""
        future = await self.enqueue(*args, **kwargs)
        return await future

    async def flush(self, timeout: float | None = None) -> None:
        """Send every open batch and wait until all messages sent so far are confirmed (or failed).

        ``timeout`` (seconds; None waits as long as it takes) ends the wait with ``RequestTimeoutError``;
        the messages stay buffered and go on being sent.
        """
        self._affinity.check()
        waiting = asyncio.gather(*(p.flush() for p in self._producers))
        if timeout is None:
            await waiting
            return
        try:
            await asyncio.wait_for(waiting, timeout)
        except TimeoutError:
            raise RequestTimeoutError(f"producer on {self.topic}: flush did not end within {timeout:g} s") from None

    def stats(self) -> ProducerStats:
        """Messages, bytes and batches confirmed, SEND frames, resends after a reconnection (``retries``),
        errors, what waits for a receipt now, and send latency (from a batch's start to its receipt)."""
        producers = self._producers
        return self._counters.snapshot(
            "pulsar",
            self.topic,
            in_flight=sum(p.in_flight for p in producers),
            buffered_records=sum(p.pending_messages for p in producers),
            buffered_bytes=sum(p.buffered_bytes for p in producers),
        )

    def __repr__(self) -> str:
        return f"Producer(topic={self.topic!r}, name={self.producer_name!r}, partitions={self.partitions})"


# ------------------------------------------------------------------------------------- arguments
def _partition_key(key: bytes | None) -> tuple[str | None, bytes | None, bool]:
    """The key as routed (text), as written (UTF-8) and whether it is base64 of binary bytes."""
    if key is None:
        return None, None, False
    try:
        return key.decode(), key, False
    except UnicodeDecodeError:
        # Binary keys travel as base64 text, as the Java client's keyBytes() sends them.
        text = base64.b64encode(key).decode()
        return text, text.encode(), True


def _properties(headers: Mapping[str, bytes | str]) -> Properties:
    if not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping of str to bytes, not {type(headers).__name__}")
    pairs: Properties = []
    for name, value in headers.items():
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, not {type(name).__name__}")
        if isinstance(value, str):
            data = value.encode()
        elif isinstance(value, bytes | bytearray):
            data = bytes(value)
            try:
                data.decode()
            except UnicodeDecodeError:
                raise ValueError(f"header {name!r}: Pulsar properties are text, and this value is not UTF-8") from None
        else:
            raise TypeError(f"header {name!r} must be bytes or str, not {type(value).__name__}")
        pairs.append((name.encode(), data))
    return pairs


def _ordering_key(value: bytes | str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise TypeError(f"ordering_key must be bytes or str, not {type(value).__name__}")


def _millis(name: str, value: int | datetime) -> int:
    if isinstance(value, datetime):
        value = int(value.timestamp() * 1000)
    elif not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be a datetime or non-negative milliseconds since the epoch, not {value!r}")
    # Java reads these fields as a long: a larger value would come out negative there.
    if not 0 <= value <= _MAX_MILLIS:
        raise ValueError(f"{name} must be 0 to {_MAX_MILLIS} milliseconds since the epoch, not {value!r}")
    return value


_MAX_MILLIS = (1 << 63) - 1


def _deliver_at(at: int | datetime | None, after: float | timedelta | None) -> int | None:
    if at is not None and after is not None:
        raise ValueError("give deliver_at or deliver_after, not both")
    if at is not None:
        return _millis("deliver_at", at)
    if after is None:
        return None
    seconds = after.total_seconds() if isinstance(after, timedelta) else after
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise TypeError(f"deliver_after must be non-negative seconds or a timedelta, not {after!r}")
    return int((time.time() + seconds) * 1000)


__all__ = ["Producer"]
