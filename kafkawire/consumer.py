"""The Kafka consumer: a member of a consumer group, or the reader of partitions it assigns itself.

With ``group=`` and no ``partitions=`` it joins the group (classic JoinGroup/SyncGroup by default, KIP-848
ConsumerGroupHeartbeat with ``group_protocol="consumer"``) and reads what the group assigns it, starting
where the group committed; commits carry the member's generation and id. Rebalances are reported to async
callables taking a set of TopicPartition: ``on_assigned``, ``on_revoked`` (called before partitions are given
up, after acknowledged offsets were committed) and ``on_lost`` (partitions already someone else's, nothing
committed; defaults to ``on_revoked``). A member whose application makes no poll (getone, getmany, iteration)
for ``max_poll_interval_ms`` leaves the group, its partitions lost, and joins again at its next poll, as the
Java client does. With ``partitions=``, or without a group, it reads every partition of
its topics (or the ones given) from ``start``, and with a group commits with generation -1 and no member id,
as the Java client does for ``assign()`` followed by ``commitSync()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from kafkawire.fetcher import FetchConfig, Fetcher, PartitionState, RecordQueue
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
from mqwire.common.errors import ClosedError, ConfigurationError, MqwireError
from mqwire.common.options import check_bool, check_choice, check_int_range, check_non_negative, check_positive

if TYPE_CHECKING:
    from kafkawire.client import Client

log = logging.getLogger(__name__)

STARTS = ("earliest", "latest")
GROUP_PROTOCOLS = ("classic", "consumer")
REMOTE_ASSIGNORS = ("uniform", "range")
PartitionsCallback = Callable[[set[TopicPartition]], Awaitable[None]]
ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
INT32_MAX = 2**31 - 1

PartitionSpec = TopicPartition | tuple[str, int] | int


class Consumer:
    """Use as ``async with client.consumer("topic", start="earliest") as consumer: async for m in consumer``."""

    def __init__(
        self,
        client: Client,
        topics: str | Iterable[str],
        *,
        group: str | None = None,
        start: str = "earliest",
        partitions: Iterable[PartitionSpec] | None = None,
        isolation_level: str = "read_uncommitted",
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_buffered_records: int = 10_000,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: float = 5_000,
        check_crcs: bool = True,
        group_protocol: str = "classic",
        partition_assignment_strategy: str | Sequence[str] = ("range", "roundrobin"),
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        rebalance_timeout_ms: int | None = None,
        group_instance_id: str | None = None,
        group_remote_assignor: str | None = None,
        on_assigned: PartitionsCallback | None = None,
        on_revoked: PartitionsCallback | None = None,
        on_lost: PartitionsCallback | None = None,
    ) -> None:
        self.client = client
        self.topics = _topics(topics)
        if group is not None and (not isinstance(group, str) or not group):
            raise TypeError("option group must be a non-empty str or None")
        self.group = group
        if not isinstance(start, str):
            raise TypeError("option start must be 'earliest' or 'latest'")
        self.start_from = check_choice("start", start, STARTS)
        self._requested = _partitions(partitions, self.topics)
        if not isinstance(isolation_level, str):
            raise TypeError("option isolation_level must be 'read_uncommitted' or 'read_committed'")
        isolation = ISOLATION_LEVELS[check_choice("isolation_level", isolation_level, ISOLATION_LEVELS)]
        self.isolation_level = isolation_level
        self.enable_auto_commit = check_bool("enable_auto_commit", enable_auto_commit) and group is not None
        self.auto_commit_interval = check_positive("auto_commit_interval_ms", auto_commit_interval_ms) / 1000
        self._config = FetchConfig(
            max_wait_ms=check_int_range("fetch_max_wait_ms", fetch_max_wait_ms, 0, INT32_MAX),
            min_bytes=check_int_range("fetch_min_bytes", fetch_min_bytes, 0, INT32_MAX),
            max_bytes=check_int_range("fetch_max_bytes", fetch_max_bytes, 1, INT32_MAX),
            max_partition_bytes=check_int_range("max_partition_fetch_bytes", max_partition_fetch_bytes, 1, INT32_MAX),
            isolation_level=isolation,
            reset=self.start_from,
            check_crcs=check_bool("check_crcs", check_crcs),
            request_timeout=client.request_timeout,
            retry_backoff=client.retry_backoff,
        )
        self._membership: GroupMembership | HeartbeatMembership | None = None
        self._poll_watch: PollWatch | None = None
        if group is not None and self._requested is None:
            # Subscribed topics and a group: the group's members share the partitions.
            protocol = check_choice("group_protocol", group_protocol, GROUP_PROTOCOLS)
            poll_interval_ms = check_int_range("max_poll_interval_ms", max_poll_interval_ms, 1, INT32_MAX)
            # The Java client's rule: how long a rebalance may take is the poll interval unless given.
            rebalance_timeout_ms = (
                poll_interval_ms
                if rebalance_timeout_ms is None
                else check_int_range("rebalance_timeout_ms", rebalance_timeout_ms, 1, INT32_MAX)
            )
            instance_id = _optional_name("group_instance_id", group_instance_id)
            self._poll_watch = PollWatch(poll_interval_ms / 1000)
            if protocol == "consumer":
                # KIP-848: the broker assigns; the member heartbeats and follows.
                if group_remote_assignor is not None and group_remote_assignor not in REMOTE_ASSIGNORS:
                    raise ValueError(f"option group_remote_assignor must be one of {REMOTE_ASSIGNORS} or None")
                self._membership = HeartbeatMembership(
                    client,
                    group,
                    self.topics,
                    remote_assignor=group_remote_assignor,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    group_instance_id=instance_id,
                    on_assign=self._assigned,
                    on_revoke=self._revoked,
                    on_lose=self._lost,
                    poll_watch=self._poll_watch,
                )
            else:
                if heartbeat_interval_ms >= session_timeout_ms:
                    raise ValueError("option heartbeat_interval_ms must be lower than session_timeout_ms")
                self._membership = GroupMembership(
                    client,
                    group,
                    self.topics,
                    _assignors(partition_assignment_strategy),
                    session_timeout_ms=check_int_range("session_timeout_ms", session_timeout_ms, 1, INT32_MAX),
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    heartbeat_interval_ms=check_int_range(
                        "heartbeat_interval_ms", heartbeat_interval_ms, 1, INT32_MAX
                    ),
                    group_instance_id=instance_id,
                    on_assign=self._assigned,
                    on_revoke=self._revoked,
                    on_lose=self._lost,
                    poll_watch=self._poll_watch,
                )
        for name, callback in (("on_assigned", on_assigned), ("on_revoked", on_revoked), ("on_lost", on_lost)):
            if callback is not None and not callable(callback):
                raise TypeError(f"option {name} must be an async callable taking a set of TopicPartition")
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        # As in the Java client, partitions lost without a chance to commit go to on_revoked unless on_lost is given.
        self._on_lost = on_lost if on_lost is not None else on_revoked
        self._queue = RecordQueue(check_int_range("max_buffered_records", max_buffered_records, 1, INT32_MAX))
        self._states: dict[TopicPartition, PartitionState] = {}
        self._fetcher = Fetcher(client, self._states, self._queue, self._config)
        self._acked: dict[TopicPartition, OffsetAndMetadata] = {}
        self._committed: dict[TopicPartition, OffsetAndMetadata] = {}
        self._auto_commit: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Find the partitions, their starting offsets (committed ones first), and start fetching."""
        if self._closed:
            raise ClosedError("consumer is closed")
        if self._started:
            return
        self._started = True
        self.client.adopt(self)
        self.client.track(self.topics)
        if self._membership is not None:
            self._fetcher.start()
            self._membership.start()  # partitions arrive through _assigned once the group has balanced
            if self.enable_auto_commit:
                self._auto_commit = asyncio.ensure_future(self._commit_periodically())
            return
        try:
            assignment = list(self._requested) if self._requested is not None else await self._all_partitions()
            for tp in assignment:
                self._states[tp] = PartitionState(tp, reset=self.start_from)
            if self.group is not None and assignment:
                committed = await fetch_committed(
                    self.client, self.group, assignment, require_stable=self._config.isolation_level == READ_COMMITTED
                )
                for tp, value in committed.items():
                    if value is not None and tp in self._states:
                        self._states[tp].position = value.offset
                        self._states[tp].reset = None
                        self._committed[tp] = value
        except BaseException:
            await self.close()
            raise
        self._fetcher.start()
        if self.enable_auto_commit:
            self._auto_commit = asyncio.ensure_future(self._commit_periodically())

    async def _all_partitions(self) -> list[TopicPartition]:
        found: list[TopicPartition] = []
        for topic in self.topics:
            found.extend(TopicPartition(topic, p) for p in await self.client.partitions_for(topic))
        return found

    async def close(self) -> None:
        """Stop fetching; with auto-commit, commit what was acknowledged."""
        if self._closed:
            return
        self._closed = True
        if self._auto_commit is not None:
            self._auto_commit.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._auto_commit
        if self._membership is not None:
            await self._membership.close()  # commits (auto-commit) and gives the partitions up, then leaves
        await self._fetcher.close()
        self._queue.wake_all()
        if self._started:
            try:
                if self.enable_auto_commit:
                    await self._commit(dict(self._acked))
            except MqwireError as exc:
                log.warning("final commit for group %r failed: %s", self.group, exc)
            finally:
                self.client.untrack(self.topics)
                self.client.release(self)

    @property
    def closed(self) -> bool:
        return self._closed

    # ---------------------------------------------------------------------------------- receiving
    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.getone()
        except ClosedError:
            if self._closed:
                raise StopAsyncIteration from None  # closed while iterating: the loop just ends
            raise

    async def getone(self) -> Message:
        """The next message, waiting as long as it takes (records arrive, or the consumer closes)."""
        if not self._started:
            await self.start()
        watch = self._poll_watch
        if watch is not None:
            watch.polls += 1
            if watch.left:
                watch.resume()
        queue = self._queue
        while True:
            self._check_open()
            message = queue.take_one()
            if message is not None:
                return message
            await self._wait_data(None)

    async def getmany(self, timeout_ms: float = 0, max_records: int | None = None) -> list[Message]:
        """Up to ``max_records`` buffered messages, waiting at most ``timeout_ms`` for the first; [] if none."""
        timeout = check_non_negative("timeout_ms", timeout_ms) / 1000
        limit = INT32_MAX if max_records is None else check_int_range("max_records", max_records, 1, INT32_MAX)
        if not self._started:
            await self.start()
        watch = self._poll_watch
        if watch is not None:
            watch.polls += 1
            if watch.left:
                watch.resume()
        self._check_open()
        queue = self._queue
        if not queue.ready and timeout > 0:
            await self._wait_data(timeout)
            self._check_open()
        return queue.take(limit)

    async def _wait_data(self, timeout: float | None) -> None:
        """Wait for records; a poll that waits counts as polling for max_poll_interval_ms."""
        watch = self._poll_watch
        if watch is None:
            await self._queue.wait_data(timeout)
            return
        watch.waiting += 1
        try:
            await self._queue.wait_data(timeout)
        finally:
            watch.waiting -= 1

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("consumer is closed")

    # ---------------------------------------------------------------------------------- positions
    def assignment(self) -> set[TopicPartition]:
        return set(self._states)

    def seek(self, tp: TopicPartition | tuple[str, int], offset: int) -> None:
        """Continue ``tp`` at ``offset``; records already buffered for it are dropped."""
        state = self._state(tp)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {offset!r}")
        self._reposition(state, offset, None)

    def seek_to_beginning(self, *tps: TopicPartition | tuple[str, int]) -> None:
        for state in self._states_of(tps):
            self._reposition(state, None, "earliest")

    def seek_to_end(self, *tps: TopicPartition | tuple[str, int]) -> None:
        for state in self._states_of(tps):
            self._reposition(state, None, "latest")

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first record at or after the time (ms), or None when there is none."""
        specs: dict[TopicPartition, int] = {}
        for tp, timestamp in timestamps.items():
            if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
                raise ValueError(f"timestamp for {tp} must be non-negative milliseconds, got {timestamp!r}")
            specs[TopicPartition(*tp)] = timestamp
        isolation = ISOLATION_LEVELS[self.isolation_level]
        found = await list_offsets(self.client, specs, isolation_level=isolation)
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
        self._fetcher.wake()

    def position(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        """The next offset the fetcher asks for (records before it may still be buffered)."""
        return self._state(tp).position

    def highwater(self, tp: TopicPartition | tuple[str, int]) -> int:
        """The partition's high watermark as of the last fetch (-1 before one)."""
        return self._state(tp).high_watermark

    def last_stable_offset(self, tp: TopicPartition | tuple[str, int]) -> int:
        return self._state(tp).last_stable_offset

    def pause(self, *tps: TopicPartition | tuple[str, int]) -> None:
        for state in self._states_of(tps):
            state.paused = True

    def resume(self, *tps: TopicPartition | tuple[str, int]) -> None:
        for state in self._states_of(tps):
            state.paused = False
        self._fetcher.wake()

    def _state(self, tp: TopicPartition | tuple[str, int]) -> PartitionState:
        state = self._states.get(TopicPartition(*tp))
        if state is None:
            raise ValueError(f"{tp} is not assigned to this consumer")
        return state

    def _states_of(self, tps: tuple[TopicPartition | tuple[str, int], ...]) -> list[PartitionState]:
        return [self._state(tp) for tp in tps] if tps else list(self._states.values())

    # ---------------------------------------------------------------------------------- commits
    async def ack(self, message: Message) -> None:
        """Mark ``message`` as processed: the next commit stores ``offset + 1`` for its partition."""
        tp = TopicPartition(message.topic, message.partition)
        if tp not in self._states:
            if self._membership is not None:
                return  # the group gave the partition to another member, which reads it from the last commit
            raise ValueError(f"{tp} is not assigned to this consumer")
        current = self._acked.get(tp)
        if current is None or message.offset + 1 > current.offset:
            self._acked[tp] = OffsetAndMetadata(message.offset + 1, "", message.leader_epoch)

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None) -> None:
        """Commit the acknowledged offsets (or ``offsets``: partition -> next offset to consume)."""
        if self.group is None:
            raise ConfigurationError("commit needs a consumer created with group=")
        self._check_open()
        if not self._started:
            return  # nothing consumed, nothing to commit
        if offsets is None:
            to_commit = dict(self._acked)
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
        if self._membership is not None and self._membership.member_id:
            member = self._membership.metadata
            await commit_offsets(
                self.client, self.group, changed, generation=member.generation_id, member_id=member.member_id,
                group_instance_id=member.group_instance_id,
            )
        else:
            await commit_offsets(self.client, self.group, changed)
        self._committed.update(changed)

    async def committed(self, tp: TopicPartition | tuple[str, int]) -> int | None:
        """The offset the group has committed for ``tp``, asked of the coordinator (None if none)."""
        if self.group is None:
            raise ConfigurationError("committed needs a consumer created with group=")
        found = await fetch_committed(self.client, self.group, [TopicPartition(*tp)])
        value = found.get(TopicPartition(*tp))
        return None if value is None else value.offset

    async def _commit_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.auto_commit_interval)
            try:
                await self._commit(dict(self._acked))
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
        wanted = sorted(partitions)
        for tp in wanted:
            self._states[tp] = PartitionState(tp, reset=self.start_from)
        if wanted:
            committed = await fetch_committed(
                self.client, self.group, wanted, require_stable=self._config.isolation_level == READ_COMMITTED
            )
            for tp, value in committed.items():
                state = self._states.get(tp)
                if value is not None and state is not None:
                    state.position = value.offset
                    state.reset = None
                    self._committed[tp] = value
        self._fetcher.wake()
        if self._on_assigned is not None:
            await self._on_assigned(set(partitions))

    async def _revoked(self, partitions: set[TopicPartition]) -> None:
        """Before a rebalance: commit what was acknowledged, tell the application, forget the partitions."""
        if self.enable_auto_commit:
            try:
                await self._commit({tp: v for tp, v in self._acked.items() if tp in partitions})
            except MqwireError as exc:
                log.warning("group %r: commit on revoke failed: %s", self.group, exc)
        if self._on_revoked is not None:
            await self._on_revoked(set(partitions))
        for tp in partitions:
            self._states.pop(tp, None)
            self._acked.pop(tp, None)
            self._queue.drop(tp)

    async def _lost(self, partitions: set[TopicPartition]) -> None:
        """The group fenced this member: the partitions are already another's, so nothing is committed."""
        if self._on_lost is not None:
            await self._on_lost(set(partitions))
        for tp in partitions:
            self._states.pop(tp, None)
            self._acked.pop(tp, None)
            self._queue.drop(tp)

    @property
    def rebalances(self) -> int:
        """How many assignments this member has received from its group."""
        return 0 if self._membership is None else self._membership.rebalances

    @property
    def fetches_sent(self) -> int:
        return self._fetcher.fetches_sent

    def __repr__(self) -> str:
        return f"Consumer(topics={self.topics!r}, group={self.group!r})"


def _assignors(strategy: str | Sequence[str]) -> list[Assignor]:
    names = [strategy] if isinstance(strategy, str) else list(strategy)
    if not names:
        raise ValueError("option partition_assignment_strategy must name at least one assignor")
    for name in names:
        if name not in ASSIGNORS:
            raise ValueError(
                f"option partition_assignment_strategy: unknown assignor {name!r}; choose from {sorted(ASSIGNORS)}"
            )
    return [ASSIGNORS[name] for name in names]


def _optional_name(option: str, value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"option {option} must be a non-empty str or None")
    return value


def _topics(topics: str | Iterable[str]) -> list[str]:
    items = [topics] if isinstance(topics, str) else list(topics)
    if not items:
        raise ValueError("topics must name at least one topic")
    for topic in items:
        if not isinstance(topic, str) or not topic:
            raise TypeError("topics must be a str or an iterable of non-empty str")
    return list(dict.fromkeys(items))


def _partitions(partitions: Iterable[PartitionSpec] | None, topics: list[str]) -> list[TopicPartition] | None:
    if partitions is None:
        return None
    result: list[TopicPartition] = []
    for item in partitions:
        if isinstance(item, int) and not isinstance(item, bool):
            if len(topics) != 1:
                raise ValueError("option partitions: a bare partition number needs exactly one topic")
            tp = TopicPartition(topics[0], item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int):
            tp = TopicPartition(item[0], item[1])
        else:
            raise TypeError(f"option partitions: expected int or (topic, partition), got {item!r}")
        if tp.partition < 0:
            raise ValueError(f"option partitions: negative partition {tp.partition}")
        if tp.topic not in topics:
            raise ValueError(f"option partitions: topic {tp.topic!r} is not among the consumer's topics")
        result.append(tp)
    if not result:
        raise ValueError("option partitions must not be empty")
    return list(dict.fromkeys(result))
