"""The public consumer: one subscription over one or more topics, every partition feeding one queue."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

from mqwire.common.contract import Deserializer
from mqwire.common.errors import MqwireError, ReceiveTimeoutError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.options import check_non_negative
from mqwire.common.serde import Deserializing
from mqwire.common.stats import ConsumerCounters, ConsumerStats, PartitionLag
from pulsarwire.dead_letter import DeadLetters
from pulsarwire.errors import ConsumerClosedError
from pulsarwire.message import EARLIEST, LATEST, Message, MessageId
from pulsarwire.options import ConsumerConfig, ConsumerOptions
from pulsarwire.protocol.pulsar_api_pb2 import CommandSubscribe
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.schema import Schema
from pulsarwire.session import Session
from pulsarwire.topic_consumer import TopicConsumer
from pulsarwire.topic_pattern import TopicPattern, TopicWatch
from pulsarwire.topics import complete_name, partition_name
from pulsarwire.transaction import Transaction
from pulsarwire.writer_schemas import WriterSchemas

log = logging.getLogger(__name__)


class Subscriber(AsyncResource):
    """What consumers and readers share: sub-consumers per partition merged into one receive queue."""

    def __init__(
        self,
        session: Session,
        topics: Sequence[str],
        options: ConsumerConfig,
        name: str,
        pattern: TopicPattern | None = None,
        *,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        schema: Schema[Any] | None = None,
    ) -> None:
        self._session = session
        # With a schema, each value is read with its writer's schema (fetched by version) resolved to it.
        self._writers = None if schema is None else WriterSchemas(session, schema)
        if self._writers is not None:
            self._gate: Deserializing[Message] = Deserializing(
                key_deserializer, self._writers.decode, _position, value_sees_message=True
            )
        else:
            self._gate = Deserializing(key_deserializer, value_deserializer, _position)
        # Messages are held only when a deserializer fails: without deserializers the gate is skipped entirely.
        self._gated = key_deserializer is not None or value_deserializer is not None or schema is not None
        self.options = options
        self._topics = [(topic, complete_name(topic)) for topic in topics]
        if len({full for _, full in self._topics}) != len(self._topics):
            raise ValueError(f"topics {list(topics)!r} name the same topic twice")
        self._pattern = pattern
        self._name = name
        self._queue = ReceiveQueue(name, session.memory)
        self._counters = ConsumerCounters()
        self._consumers: list[TopicConsumer] = []
        self._owners: set[TopicConsumer] = set()
        # Per subscribed topic: its partition count (0: none) and its sub-consumers.
        self._partitions: dict[str, int] = {}
        self._by_topic: dict[str, list[TopicConsumer]] = {}
        # True once started: the hot path tests this flag rather than asking the lifecycle.
        self._started = False
        self._life = Lifecycle(name)
        self._affinity = session.affinity
        self._topic_watch: TopicWatch | None = None
        self._topics_lock = asyncio.Lock()
        self.dead_letters: DeadLetters | None = None

    # ---------------------------------------------------------------------------------- lifecycle
    def _make(self, given: str, topic: str, partition: int, queue_size: int) -> TopicConsumer:
        return TopicConsumer(
            self._session,
            self._queue,
            topic,
            given,
            partition,
            self.options,
            queue_size=queue_size,
            on_failure=self._partition_failed,
            dead_letters=self.dead_letters,
            counters=self._counters,
        )

    @property
    def _closed(self) -> bool:
        return self._life.closed

    async def start(self) -> None:
        """Subscribe on every partition (done by ``async with`` or the first receive)."""
        self._affinity.check()
        if self._life.closed:
            raise ConsumerClosedError(f"{self._name} is closed")
        if not self._started:
            await self._life.start(self._begin)

    async def _begin(self) -> None:
        self._session.adopt(self)
        try:
            topics = list(self._topics)
            if self._pattern is not None:
                topics += [(t, t) for t in await self._pattern.matching(self._session) if t not in dict(topics)]
            await asyncio.gather(*(self._subscribe(given, topic) for given, topic in topics))
        except BaseException:
            await asyncio.gather(*(c.close() for c in self._consumers), return_exceptions=True)
            self._consumers, self._owners, self._by_topic, self._partitions = [], set(), {}, {}
            self._session.release(self)
            raise
        self._started = True
        if self._pattern is not None:
            await self._start_topic_watch(self._pattern)
        if self._pattern is not None or self.options.auto_update_partitions:
            self._life.tasks.spawn(self._watch(), name="topic and partition watch")

    async def _start_topic_watch(self, pattern: TopicPattern) -> None:
        """Have the broker push topic changes (where it can); the periodic check stays as a fallback."""
        try:
            watch = await TopicWatch.start(self._session, pattern, self._topics_changed, self._topic_watch_lost)
        except MqwireError as exc:
            log.warning("%s: no topic-list watch (%s); checking every %g s", self._name, exc,
                        self.options.pattern_auto_discovery_period)
            return
        if watch is None:
            return
        self._topic_watch = watch
        # Topics that appeared between the first listing and the watch.
        self._topics_changed([t for t in watch.topics if t not in self._partitions], [])

    def _topic_watch_lost(self) -> None:
        self._topic_watch = None

    def _topics_changed(self, added: list[str], removed: list[str]) -> None:
        if self._closed or not (added or removed):
            return
        self._life.tasks.spawn(self._apply_topic_changes(added, removed), name="topic changes")

    async def _apply_topic_changes(self, added: list[str], removed: list[str]) -> None:
        fixed = {topic for _, topic in self._topics}
        async with self._topics_lock:
            try:
                for topic in added:
                    if topic not in self._partitions and not self._closed:
                        await self._subscribe(topic, topic)
                for topic in removed:
                    if topic in self._partitions and topic not in fixed:
                        await self._unsubscribe_topic(topic)
            except MqwireError as exc:
                log.warning("%s: following topic changes failed (%s); the periodic check retries", self._name, exc)

    async def _subscribe(self, given: str, topic: str) -> None:
        """Subscribe to ``topic``, or to the partitions it gained since; raises when any subscription fails."""
        known = self._partitions.get(topic)
        partitions = await self._session.partitions_for(topic)
        if known is not None and (known == 0 or partitions <= known):
            return
        if partitions == 0:
            new = [self._make(given, topic, -1, self.options.receiver_queue_size)]
        else:
            # As the Java client does: the total across partitions stays bounded.
            total = self.options.max_total_receiver_queue_size_across_partitions
            size = max(1, min(self.options.receiver_queue_size, total // partitions))
            new = [
                self._make(given, partition_name(topic, index), index, size)
                for index in range(known or 0, partitions)
            ]
        # Known as owners before they start: a partition that starts first delivers at once, and the application
        # may acknowledge its messages while the others are still subscribing.
        self._owners.update(new)
        results = await asyncio.gather(*(c.start() for c in new), return_exceptions=True)
        failure = next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None or self._closed:
            await self._drop(new)
            if failure is not None:
                raise failure
            return
        self._partitions[topic] = partitions
        self._by_topic.setdefault(topic, []).extend(new)
        self._consumers = [*self._consumers, *new]
        if known is not None:
            log.info("%s: %s grew from %d to %d partitions", self._name, topic, known, partitions)

    async def _unsubscribe_topic(self, topic: str) -> None:
        gone = self._by_topic.pop(topic, [])
        self._partitions.pop(topic, None)
        self._consumers = [c for c in self._consumers if c not in gone]
        await self._drop(gone)

    async def _drop(self, consumers: list[TopicConsumer]) -> None:
        """Close partition consumers and forget them and the messages they queued."""
        await asyncio.gather(*(c.close() for c in consumers), return_exceptions=True)
        self._owners.difference_update(consumers)
        for consumer in consumers:
            self._queue.remove_owner(consumer)

    async def _watch(self) -> None:
        """Follow new partitions, and with a pattern, topics that appear or vanish in the namespace."""
        loop = asyncio.get_running_loop()
        options = self.options
        periods = []
        if options.auto_update_partitions:
            periods.append(options.auto_update_partitions_interval)
        if self._pattern is not None:
            periods.append(options.pattern_auto_discovery_period)
        tick = min(periods)
        next_partitions = next_pattern = loop.time()
        while not self._closed:
            await asyncio.sleep(tick)
            now = loop.time()
            try:
                if self._pattern is not None and now >= next_pattern + options.pattern_auto_discovery_period:
                    next_pattern = now
                    async with self._topics_lock:
                        await self._recheck_pattern(self._pattern)
                    if self._topic_watch is None:
                        await self._start_topic_watch(self._pattern)
                if options.auto_update_partitions and now >= next_partitions + options.auto_update_partitions_interval:
                    next_partitions = now
                    for topic in list(self._partitions):
                        if self._partitions.get(topic, 0) > 0:
                            await self._subscribe(topic, topic)
            except MqwireError as exc:
                log.warning("%s: checking topics and partitions failed (%s); trying again later",
                            self._name, exc)

    async def _recheck_pattern(self, pattern: TopicPattern) -> None:
        matching = set(await pattern.matching(self._session))
        fixed = {topic for _, topic in self._topics}
        for topic in matching - set(self._partitions):
            await self._subscribe(topic, topic)
        for topic in set(self._partitions) - matching - fixed:
            await self._unsubscribe_topic(topic)

    async def close(self) -> None:
        """Send the pending acknowledgements and close every sub-consumer; receivers get ConsumerClosedError.

        In a process forked after the client was made it does nothing: the subscription is the parent's."""
        if not self._affinity.may_close():
            return
        await self._life.close(self._close)

    async def _close(self, unsubscribe: bool = False) -> None:
        await self._stop_watching()
        try:
            results = await asyncio.gather(
                *(c.close(unsubscribe=unsubscribe) for c in self._consumers), return_exceptions=True
            )
            failure = next((r for r in results if isinstance(r, BaseException)), None)
            if unsubscribe and failure is not None:
                raise failure
        finally:
            if self.dead_letters is not None:
                await self.dead_letters.close()
            self._queue.close()
            self._session.release(self)

    async def _stop_watching(self) -> None:
        # The watches end first, so that no sub-consumer is added while closing.
        await self._life.tasks.cancel_all()
        watch, self._topic_watch = self._topic_watch, None
        if watch is not None:
            await watch.close(self._session.operation_timeout)

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._life.closed

    def _partition_failed(self, consumer: TopicConsumer, error: MqwireError) -> None:
        log.error("%s failed: %s", consumer.label, error)
        self._queue.fail(error)

    # ---------------------------------------------------------------------------------- receiving
    async def receive(self, timeout: float | None = None) -> Message:
        """The next message; waits up to ``timeout`` seconds (None: until one comes or the consumer closes).

        Raises ReceiveTimeoutError (a ``TimeoutError``) after ``timeout``, ConsumerClosedError once closed,
        and DeserializationError for a message a deserializer failed on, until ``skip(error.message)``.
        """
        self._affinity.check()
        if not self._started:
            await self.start()
        if self._gated:
            gate = self._gate
            held = gate.take_held(1)
            message = held[0] if held else await self._take(timeout)
            if self._writers is not None and self._writers.missing((message,)):
                await self._prepare([message])
            return gate.one(message)
        return await self._take(timeout)

    async def _prepare(self, messages: list[Message]) -> None:
        """Fetch the writers' schemas ``messages`` need; if cancelled meanwhile, they wait first in line."""
        assert self._writers is not None
        try:
            await self._writers.prepare(messages)
        except BaseException:
            self._gate.hold_back(messages)
            raise

    async def _take(self, timeout: float | None) -> Message:
        message = self._queue.get_nowait()
        if message is None:
            message = await self._queue.get(timeout)
        message._owner.dequeued(message)
        return message

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> list[Message]:
        """The messages queued now, or the first ones to come within ``timeout`` seconds; ``[]`` when none came.

        At most ``max_records`` (None: every message queued). Raises DeserializationError only when the
        first message fails its deserializer; the good ones before a failure are returned first.
        """
        self._affinity.check()
        if max_records is not None and (
            isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
        ):
            raise ValueError(f"max_records must be a positive int or None, got {max_records!r}")
        wait = check_non_negative("timeout", timeout)
        if not self._started:
            await self.start()
        gate = self._gate
        messages = gate.take_held(max_records) if gate.held else []
        queue = self._queue
        if not messages:
            first = queue.get_nowait()
            if first is None:
                if wait <= 0:
                    return []
                try:
                    first = await queue.get(wait)
                except ReceiveTimeoutError:
                    return []
            first._owner.dequeued(first)
            messages.append(first)
        while max_records is None or len(messages) < max_records:
            try:
                message = queue.get_nowait()
            except MqwireError:
                break  # the consumer failed or closed: the next call raises it
            if message is None:
                break
            message._owner.dequeued(message)
            messages.append(message)
        if self._writers is not None and self._writers.missing(messages):
            await self._prepare(messages)
        return gate.many(messages) if self._gated else messages

    async def batch_receive(self, *, timeout: float = 0, max_records: int | None = None) -> list[Message]:
        """``getmany`` under the name of the pulsar-client method."""
        return await self.getmany(timeout=timeout, max_records=max_records)

    def skip(self, message: object) -> None:
        """Go on past the message of a DeserializationError (``error.message``).

        A consumer also acknowledges it (see ``Consumer.skip``); a reader just moves on.
        """
        if not isinstance(message, Message):
            raise TypeError(f"skip() takes a Message, not {type(message).__name__}")
        self._affinity.check()
        self._gate.skip(message)

    async def seek_to_beginning(self) -> None:
        """Rewind every partition to its first retained message (SEEK to the earliest id)."""
        await self._seek_all(EARLIEST)

    async def seek_to_end(self) -> None:
        """Skip every partition to its end: only messages published afterwards are received."""
        await self._seek_all(LATEST)

    async def _seek_all(self, target: MessageId) -> None:
        self._affinity.check()
        if not self._started:
            await self.start()
        await asyncio.gather(*(c.seek(message_id=target) for c in self._consumers))
        self._gate.discard(lambda message: False)

    async def seek(self, target: MessageId | int | datetime) -> None:
        """Move to a message id (a topic without partitions; that message is read next) or to the first message
        published at or after a time (milliseconds since the epoch, or a datetime; every partition).

        Messages queued and not yet received are dropped; a reader then goes on from there too."""
        self._affinity.check()
        if not self._started:
            await self.start()
        if isinstance(target, MessageId):
            if len(self._consumers) != 1:
                raise ValueError("seek to a message id needs a single topic without partitions; seek by time instead")
            await self._consumers[0].seek(message_id=target)
            self._gate.discard(lambda message: False)
            return
        if isinstance(target, datetime):
            millis = int(target.timestamp() * 1000)
        elif isinstance(target, int) and not isinstance(target, bool):
            millis = target
        else:
            raise TypeError(f"seek needs a MessageId, milliseconds or a datetime, not {type(target).__name__}")
        await asyncio.gather(*(c.seek(publish_time=millis) for c in self._consumers))
        self._gate.discard(lambda message: False)

    def receive_nowait(self) -> Message | None:
        """The next message if one is queued, else None."""
        self._affinity.check()
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
        """The complete names of the topics subscribed (with a pattern: those matched so far)."""
        fixed = [topic for _, topic in self._topics]
        return fixed + [topic for topic in self._partitions if topic not in fixed]

    def stats(self) -> ConsumerStats:
        """Messages handed out, entries and payload bytes pushed by the broker, FLOW commands, active-consumer
        changes (``rebalances``), what waits in the receiver queue, and the backlog per partition.

        The lag is the subscription's backlog as the broker reports it to a consumer (CONSUMER_STATS): entries
        not yet acknowledged by the subscription, delivered ones included, a batch counting as one entry; as of
        the last ``refresh_lag()``, None before one."""
        lag = [PartitionLag(c.given_topic, c.partition, None, None, c.backlog) for c in self._consumers]
        topics = sorted({c.given_topic for c in self._consumers} | {given for given, _ in self._topics})
        return self._counters.snapshot("pulsar", topics, buffered_records=len(self._queue), lag=lag)

    def _owner_of(self, message: Message) -> TopicConsumer:
        self._affinity.check()
        if not isinstance(message, Message):
            raise TypeError(f"expected a Message, not {type(message).__name__}")
        owner = message._owner
        if owner not in self._owners:
            raise ValueError("the message was not received by this consumer")
        assert isinstance(owner, TopicConsumer)
        return owner


class Consumer(Subscriber):
    """A subscription; ``async with client.consumer(topics, group="name", **options) as consumer``.

    ``group`` (or ``subscription``) names the subscription; it and the other options (subscription type,
    starting position, deserializers, queue sizes, acknowledgement grouping and timeouts, dead letters and
    retries, following partitions and patterns) are described in :class:`pulsarwire.ConsumerOptions`.

    ``topics`` is a name, a list of names, or a compiled regular expression over complete topic names of
    one namespace (``re.compile("persistent://public/default/orders-.*")``): the consumer subscribes to
    every matching topic and looks for new and deleted ones every ``pattern_auto_discovery_period_ms``.
    """

    def __init__(
        self, session: Session, topics: str | Sequence[str] | re.Pattern[str], **options: Unpack[ConsumerOptions]
    ) -> None:
        pattern = None
        if isinstance(topics, re.Pattern):
            pattern, names = TopicPattern(topics), []
        else:
            names = [topics] if isinstance(topics, str) else list(topics)
            if not names:
                raise ValueError("a consumer needs at least one topic")
        built = ConsumerConfig.build(dict(options))
        dead_letters = None
        if built.dead_letter_policy is not None:
            if built.subscription_type not in (CommandSubscribe.Shared, CommandSubscribe.Key_Shared):
                raise ValueError("option dead_letter_policy works with Shared and Key_Shared subscriptions only")
            policy = built.dead_letter_policy
            if len(names) != 1 and (policy.dead_letter_topic is None or (built.retry_enable and
                                    policy.retry_letter_topic is None)):
                raise ValueError("option dead_letter_policy: name dead_letter_topic (and retry_letter_topic) "
                                 "when the consumer has several topics or a pattern")
            dead_letters = DeadLetters(session, policy, names[0] if names else "-", built.subscription)
            if built.retry_enable and dead_letters.retry_topic not in {complete_name(n) for n in names}:
                names.append(dead_letters.retry_topic)
        super().__init__(
            session,
            names,
            built,
            f"consumer {built.subscription}",
            pattern,
            key_deserializer=options.get("key_deserializer"),
            value_deserializer=options.get("value_deserializer"),
            schema=options.get("schema"),
        )
        self.dead_letters = dead_letters
        self.subscription = built.subscription

    def skip(self, message: object) -> None:
        """Go on past the message of a DeserializationError (``error.message``) and acknowledge it.

        Skipping is the application saying the message is dealt with, as in the other two clients; a message
        that should come back later is ``negative_ack``-ed instead.
        """
        super().skip(message)
        assert isinstance(message, Message)  # checked by the base class
        self._owner_of(message).ack(message)

    async def ack(self, message: Message, *, transaction: Transaction | None = None) -> None:
        """Acknowledge one message (sent within ``ack_group_time_ms``; a batch once all of it is acked).

        With ``transaction`` the acknowledgement is sent at once and applied only when the transaction commits.
        """
        owner = self._owner_of(message)
        if transaction is None:
            owner.ack(message)
            return
        txn = await transaction.register_subscription(owner.topic, self.subscription)
        done = self._life.tasks.spawn(owner.ack_in_transaction(message, txn), name="ack in a transaction", awaited=True)
        transaction.track(done)
        await done

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

    async def reconsume_later(self, message: Message, delay: float | timedelta) -> None:
        """Have ``message`` come again after ``delay`` (seconds) through the retry topic, and ack it here.

        Needs ``retry_enable``; after ``max_redeliver_count`` retries it goes to the dead-letter topic.
        """
        owner = self._owner_of(message)
        if self.dead_letters is None or not self.options.retry_enable:
            raise ValueError("reconsume_later needs the options retry_enable=True and a dead_letter_policy")
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise TypeError(f"delay must be non-negative seconds or a timedelta, not {delay!r}")
        await self.dead_letters.reconsume_later(message, float(seconds))
        owner.ack(message)

    async def refresh_lag(self) -> ConsumerStats:
        """Ask the broker for the backlog of every partition (CONSUMER_STATS), then return ``stats()``.

        The grouped acknowledgements are sent first, so that what was acknowledged counts."""
        self._affinity.check()
        for consumer in self._consumers:
            consumer.flush_acks()
        await asyncio.gather(*(c.refresh_backlog() for c in self._consumers if c.connection is not None))
        return self.stats()

    async def flush_acks(self) -> None:
        """Send the grouped acknowledgements now."""
        self._affinity.check()
        for consumer in self._consumers:
            consumer.flush_acks()

    async def redeliver_unacknowledged_messages(self) -> None:
        """Ask for every unacknowledged message again."""
        self._affinity.check()
        for consumer in self._consumers:
            consumer.redeliver_all()

    async def unsubscribe(self) -> None:
        """Delete the subscription on every partition, and close."""
        self._affinity.check()
        if self._life.closed:
            raise ConsumerClosedError(f"consumer {self.subscription} is closed")
        await self._life.close(lambda: self._close(unsubscribe=True))

    def __repr__(self) -> str:
        return f"Consumer(topics={self.topics!r}, subscription={self.subscription!r})"


def _position(message: Message) -> MessageId:
    return message.message_id

