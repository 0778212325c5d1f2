"""The Kafka consumer: a member of a consumer group, or the reader of partitions it assigns itself.

With ``group=`` and no ``partitions=`` it joins the group (classic JoinGroup/SyncGroup by default, KIP-848
ConsumerGroupHeartbeat with ``group_protocol="consumer"``) and reads what the group assigns it, starting
where the group committed; commits carry the member's generation and id. Rebalances are reported to async
callables taking a set of TopicPartition: ``on_assigned``, ``on_revoked`` (called before partitions are given
up, after acknowledged offsets were committed) and ``on_lost`` (partitions already someone else's, nothing
committed; defaults to ``on_revoked``), or instead to aiokafka's ``ConsumerRebalanceListener`` (``listener=``,
``kafkawire.rebalance_listener``). Partitions given up hand out no more records from the moment they are
revoked. A member whose application makes no poll (getone, getmany, iteration)
for ``max_poll_interval_ms`` leaves the group, its partitions lost, and joins again at its next poll, as the
Java client does. With ``partitions=``, or without a group, it reads every partition of
its topics (or the ones given) from ``start``, and with a group commits with generation -1 and no member id,
as the Java client does for ``assign()`` followed by ``commitSync()``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Self

from kafkawire import errors
from kafkawire.fetcher import FetchConfig, Fetcher, PartitionState
from kafkawire.group.assignors import ASSIGNORS, Assignor
from kafkawire.group.heartbeat_membership import HeartbeatMembership
from kafkawire.group.membership import GroupMembership
from kafkawire.group.metadata import GroupMetadata
from kafkawire.group.poll_watch import PollWatch
from kafkawire.message import Message
from kafkawire.metadata import TopicPartition
from kafkawire.offsets import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    commit_offsets,
    fetch_committed,
    list_offsets,
)
from kafkawire.options import (
    ConsumerConfig,
    GroupProtocol,
    IsolationLevel,
    PartitionSpec,
    check_listener,
    check_listener_fits,
    check_pattern,
)
from kafkawire.rebalance_listener import ConsumerRebalanceListener, ListenerCalls
from kafkawire.receive_queue import ReceiveQueue
from mqwire.common.contract import Start
from mqwire.common.errors import ClosedError, ConfigurationError, MqwireError, OptionTypeError, ReceiveTimeoutError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.options import check_int_range, check_non_negative
from mqwire.common.serde import Deserializing
from mqwire.common.stats import ConsumerStats, PartitionLag

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
INT32_MAX = 2**31 - 1

# How often a poll limited to some partitions looks again while others' records wait.
FILTERED_POLL = 0.01


class Consumer(AsyncResource):
    """Use as ``async with client.consumer("topic", start="earliest") as consumer: async for m in consumer``."""

    def __init__(self, session: Session, topics: str | Iterable[str], config: ConsumerConfig) -> None:
        self._session = session
        self.topics = _topics(topics)
        group = config.group
        self.group = group
        self.start_from: Start = config.start
        self._pattern = config.pattern
        if self._pattern is not None and self.topics:
            raise ConfigurationError("give topics or pattern, not both")
        self._requested = _partitions(config.partitions, self.topics)
        self.isolation_level: IsolationLevel = config.isolation_level
        self.enable_auto_commit = config.enable_auto_commit and group is not None
        self.auto_commit_interval = config.auto_commit_interval
        self.commit_acknowledged_only = config.commit_acknowledged_only
        self._config = FetchConfig(
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            max_partition_bytes=config.max_partition_fetch_bytes,
            isolation_level=ISOLATION_LEVELS[config.isolation_level],
            reset=self.start_from,
            check_crcs=config.check_crcs,
            request_timeout=session.request_timeout,
            retry_backoff=session.retry_backoff,
            max_decompressed_bytes=config.fetch_max_decompressed_bytes,
        )
        # The group options are checked now even when the group is joined only after subscribe().
        self._group_protocol: GroupProtocol = config.group_protocol
        self._rebalance_timeout_ms = config.rebalance_timeout_ms
        self._group_instance_id = config.group_instance_id
        self._remote_assignor = config.group_remote_assignor
        self._session_timeout_ms = config.session_timeout_ms
        self._heartbeat_interval_ms = config.heartbeat_interval_ms
        self._assignors = _assignors(config.partition_assignment_strategy)
        self._poll_watch: PollWatch | None = (
            PollWatch(config.max_poll_interval_ms / 1000) if group is not None and self._requested is None else None
        )
        self._membership: GroupMembership | HeartbeatMembership | None = None
        self._on_assigned = config.on_assigned
        self._on_revoked = config.on_revoked
        # As in the Java client, partitions lost without a chance to commit go to on_revoked unless on_lost is given.
        self._on_lost = config.on_lost if config.on_lost is not None else config.on_revoked
        self._listener = None if config.listener is None else ListenerCalls(config.listener, group)
        key_deserializer, value_deserializer = config.key_deserializer, config.value_deserializer
        self._gate: Deserializing[Message] = Deserializing(key_deserializer, value_deserializer, _offset)
        self._deserializing = key_deserializer is not None or value_deserializer is not None
        # Started, and nothing to apply between the queue and the application: receive's hot path.
        self._plain = False
        self._queue = ReceiveQueue(config.max_buffered_records)
        self._states: dict[TopicPartition, PartitionState] = {}
        self._fetcher = Fetcher(session, self._states, self._queue, self._config)
        self._acked: dict[TopicPartition, OffsetAndMetadata] = {}
        self._committed: dict[TopicPartition, OffsetAndMetadata] = {}
        # Records delivered through the deserializing gate (the queue tracks them itself otherwise).
        self._delivered: dict[TopicPartition, Message] = {}
        # Taken from the queue but never handed out: skipped after a failed deserializer, or held and then
        # dropped by a seek or a lost partition. Not part of records_received.
        self._not_handed_out = 0
        self._tracked: list[str] = []
        self._failure: BaseException | None = None
        self._subscribing: asyncio.Lock | None = None
        self._lifecycle = Lifecycle("kafka consumer")
        self._affinity = session.affinity

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Find the partitions, their starting offsets (committed ones first), and start fetching."""
        self._affinity.check()
        try:
            await self._lifecycle.start(self._start)
        except Exception:
            await self.close()  # a consumer that could not start holds nothing afterwards
            raise

    async def _start(self) -> None:
        self._session.adopt(self)
        self._fetcher.start()
        await self._apply_subscription()
        if self.enable_auto_commit:
            self._lifecycle.tasks.spawn(self._commit_periodically(), name="auto-commit")
        self._plain = not self._deserializing

    async def close(self) -> None:
        """Stop fetching; with auto-commit, commit the positions delivered (or acknowledged) and leave the group.

        In a process forked after the client was made it does nothing: the group membership is the parent's."""
        if not self._affinity.may_close():
            return
        self._plain = False
        await self._lifecycle.close(self._close)

    async def stop(self) -> None:
        """aiokafka's name for ``close``: commit (with auto-commit), leave the group, stop."""
        await self.close()

    async def _close(self) -> None:
        started = self._lifecycle.started
        if self._membership is not None:
            await self._membership.close()  # commits (auto-commit) and gives the partitions up, then leaves
        await self._fetcher.close()
        self._queue.wake_all()
        if started:
            try:
                if self.enable_auto_commit:
                    await self._commit(self._auto_offsets())
            except MqwireError as exc:
                log.warning("final commit for group %r failed: %s", self.group, exc)
        self._session.untrack(self._tracked)
        self._tracked = []
        self._session.release(self)

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._lifecycle.closed

    # ------------------------------------------------------------------------------ subscriptions
    def subscribe(
        self,
        topics: str | Iterable[str] | re.Pattern[str] = (),
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Read ``topics`` (or every topic matching ``pattern``, which may also come as ``topics``) instead of
        what was read so far.

        With a group the member (re)joins it for the new subscription; without one it reads every partition
        of those topics. Takes effect in the background, as in aiokafka. ``listener`` (a
        :class:`~kafkawire.ConsumerRebalanceListener`) hears the group's rebalances from now on, in place of the
        one given before; None keeps the one there is.
        """
        if isinstance(topics, re.Pattern):
            if pattern is not None:
                raise ConfigurationError("subscribe needs topics or pattern (one of them)")
            pattern = topics
            topics = ()
        names = _topics(topics)
        compiled = check_pattern("pattern", pattern)
        if bool(names) == (compiled is not None):
            raise ConfigurationError("subscribe needs topics or pattern (one of them)")
        if listener is not None:
            check_listener("listener", listener)
            check_listener_fits(self.group, False, self._on_assigned, self._on_revoked, self._on_lost)
        self._change(names, compiled, None)
        if listener is not None:
            self._listener = ListenerCalls(listener, self.group)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly ``partitions``, outside any group rebalance (commits still go to ``group``)."""
        tps = [TopicPartition(*tp) for tp in partitions]
        topics = list(dict.fromkeys(tp.topic for tp in tps))
        self._change(topics, None, _partitions(tps, topics) if tps else [])

    def unsubscribe(self) -> None:
        """Stop reading: leave the group (if any) and forget every partition."""
        self._change([], None, [])

    def subscription(self) -> set[str]:
        """The topics read now (for a pattern: the matching topics found so far)."""
        return set(self._tracked) if self._pattern is not None else set(self.topics)

    def _change(
        self, topics: list[str], pattern: re.Pattern[str] | None, requested: list[TopicPartition] | None
    ) -> None:
        self._affinity.check()
        self._lifecycle.check_open()
        self.topics, self._pattern, self._requested = topics, pattern, requested
        if requested is None and self.group is not None and self._poll_watch is None:
            self._poll_watch = PollWatch(self._rebalance_timeout_ms / 1000)
        if self._lifecycle.started:
            self._lifecycle.tasks.spawn(self._apply_subscription(), name="subscribe")

    async def _apply_subscription(self) -> None:
        """Give up what is read now and take up the current subscription (one change at a time)."""
        if self._subscribing is None:
            self._subscribing = asyncio.Lock()
        async with self._subscribing:
            try:
                await self._leave_current()
                await self._take_up()
            except MqwireError as exc:
                if self._lifecycle.started:
                    self._fail(exc)  # a change made in the background reports through the next poll
                raise

    async def _leave_current(self) -> None:
        if self._membership is not None:
            membership, self._membership = self._membership, None
            await membership.close()
        elif self._states:
            if self.enable_auto_commit:
                try:
                    await self._commit(self._auto_offsets())
                except MqwireError as exc:
                    log.warning("commit for group %r failed: %s", self.group, exc)
            for tp in list(self._states):
                self._forget(tp)
        self._session.untrack(self._tracked)
        self._tracked = []

    async def _take_up(self) -> None:
        if self._pattern is not None:
            topics = await self._matching_topics()
            self._lifecycle.tasks.spawn(self._watch_pattern(self._pattern), name="pattern subscription")
        else:
            topics = list(self.topics)
        self._tracked = topics
        self._session.track(topics)
        if self.group is not None and self._requested is None:
            if topics or self._pattern is not None:
                self._membership = self._new_membership(self.group, topics)
                self._membership.start()  # partitions arrive through _assigned once the group has balanced
            return
        if self._requested is not None:
            assignment = list(self._requested)
        else:
            assignment = await self._all_partitions(topics)
        await self._add_partitions(assignment)

    async def _add_partitions(self, assignment: list[TopicPartition]) -> None:
        """Read ``assignment`` too, from the group's committed offsets where there are some, else from ``start``.

        The fetcher sees a partition only once its starting point is known, so it never resets one the group
        has a position for.
        """
        added = {tp: PartitionState(tp, reset=self.start_from) for tp in assignment if tp not in self._states}
        if self.group is not None and added:
            committed = await fetch_committed(
                self._session, self.group, list(added), require_stable=self._config.isolation_level == READ_COMMITTED
            )
            for tp, value in committed.items():
                if value is not None and tp in added:
                    added[tp].position = value.offset
                    added[tp].reset = None
                    self._committed[tp] = value
        self._states.update(added)
        self._fetcher.wake()

    def _new_membership(self, group: str, topics: list[str]) -> GroupMembership | HeartbeatMembership:
        if self._group_protocol == "consumer":
            # KIP-848: the broker assigns (and, for a pattern, matches topics); the member heartbeats and follows.
            return HeartbeatMembership(
                self._session,
                group,
                topics,
                pattern=None if self._pattern is None else self._pattern.pattern,
                remote_assignor=self._remote_assignor,
                rebalance_timeout_ms=self._rebalance_timeout_ms,
                group_instance_id=self._group_instance_id,
                on_assign=self._assigned,
                on_revoke=self._revoked,
                on_lose=self._lost,
                on_fail=self._fail,
                poll_watch=self._poll_watch,
            )
        return GroupMembership(
            self._session,
            group,
            topics,
            self._assignors,
            session_timeout_ms=self._session_timeout_ms,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            heartbeat_interval_ms=self._heartbeat_interval_ms,
            group_instance_id=self._group_instance_id,
            on_assign=self._assigned,
            on_revoke=self._revoked,
            on_lose=self._lost,
            on_fail=self._fail,
            poll_watch=self._poll_watch,
        )

    async def _matching_topics(self) -> list[str]:
        assert self._pattern is not None
        metadata = await self._session.refresh_metadata(None)
        return sorted(t for t in metadata.topic_names.values() if self._pattern.fullmatch(t))

    async def _watch_pattern(self, pattern: re.Pattern[str]) -> None:
        """Follow the topics matching ``pattern`` as they are created and deleted (every ``metadata_max_age_ms``)."""
        while self._pattern is pattern:
            await asyncio.sleep(self._session.metadata_max_age)
            if self._pattern is not pattern:
                return
            try:
                topics = await self._matching_topics()
            except MqwireError as exc:
                log.warning("pattern subscription %r: metadata refresh failed: %s", pattern.pattern, exc)
                continue
            if topics == self._tracked:
                continue
            log.info("pattern subscription %r now matches %s", pattern.pattern, topics)
            self._session.untrack(self._tracked)
            self._tracked = topics
            self._session.track(topics)
            membership = self._membership
            if isinstance(membership, GroupMembership):
                membership.set_topics(topics)
            elif membership is None:
                await self._add_partitions(await self._all_partitions(topics))

    async def _all_partitions(self, topics: Iterable[str]) -> list[TopicPartition]:
        found: list[TopicPartition] = []
        for topic in topics:
            found.extend(TopicPartition(topic, p) for p in await self._session.partitions_for(topic))
        return found

    def _fail(self, error: BaseException) -> None:
        """The group cannot go on (or a subscription change failed): every poll raises ``error`` from now on."""
        self._failure = error
        self._plain = False
        self._queue.wake_all()

    # ---------------------------------------------------------------------------------- receiving
    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self._receive(None, None)
        except ClosedError:
            if self._lifecycle.closed:
                raise StopAsyncIteration from None  # closed while iterating: the loop just ends
            raise

    async def receive(self, timeout: float | None = None) -> Message:
        """The next message; raises ``ReceiveTimeoutError`` (a ``TimeoutError``) after ``timeout`` seconds."""
        return await self._receive(timeout, None)

    async def getone(self, *partitions: TopicPartition | tuple[str, int]) -> Message:
        """The next message (of ``partitions``, when given), waiting as long as it takes: aiokafka's ``getone``."""
        return await self._receive(None, frozenset(TopicPartition(*tp) for tp in partitions) if partitions else None)

    async def _receive(self, timeout: float | None, only: frozenset[TopicPartition] | None) -> Message:
        self._affinity.check()
        if timeout is not None:
            timeout = check_non_negative("timeout", timeout)
        # The common case first: a record already buffered, no deserializer, nothing failed, not closing.
        if self._plain and only is None:
            ready = self._queue.take_one(None)
            if ready is not None:
                if self._poll_watch is not None:
                    self._polled()
                return ready
        if not self._lifecycle.started:
            await self.start()
        self._polled()
        queue = self._queue
        gate = self._gate
        deadline: float | None = None
        while True:
            self._check_open()
            message = self._next_through_gate(only) if gate.active else queue.take_one(only)
            if message is not None:
                return message
            if timeout is not None:
                now = asyncio.get_running_loop().time()
                if deadline is None:
                    deadline = now + timeout
                if now >= deadline:
                    raise ReceiveTimeoutError(f"no message within {timeout} s")
                await self._wait_data(deadline - now, only)
            else:
                await self._wait_data(None, only)

    def _next_through_gate(self, only: frozenset[TopicPartition] | None) -> Message | None:
        gate = self._gate
        held = gate.take_held(1)
        message = held[0] if held else self._queue.take_one(only)
        if message is None:
            return None
        gate.one(message)  # raises DeserializationError and holds the message when a deserializer fails
        self._delivered[message.topic_partition] = message
        return message

    async def getmany(
        self,
        *partitions: TopicPartition | tuple[str, int],
        timeout: float = 0,
        timeout_ms: float | None = None,
        max_records: int | None = None,
    ) -> list[Message]:
        """Up to ``max_records`` messages (of ``partitions``, when given), waiting at most ``timeout`` seconds
        (or aiokafka's ``timeout_ms``) for the first; ``[]`` when none came."""
        self._affinity.check()
        if timeout_ms is not None:
            if timeout:
                raise ValueError("give timeout (seconds) or timeout_ms, not both")
            wait = check_non_negative("timeout_ms", timeout_ms) / 1000
        else:
            wait = check_non_negative("timeout", timeout)
        limit = INT32_MAX if max_records is None else check_int_range("max_records", max_records, 1, INT32_MAX)
        only = frozenset(TopicPartition(*tp) for tp in partitions) if partitions else None
        if not self._lifecycle.started:
            await self.start()
        self._polled()
        self._check_open()
        queue = self._queue
        if self._gate.active:
            return await self._getmany_through_gate(wait, limit, only)
        if wait > 0 and not (queue.ready if only is None else queue.has_records_of(only)):
            await self._wait_data(wait, only)
            self._check_open()
        return queue.take(limit, only)

    async def _getmany_through_gate(
        self, wait: float, limit: int, only: frozenset[TopicPartition] | None
    ) -> list[Message]:
        gate = self._gate
        queue = self._queue
        messages = gate.take_held(limit)
        if not messages:
            if wait > 0 and not (queue.ready if only is None else queue.has_records_of(only)):
                await self._wait_data(wait, only)
                self._check_open()
            messages = queue.take(limit, only)
        elif len(messages) < limit:
            messages.extend(queue.take(limit - len(messages), only))
        good = gate.many(messages)
        delivered = self._delivered
        for message in good:
            delivered[message.topic_partition] = message
        return good

    def _polled(self) -> None:
        watch = self._poll_watch
        if watch is not None:
            watch.polls += 1
            if watch.left:
                watch.resume()

    async def _wait_data(self, timeout: float | None, only: frozenset[TopicPartition] | None = None) -> None:
        """Wait for records; a poll that waits counts as polling for max_poll_interval_ms."""
        watch = self._poll_watch
        if watch is not None:
            watch.waiting += 1
        began = time.monotonic()
        try:
            if only is None:
                await self._queue.wait_data(timeout)
            else:
                # Records of other partitions may be waiting already: look again shortly.
                await asyncio.sleep(FILTERED_POLL if timeout is None else min(timeout, FILTERED_POLL))
        finally:
            if watch is not None:
                watch.waiting -= 1
            # The poll's idle time, for client telemetry's poll idle ratio.
            self._session.measures.poll_idle += time.monotonic() - began

    def _check_open(self) -> None:
        self._lifecycle.check_open()
        if self._failure is not None:
            raise self._failure

    def _discard_held(self, tp: TopicPartition) -> None:
        held = self._gate.held
        self._gate.discard(lambda m: m.topic_partition != tp)
        self._not_handed_out += held - self._gate.held

    def skip(self, message: Message) -> None:
        """Go on past the message whose deserializer failed (``DeserializationError.message``)."""
        self._gate.skip(message)
        self._not_handed_out += 1
        self._delivered[message.topic_partition] = message  # skipped on purpose: committed like a delivered one

    # ---------------------------------------------------------------------------------- positions
    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads now."""
        return set(self._states)

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int) -> None:
        """Continue ``tp`` at ``offset``; records already buffered for it are dropped."""
        state = self._state(tp)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {offset!r}")
        self._reposition(state, offset, None)

    async def seek_to_beginning(self, *tps: TopicPartition | tuple[str, int]) -> None:
        """Read ``tps`` (default: every assigned partition) again from their first retained record."""
        for state in self._states_of(tps):
            self._reposition(state, None, "earliest")

    async def seek_to_end(self, *tps: TopicPartition | tuple[str, int]) -> None:
        """Skip ``tps`` (default: every assigned partition) to their end: only later records are received."""
        for state in self._states_of(tps):
            self._reposition(state, None, "latest")

    async def seek_to_committed(
        self, *tps: TopicPartition | tuple[str, int]
    ) -> dict[TopicPartition, int | None]:
        """Continue ``tps`` (default: every assigned partition) at the group's committed offsets; a partition
        without one follows ``start``. Returns the committed offsets (None where there is none)."""
        if self.group is None:
            raise ConfigurationError("seek_to_committed needs a consumer created with group=")
        states = self._states_of(tps)
        found = await fetch_committed(self._session, self.group, [state.tp for state in states])
        result: dict[TopicPartition, int | None] = {}
        for state in states:
            value = found.get(state.tp)
            result[state.tp] = None if value is None else value.offset
            if value is None:
                self._reposition(state, None, self.start_from)
            else:
                self._reposition(state, value.offset, None)
        return result

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first record at or after the time (ms), or None when there is none."""
        self._affinity.check()
        specs: dict[TopicPartition, int] = {}
        for tp, timestamp in timestamps.items():
            if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
                raise ValueError(f"timestamp for {tp} must be non-negative milliseconds, got {timestamp!r}")
            specs[TopicPartition(*tp)] = timestamp
        isolation = ISOLATION_LEVELS[self.isolation_level]
        found = await list_offsets(self._session, specs, isolation_level=isolation)
        return {tp: None if found[tp].offset < 0 else found[tp] for tp in specs}

    async def seek_to_timestamp(self, timestamp_ms: int, *tps: TopicPartition | tuple[str, int]) -> None:
        """Continue each partition (default: all assigned) at its first record stamped at or after
        ``timestamp_ms``; a partition with none continues at its end."""
        states = self._states_of(tps)
        found = await self.offsets_for_times({state.tp: timestamp_ms for state in states})
        for state in states:
            at = found[state.tp]
            if at is None:
                self._reposition(state, None, "latest")
            else:
                self._reposition(state, at.offset, None)

    def _reposition(self, state: PartitionState, offset: int | None, reset: str | None) -> None:
        state.generation += 1
        state.position = offset
        state.reset = reset
        state.failed = False
        self._queue.drop(state.tp)
        self._delivered.pop(state.tp, None)
        if self._deserializing:
            self._discard_held(state.tp)
        self._fetcher.wake()

    def position(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        """The next offset the fetcher asks for (records before it may still be buffered)."""
        return self._state(tp).position

    def highwater(self, tp: TopicPartition | tuple[str, int]) -> int:
        """The partition's high watermark as of the last fetch (-1 before one)."""
        return self._state(tp).high_watermark

    def last_stable_offset(self, tp: TopicPartition | tuple[str, int]) -> int:
        """The partition's last stable offset as of the last fetch (-1 before one)."""
        return self._state(tp).last_stable_offset

    def pause(self, *tps: TopicPartition | tuple[str, int]) -> None:
        """Stop fetching ``tps`` (default: all assigned) until ``resume``."""
        for state in self._states_of(tps):
            state.paused = True

    def resume(self, *tps: TopicPartition | tuple[str, int]) -> None:
        """Fetch ``tps`` (default: all assigned) again after ``pause``."""
        for state in self._states_of(tps):
            state.paused = False
        self._fetcher.wake()

    def _state(self, tp: TopicPartition | tuple[str, int]) -> PartitionState:
        self._affinity.check()
        state = self._states.get(TopicPartition(*tp))
        if state is None:
            raise ValueError(f"{tp} is not assigned to this consumer")
        return state

    def _states_of(self, tps: tuple[TopicPartition | tuple[str, int], ...]) -> list[PartitionState]:
        self._affinity.check()
        return [self._state(tp) for tp in tps] if tps else list(self._states.values())

    def _forget(self, tp: TopicPartition) -> None:
        self._states.pop(tp, None)
        self._acked.pop(tp, None)
        self._delivered.pop(tp, None)
        self._queue.drop(tp)
        if self._deserializing:
            self._discard_held(tp)

    # ---------------------------------------------------------------------------------- commits
    async def ack(self, message: Message) -> None:
        """Mark ``message`` as processed: the next commit stores ``offset + 1`` for its partition."""
        self._affinity.check()
        tp = TopicPartition(message.topic, message.partition)
        if tp not in self._states:
            if self._membership is not None:
                return  # the group gave the partition to another member, which reads it from the last commit
            raise ValueError(f"{tp} is not assigned to this consumer")
        current = self._acked.get(tp)
        if current is None or message.offset + 1 > current.offset:
            self._acked[tp] = OffsetAndMetadata(message.offset + 1, "", message.leader_epoch)

    def _auto_offsets(self, only: set[TopicPartition] | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """What auto-commit stores: the positions after the delivered records (aiokafka's and Java's meaning),
        or after the acknowledged ones with ``commit_acknowledged_only``."""
        offsets = dict(self._acked)
        if not self.commit_acknowledged_only:
            delivered = self._delivered if self._deserializing else self._queue.delivered
            for tp, message in delivered.items():
                current = offsets.get(tp)
                if current is None or message.offset + 1 > current.offset:
                    offsets[tp] = OffsetAndMetadata(message.offset + 1, "", message.leader_epoch)
        offsets = {tp: v for tp, v in offsets.items() if tp in self._states}
        if only is not None:
            offsets = {tp: v for tp, v in offsets.items() if tp in only}
        return offsets

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None) -> None:
        """Commit the positions after the messages delivered so far, as aiokafka's ``commit()`` does (only the
        acknowledged ones with ``commit_acknowledged_only``), or ``offsets``: partition -> next offset to consume.

        A member of a group whose group has rebalanced since the records were delivered gets
        :class:`~kafkawire.errors.CommitFailedError` (as with aiokafka): nothing is committed, the consumer
        rejoins by itself and goes on; catch it where a loop commits as it reads."""
        self._affinity.check()
        if self.group is None:
            raise ConfigurationError("commit needs a consumer created with group=")
        self._lifecycle.check_open()
        if not self._lifecycle.started:
            return  # nothing consumed, nothing to commit
        if offsets is None:
            to_commit = self._auto_offsets()
        else:
            to_commit = {
                TopicPartition(*tp): value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                for tp, value in offsets.items()
            }
        await self._commit(to_commit)

    async def _commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        assert self.group is not None
        changed = {tp: v for tp, v in offsets.items() if self._committed.get(tp) != v}
        if not changed:
            return
        began = time.monotonic()
        if self._membership is not None and self._membership.member_id:
            await self._commit_as_member(changed)
        else:
            await commit_offsets(self._session, self.group, changed)
        self._session.measures.commit_latency.observe(time.monotonic() - began)
        self._committed.update(changed)

    async def _commit_as_member(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit with the member's generation (KIP-848: its epoch). An epoch that went stale while a heartbeat
        was bringing the next one (STALE_MEMBER_EPOCH) is not a failure of the commit: it is sent again with the
        new epoch, as the Java consumer does, until the request timeout."""
        assert self.group is not None and self._membership is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._session.request_timeout
        while True:
            member = self._membership.metadata
            try:
                await commit_offsets(
                    self._session, self.group, offsets, generation=member.generation_id, member_id=member.member_id,
                    group_instance_id=member.group_instance_id,
                )
                return
            except errors.StaleMemberEpochError:
                if loop.time() >= deadline:
                    raise
                log.debug("group %r: commit with a stale member epoch %d; sending it again", self.group,
                          member.generation_id)
                await asyncio.sleep(0.1)  # the heartbeat in flight brings the current epoch

    async def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        """The offset the group has committed for ``tp``, asked of the coordinator (None if none)."""
        self._affinity.check()
        if self.group is None:
            raise ConfigurationError("committed needs a consumer created with group=")
        found = await fetch_committed(self._session, self.group, [TopicPartition(*tp)])
        value = found.get(TopicPartition(*tp))
        return None if value is None else value.offset

    async def _commit_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.auto_commit_interval)
            try:
                await self._commit(self._auto_offsets())
            except MqwireError as exc:
                log.warning("auto-commit for group %r failed: %s", self.group, exc)

    # ---------------------------------------------------------------------------------- the group
    def group_metadata(self) -> GroupMetadata:
        """The group, generation and member id (for a transactional producer's offset commit)."""
        if self.group is None:
            raise ConfigurationError("group_metadata needs a consumer created with group=")
        if self._membership is not None:
            return self._membership.metadata
        return GroupMetadata(self.group)

    async def _assigned(self, partitions: set[TopicPartition]) -> None:
        """The group gave this member ``partitions``: start them where the group committed."""
        assert self.group is not None
        await self._add_partitions(sorted(partitions))
        if self._on_assigned is not None:
            await self._on_assigned(set(partitions))
        if self._listener is not None:
            # aiokafka's meaning: the whole assignment, kept partitions with the new ones.
            held = self._membership.assignment if self._membership is not None else set()
            await self._listener.assigned(held | partitions)

    async def _revoked(self, partitions: set[TopicPartition]) -> None:
        """Before a rebalance: hand out no more of the partitions' records, commit what was delivered (or
        acknowledged), tell the application, forget the partitions."""
        self._stop_handing_out(partitions)
        if self.enable_auto_commit:
            try:
                await self._commit(self._auto_offsets(partitions))
            except MqwireError as exc:
                log.warning("group %r: commit on revoke failed: %s", self.group, exc)
        if self._on_revoked is not None:
            await self._on_revoked(set(partitions))
        if self._listener is not None and not self._lifecycle.closed:
            await self._listener.revoked(partitions)  # as in aiokafka, not when the consumer closes
        for tp in partitions:
            self._forget(tp)

    async def _lost(self, partitions: set[TopicPartition]) -> None:
        """The group fenced this member: the partitions are already another's, so nothing is committed."""
        self._stop_handing_out(partitions)
        if self._on_lost is not None:
            await self._on_lost(set(partitions))
        if self._listener is not None and not self._lifecycle.closed:
            await self._listener.lost(partitions)
        for tp in partitions:
            self._forget(tp)

    def _stop_handing_out(self, partitions: set[TopicPartition]) -> None:
        """Drop the buffered records of ``partitions`` and fetch no more of them, keeping what was delivered:
        a commit made while they are given up (auto-commit's, or the application's in its callback) stores the
        positions after the records the application got, and no record comes after it."""
        queue = self._queue
        for tp in partitions:
            state = self._states.get(tp)
            if state is None:
                continue
            state.paused = True
            state.generation += 1  # a fetch in flight for it is dropped on arrival
            delivered = queue.delivered.get(tp)
            queue.drop(tp)
            if delivered is not None:
                queue.delivered[tp] = delivered
            if self._deserializing:
                self._discard_held(tp)

    @property
    def rebalances(self) -> int:
        """How many assignments this member has received from its group."""
        return 0 if self._membership is None else self._membership.rebalances

    @property
    def fetches_sent(self) -> int:
        """Fetch requests sent so far."""
        return self._fetcher.counters.requests

    def stats(self) -> ConsumerStats:
        """Records and bytes fetched and handed out, fetch requests, errors, rebalances and the lag per partition.

        A partition's lag is its end as of the last fetch (the high watermark, or the last stable offset under
        ``read_committed``) minus the offset of the next record this consumer hands out; it is 0 once the
        application has taken everything fetched up to the end."""
        queue = self._queue
        counters = self._fetcher.counters
        pending = queue.next_offsets()
        committed_only = self._fetcher.config.isolation_level == READ_COMMITTED
        lag = []
        for tp, state in self._states.items():
            position = pending.get(tp, state.position)
            end = state.last_stable_offset if committed_only else state.high_watermark
            known = position is not None and end >= 0
            lag.append(
                PartitionLag(
                    tp.topic,
                    tp.partition,
                    position,
                    end if end >= 0 else None,
                    max(0, end - position) if known and position is not None else None,
                )
            )
        topics = sorted(self.subscription() | {tp.topic for tp in self._states})
        snapshot = counters.snapshot("kafka", topics, buffered_records=queue.buffered, lag=lag)
        # Fetched, less what waits in the queue, was dropped from it, waits behind a failed deserializer, or
        # was taken from it but never handed out: each record counts once, when the application gets it.
        received = counters.records - queue.buffered - queue.dropped - self._gate.held - self._not_handed_out
        return dataclasses.replace(snapshot, records_received=received, rebalances=self.rebalances)

    def __repr__(self) -> str:
        return f"Consumer(topics={self.topics!r}, group={self.group!r})"


def _offset(message: Message) -> int:
    return message.offset


def _assignors(names: tuple[str, ...]) -> list[Assignor]:
    for name in names:
        if name not in ASSIGNORS:
            raise ConfigurationError(
                f"option partition_assignment_strategy: unknown assignor {name!r}; choose from {sorted(ASSIGNORS)}"
            )
    return [ASSIGNORS[name] for name in names]


def _topics(topics: str | Iterable[str]) -> list[str]:
    items = [topics] if isinstance(topics, str) else list(topics)
    for topic in items:
        if not isinstance(topic, str) or not topic:
            raise OptionTypeError("topics must be a str or an iterable of non-empty str")
    return list(dict.fromkeys(items))


def _partitions(partitions: Iterable[PartitionSpec] | None, topics: list[str]) -> list[TopicPartition] | None:
    if partitions is None:
        return None
    result: list[TopicPartition] = []
    for item in partitions:
        if isinstance(item, int) and not isinstance(item, bool):
            if len(topics) != 1:
                raise ConfigurationError("option partitions: a bare partition number needs exactly one topic")
            tp = TopicPartition(topics[0], item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int):
            tp = TopicPartition(item[0], item[1])
        else:
            raise OptionTypeError(f"option partitions: expected int or (topic, partition), got {item!r}")
        if tp.partition < 0:
            raise ConfigurationError(f"option partitions: negative partition {tp.partition}")
        if tp.topic not in topics:
            raise ConfigurationError(f"option partitions: topic {tp.topic!r} is not among the consumer's topics")
        result.append(tp)
    if not result:
        raise ConfigurationError("option partitions must not be empty")
    return list(dict.fromkeys(result))
