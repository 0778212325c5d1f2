"""The TubeMQ consumer, balanced by the master (the reference client's pull consumer).

The master assigns partitions through rebalance instructions carried by heartbeat answers; the consumer
claims them at their brokers, fetches batch after batch, and confirms each batch once the application
has acknowledged all its messages (``await consumer.ack(message)``). Unacknowledged batches are given back
after ``confirm_timeout_ms`` and served again, to this consumer or another member of the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Self

from mqwire.common.errors import ClosedError, MqwireError, ReceiveTimeoutError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.options import check_type
from mqwire.common.serde import Deserializing
from mqwire.common.stats import ConsumerCounters, ConsumerStats, PartitionLag
from tubemqwire import identity
from tubemqwire.assignment import Assignment
from tubemqwire.consumer_membership import ConsumerMembership
from tubemqwire.fetcher import INDEX_ENTRY_SIZE, Batch, FetchSettings
from tubemqwire.master import Membership
from tubemqwire.member import Member
from tubemqwire.message import Message
from tubemqwire.names import check_msg_types, check_topics
from tubemqwire.options import ConsumerConfig
from tubemqwire.protocol import broker as broker_proto
from tubemqwire.protocol.consumer import RebalanceEvent
from tubemqwire.protocol.metadata import parse_partition_key
from tubemqwire.session import Session

log = logging.getLogger(__name__)

def _msg_type_filters(msg_types: object, topics: Sequence[str]) -> dict[str, frozenset[str]]:
    """``msg_types`` for every topic, or a mapping of topic to types (topics left out are not filtered)."""
    if isinstance(msg_types, Mapping):
        filters = {}
        for topic, types in msg_types.items():
            if topic not in topics:
                raise ValueError(f"option msg_types names topic {topic!r}, which is not consumed")
            filters[topic] = check_msg_types(types, f"msg_types[{topic!r}]")
        return {topic: types for topic, types in filters.items() if types}
    types = check_msg_types(msg_types)
    return {topic: types for topic in topics} if types else {}


def _position(message: Message) -> int:
    return message.message_id


def _still_valid(message: Message) -> bool:
    batch = message.batch
    return isinstance(batch, Batch) and batch.valid


class Consumer(AsyncResource):
    """Consumes ``topics`` as a member of ``group``; ``async with client.consumer(...) as consumer``.

    Made by :meth:`tubemqwire.Client.consumer`, which describes the options. ``topics`` (sorted, without
    duplicates) and ``group`` are readable attributes; ``client_id`` is the id the master and brokers know
    this consumer by once started.

    Partitions are named by their keys, ``brokerId:topic:partitionId`` (``message.partition_key``).
    """

    def __init__(self, session: Session, topics: str | Sequence[str], config: ConsumerConfig) -> None:
        self._session = session
        self.topics = check_topics(topics)
        self.group = config.group if config.group is not None else f"mqwire_{secrets.token_hex(8)}"
        self.start_position = config.start
        self.msg_types = _msg_type_filters(config.msg_types, self.topics)
        self.confirm_timeout = config.confirm_timeout
        self.no_data_wait = config.msg_not_found_wait
        self.rebalance_wait = config.rebalance_confirm_wait
        deserializers = config.key_deserializer, config.value_deserializer
        self._gate: Deserializing[Message] = Deserializing(*deserializers, _position)
        # Fetched messages in order; ``_arrived`` wakes a waiting reader for new messages or a changed state
        # (closed or failed). A batch goes in at once: the per-message path stays a deque pop.
        self._ready: deque[Message] = deque()
        self._arrived = asyncio.Event()
        self._events: asyncio.Queue[RebalanceEvent] = asyncio.Queue()
        self._settings: FetchSettings | None = None
        self._counters = ConsumerCounters()
        self._assignment: Assignment | None = None
        self._membership: Membership | None = None
        self._rebalancer: asyncio.Task[None] | None = None
        self._rebalancing = False
        self._failure: MqwireError | None = None
        self._lifecycle = Lifecycle("TubeMQ consumer")
        self._affinity = session.affinity
        self.client_id = ""

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Register with the master; partitions follow as the master balances the group."""
        self._affinity.check()
        await self._lifecycle.start(self._start)

    async def _start(self) -> None:
        session = self._session
        await session.start()
        self.client_id = identity.consumer_id(self.group, session.host)
        settings = FetchSettings(
            client_id=self.client_id,
            group=self.group,
            brokers=session.brokers,
            credentials=session.credentials(),
            request_timeout=session.request_timeout,
            no_data_wait=self.no_data_wait,
            confirm_timeout=self.confirm_timeout,
            counters=self._counters,
        )
        self._settings = settings
        assignment = Assignment(
            settings,
            start=self.start_position,
            msg_types=self.msg_types,
            deliver=self._deliver,
            on_change=self._assignment_changed,
            heartbeat_interval=session.heartbeat_interval,
            release_wait=self.rebalance_wait,
        )
        self._assignment = assignment
        try:
            await self._join(assignment)
        except BaseException:
            await self._teardown()
            raise
        assignment.start()

    def _member(self, assignment: Assignment) -> Member:
        """Who this consumer is to the master."""
        credentials = assignment.settings.credentials
        return self._session.member(self.client_id, self.topics, credentials, group=self.group, filters=self.msg_types)

    async def _join(self, assignment: Assignment) -> None:
        """Register with the master and follow its rebalance instructions."""
        membership = ConsumerMembership(
            self._session.master,
            self._member(assignment),
            subscriptions=assignment.subscriptions,
            on_event=self._events.put_nowait,
            on_failure=self._fail,
        )
        self._membership = membership
        await membership.start()
        self._rebalancer = self._lifecycle.tasks.spawn(self._rebalance(assignment, membership), name="rebalance")

    async def close(self) -> None:
        """Release the partitions (unacknowledged batches go back to the group) and leave the group.

        In a process forked after the client was made it does nothing: the partitions are the parent's."""
        if not self._affinity.may_close():
            return
        await self._lifecycle.close(self._close)

    async def _close(self) -> None:
        self._arrived.set()
        await self._teardown()
        self._session.release(self)

    async def _teardown(self) -> None:
        task, self._rebalancer = self._rebalancer, None
        if task is not None:
            if self._rebalancing:
                # A claim cut short would leave the broker holding a partition for us that we never release.
                await asyncio.wait({task}, timeout=self._session.request_timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._assignment is not None:
            await self._assignment.stop()
            await self._assignment.release_all(wait=0)
        if self._membership is not None:
            await self._membership.stop(timeout=self._session.request_timeout)

    @property
    def assignment(self) -> frozenset[str]:
        """Keys (``brokerId:topic:partitionId``) of the partitions this consumer holds now."""
        return self._assignment.partition_keys if self._assignment is not None else frozenset()

    # ----------------------------------------------------------------------------------- internals
    async def _rebalance(self, assignment: Assignment, membership: ConsumerMembership) -> None:
        while True:
            event = await self._events.get()
            self._rebalancing = True
            self._counters.rebalances += 1
            try:
                outcome = await assignment.handle(event)
            finally:
                self._rebalancing = False
            membership.report(outcome)

    def _assignment_changed(self) -> None:
        # The master learns what we hold from our heartbeats: tell it soon.
        if self._membership is not None:
            self._membership.wake()

    def _deliver(self, messages: Sequence[Message]) -> None:
        counters = self._counters
        counters.batches += 1
        counters.bytes += sum(len(m.value) for m in messages if m.value is not None)
        self._ready.extend(messages)
        self._arrived.set()

    def _fail(self, error: MqwireError) -> None:
        self._failure = error
        self._arrived.set()

    def _started_assignment(self) -> Assignment:
        self._affinity.check()
        self._lifecycle.check_open()
        if not self._lifecycle.started or self._assignment is None:
            raise ClosedError("consumer is not started: use 'async with client.consumer(...)'")
        return self._assignment

    # ------------------------------------------------------------------------------------- reading
    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except ClosedError:
            if self._lifecycle.closed:
                raise StopAsyncIteration from None
            raise

    async def receive(self, timeout: float | None = None) -> Message:
        """The next message; ``ReceiveTimeoutError`` (a ``TimeoutError``) after ``timeout`` seconds,
        ``ClosedError`` once closed, ``DeserializationError`` when a deserializer fails on it."""
        self._affinity.check()
        gate = self._gate
        if gate.active:
            held = gate.take_held(1)
            if held:
                return gate.one(held[0])
            return gate.one(self._take() or await self._wait(timeout))
        message = self._take()
        if message is not None:
            return message  # the common case: no timer, no wait
        return await self._wait(timeout)

    getone = receive
    """The same as ``receive`` (aiokafka's name)."""

    async def getmany(self, *, timeout: float | None = 0, max_records: int | None = None) -> list[Message]:
        """The messages ready now, or the first to arrive within ``timeout`` seconds with those ready
        then (at most ``max_records``); ``[]`` when none came. ``timeout=None`` waits for one."""
        self._affinity.check()
        if max_records is not None and check_type("max_records", max_records, int) < 1:
            raise ValueError(f"max_records must be at least 1, got {max_records}")
        gate = self._gate
        if gate.active:
            held = gate.take_held(max_records)
            if held:
                return gate.many(held)
        batch = self._take_many(max_records)
        if not batch and (timeout is None or timeout > 0):
            try:
                first = await self._wait(timeout)
            except ReceiveTimeoutError:
                return []
            batch = [first, *self._take_many(None if max_records is None else max_records - 1)]
        return gate.many(batch) if gate.active else batch

    async def _wait(self, timeout: float | None) -> Message:
        """Wait for the next message."""
        if not self._lifecycle.started and not self._lifecycle.closed:
            raise ClosedError("consumer is not started: use 'async with client.consumer(...)'")
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                while True:
                    message = self._take()
                    if message is not None:
                        return message
                    self._arrived.clear()
                    await self._arrived.wait()
        except TimeoutError:
            if deadline.expired():
                raise ReceiveTimeoutError(f"no message within {timeout} s") from None
            raise

    def _take(self) -> Message | None:
        """The next message still valid (its batch not given back), or None; raises once failed or closed."""
        if self._failure is not None:
            raise self._failure
        if self._lifecycle.closed:
            raise ClosedError("consumer is closed")
        ready = self._ready
        while ready:
            message = ready.popleft()
            batch = message.batch
            if isinstance(batch, Batch) and batch.valid:
                self._counters.records += 1
                return message
        return None

    def stats(self) -> ConsumerStats:
        """Messages handed out, fetched batches and their value bytes, GetMessage requests, errors, rebalance
        events handled, messages waiting, and the lag per partition.

        A partition's lag is the broker's max offset minus the group's read offset, as the broker last said them
        (in its GetMessage and commit answers), in messages: the offsets are positions in the broker's index, 28
        bytes a message, and ``position`` and ``end`` are given as the broker sends them. The partitions of one
        topic store share that index, so the lag counts the messages of the store (with the default of one
        store per topic: of the topic) not yet read by the group; 0 once everything is confirmed."""
        lag = []
        if self._assignment is not None:
            for fetcher in self._assignment.fetchers.values():
                position, end = fetcher.position, fetcher.end
                behind = None
                if position is not None and end is not None:
                    behind = max(0, end - position) // INDEX_ENTRY_SIZE
                lag.append(PartitionLag(fetcher.partition.topic, fetcher.partition.partition_id, position, end, behind))
        return self._counters.snapshot("tubemq", self.topics, buffered_records=len(self._ready), lag=lag)

    def _take_many(self, limit: int | None) -> list[Message]:
        taken: list[Message] = []
        while limit is None or len(taken) < limit:
            message = self._take()
            if message is None:
                break
            taken.append(message)
        return taken

    async def ack(self, message: Message, /) -> None:
        """Acknowledge ``message``; the last acknowledgement of a fetched batch confirms it to the broker.

        Acknowledging a message twice, or one whose batch was already given back, does nothing.
        """
        batch = self._batch_of(message)
        self._lifecycle.check_open()
        await batch.ack(message.index)

    def skip(self, message: Message, /) -> None:
        """Go on past a message whose deserializer failed (``DeserializationError.message``).

        TubeMQ confirms whole batches, so the skipped message counts as acknowledged.
        """
        batch = self._batch_of(message)
        self._gate.skip(message)
        if not self._lifecycle.closed:
            self._lifecycle.tasks.spawn(batch.ack(message.index), name="acknowledge a skipped message")

    def _batch_of(self, message: Message) -> Batch:
        self._affinity.check()
        if not isinstance(message, Message):
            raise TypeError(f"takes a Message, not {type(message).__name__}")
        batch = message.batch
        if not isinstance(batch, Batch) or batch.owner is not self._settings:
            raise ValueError("this message was not received by this consumer")
        return batch

    # ---------------------------------------------------------------------------- pause and seek
    def pause(self, *partition_keys: str) -> None:
        """Fetch nothing more from these partitions until ``resume`` (the Java client's freezePartitions).

        They stay claimed by this consumer, so the group does not hand them to another member; messages
        already fetched are still delivered. A paused partition stays paused when it is claimed again.
        """
        self._started_assignment().pause(self._check_keys(partition_keys))

    def resume(self, *partition_keys: str) -> None:
        """Fetch these partitions again (the Java client's unfreezePartitions)."""
        self._started_assignment().resume(self._check_keys(partition_keys))

    def paused(self) -> frozenset[str]:
        """The keys of the paused partitions."""
        return frozenset(self._assignment.paused) if self._assignment is not None else frozenset()

    def _check_keys(self, keys: Sequence[str]) -> list[str]:
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"a partition key is a str (brokerId:topic:partitionId), not {type(key).__name__}")
            if parse_partition_key(key)[1] not in self.topics:
                raise ValueError(f"{key} is not a partition of the consumed topics")
        return list(keys)

    async def seek_to_beginning(self) -> None:
        """Read the held partitions again from their first retained message.

        The broker sets the group's position when a partition is claimed with an offset, so each held
        partition is claimed again from offset 0 (the broker moves it up to the first message kept).
        Partitions the master assigns later start from the group's stored position.
        """
        await self._reposition(None, broker_proto.READ_NORMAL, 0)

    async def seek_to_end(self) -> None:
        """Skip to the end of the held partitions: only messages written later are received."""
        await self._reposition(None, broker_proto.READ_FROM_MAX_ALWAYS, None)

    async def seek(self, partition_key: str, offset: int) -> None:
        """Read a held partition from ``offset``, an index offset as ``ClientBalanceConsumer.offsets()``
        reports them (the broker keeps it within the partition's bounds)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, not {offset!r}")
        (key,) = self._check_keys([partition_key])
        if key not in self.assignment:
            raise ValueError(f"partition {key} is not held by this consumer")
        await self._reposition([key], broker_proto.READ_NORMAL, offset)

    async def _reposition(self, keys: list[str] | None, read_status: int, offset: int | None) -> None:
        assignment = self._started_assignment()
        try:
            await assignment.reposition(keys, read_status=read_status, offset=offset)
        finally:
            # What was fetched before the seek is stale now.
            self._gate.discard(_still_valid)
