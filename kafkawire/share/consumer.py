"""The share consumer (KIP-932): members of a share group read the same partitions cooperatively, each
record acquired by one member at a time and settled by an acknowledgement.

The asyncio side lives here: the heartbeat task (``membership``), one fetch loop per partition leader
(each with its share ``session``), the buffer the application reads from, and ``commit`` / ``close``. What
is held and what is acknowledged is the sans-IO ``acks`` bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from kafkawire import errors
from kafkawire.metadata import TopicPartition
from kafkawire.options import AcknowledgementMode, ShareConsumerConfig
from kafkawire.protocol.records import DecompressionBudget
from kafkawire.share.acks import RENEW, AcknowledgeType, ShareAcks
from kafkawire.share.membership import SHARE_ACKNOWLEDGE_KEY, SHARE_FETCH_KEY, ShareMembership
from kafkawire.share.message import ShareMessage
from kafkawire.share.session import FetchSettings, ShareSession, acquired_messages
from mqwire.common.errors import (
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    MqwireError,
    ReceiveTimeoutError,
    RequestTimeoutError,
    RetriableError,
    UnsupportedVersionError,
)
from mqwire.common.lifecycle import AsyncResource, Lifecycle, OwnedTasks
from mqwire.common.serde import Deserializing
from mqwire.common.stats import ConsumerCounters, ConsumerStats

if TYPE_CHECKING:
    from kafkawire.session import Session

__all__ = ["AcknowledgementMode", "ShareConsumer"]

log = logging.getLogger(__name__)


RENEW_MIN_VERSION = 2  # ShareAcknowledge v2: RENEW acknowledgements (KIP-1222)

# Errors after which the broker no longer knows this member's share session with it. An unknown member
# (removed after its session timeout) rejoins through the heartbeat; its fetching opens a new session.
_SESSION_LOST = (
    errors.ShareSessionNotFoundError,
    errors.InvalidShareSessionEpochError,
    errors.UnknownMemberIdError,
)
_LEADER_MOVED = (
    errors.NotLeaderOrFollowerError,
    errors.UnknownTopicOrPartitionError,
    errors.FencedLeaderEpochError,
    errors.UnknownTopicIdError,
    errors.LeaderNotAvailableError,
)


class ShareConsumer(AsyncResource):
    """A member of a share group; made by ``client.share_consumer(topics, group=...)``, used with ``async with``.

    Records come as ``ShareMessage`` (a ``Message`` with ``delivery_count``). In ``"implicit"`` mode every
    record handed out is accepted at the next ``receive`` / ``getmany`` / iteration step or ``commit``;
    ``ack(message, type=...)`` settles one sooner or otherwise. In ``"explicit"`` mode only ``ack`` settles
    records; one left unacknowledged is delivered again once its acquisition lock times out.
    Acknowledgements ride on the next ShareFetch to the partition's leader; ``commit`` sends them at once.

    It follows the shared consumer contract where it applies (``receive``, ``getmany``, ``async for``,
    ``ack``, ``skip``, deserializers, ``async with``); seeking does not: where a share group reads is the
    group's, set with ``Admin.alter_share_group_offsets``.
    """

    def __init__(self, session: Session, topics: str | Iterable[str], config: ShareConsumerConfig) -> None:
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(name, str) and name for name in names):
            raise ConfigurationError("share_consumer: topics must name at least one topic")
        self._session = session
        self.topics = names
        self.group = group = config.group
        self.acknowledgement_mode: AcknowledgementMode = config.share_acknowledgement_mode
        max_poll_records = config.max_poll_records
        self._settings = FetchSettings(
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            max_records=max_poll_records,
            batch_size=max_poll_records,
            acquire_mode=0 if config.share_acquire_mode == "batch_optimized" else 1,
        )
        self._max_poll_records = max_poll_records
        self._check_crcs = config.check_crcs
        self._max_decompressed = config.fetch_max_decompressed_bytes
        self._gate: Deserializing[ShareMessage] = Deserializing(
            config.key_deserializer, config.value_deserializer, lambda m: m.offset
        )
        self._acks = ShareAcks()
        self._membership = ShareMembership(session, group, names, rack=config.client_rack, on_assignment=self._assigned)
        self._life = Lifecycle(f"share consumer of group {group!r}")
        self._affinity = session.affinity
        self._buffer: deque[ShareMessage] = deque()
        self._data = asyncio.Event()
        self._space = asyncio.Event()
        self._wake = asyncio.Event()  # the supervisor: assignment or leaders changed
        self._acked = asyncio.Event()  # fetch loops waiting for room: acknowledgements to send
        self._share_sessions: dict[int, ShareSession] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._by_node: dict[int, frozenset[TopicPartition]] = {}
        self._failures: dict[TopicPartition, MqwireError] = {}
        self._error: BaseException | None = None
        # records: handed to the application (counted per poll); bytes and batches: per partition fetched.
        self.counters = ConsumerCounters()

    # ------------------------------------------------------------------------------ lifecycle
    @property
    def member_id(self) -> str:
        """This member's id in the share group."""
        return self._membership.member_id

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the share group currently gives this member to fetch from."""
        return self._membership.assignment

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._life.closed

    async def start(self) -> None:
        """Join the share group; a broker without share groups raises ``UnsupportedVersionError`` naming the API."""
        self._affinity.check()
        await self._life.start(self._start)

    async def _start(self) -> None:
        self._session.adopt(self)
        self._session.track(self.topics)
        await self._session.refresh_metadata(self.topics)
        await self._membership.join()
        self._life.tasks.spawn(self._membership.run(), name="heartbeat")
        self._life.tasks.spawn(self._supervise(), name="supervisor")

    async def close(self) -> None:
        """Settle what is held (implicit mode accepts what was delivered; undelivered records are released),
        close the share sessions, and leave the group. In a process forked after the client was made it does
        nothing: the membership is the parent's."""
        if not self._affinity.may_close():
            return
        await self._life.close(self._close)

    async def _close(self) -> None:
        try:
            if self._life.started:
                if self.acknowledgement_mode == "implicit":
                    self._acks.accept_delivered()
                self._acks.release_undelivered()
                self._buffer.clear()
                for task in list(self._loops.values()):
                    task.cancel()
                await asyncio.gather(*self._loops.values(), return_exceptions=True)
                await self._acknowledge_all(close=True)
            await self._membership.leave()  # also closes its connection after a failed start
        finally:
            self._session.release(self)

    # ------------------------------------------------------------------------------ receiving
    def __aiter__(self) -> AsyncIterator[ShareMessage]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ShareMessage]:
        while True:
            yield await self.receive()

    async def receive(self, timeout: float | None = None) -> ShareMessage:
        """The next record; ``ReceiveTimeoutError`` after ``timeout`` seconds (None: wait as long as it takes)."""
        messages = await self._poll(timeout, 1)
        if not messages:
            raise ReceiveTimeoutError(f"no record within {timeout} s")
        return messages[0]

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> list[ShareMessage]:
        """The records ready within ``timeout`` seconds, at most ``max_records`` (default ``max_poll_records``)."""
        return await self._poll(timeout, max_records or self._max_poll_records)

    async def _poll(self, timeout: float | None, limit: int) -> list[ShareMessage]:
        self._affinity.check()
        self._life.check_open()
        if not self._life.started:
            await self.start()
        if self.acknowledgement_mode == "implicit" and self._acks.accept_delivered():
            self._acked.set()
        held = self._gate.take_held(limit)
        if held:
            return self._deliver(self._gate.many(held))
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            self._raise_failure()
            taken = self._take(limit)
            if taken:
                return self._deliver(self._gate.many(taken))
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return []
            self._data.clear()
            try:
                await asyncio.wait_for(self._data.wait(), remaining)
            except TimeoutError:
                return []

    def _take(self, limit: int) -> list[ShareMessage]:
        now = time.monotonic()
        out: list[ShareMessage] = []
        while self._buffer and len(out) < limit:
            message = self._buffer.popleft()
            # A record whose lock ran out while it waited here is the broker's again: not handed out.
            if self._acks.is_held(message.topic_partition, message.offset, message._serial, now):
                out.append(message)
        if len(self._buffer) < self._max_poll_records:
            self._space.set()
        return out

    def _deliver(self, messages: list[ShareMessage]) -> list[ShareMessage]:
        for message in messages:
            self._acks.delivered(message.topic_partition, message.offset)
        self.counters.records += len(messages)
        return messages

    def stats(self) -> ConsumerStats:
        """Records handed out and bytes fetched, ShareFetch requests, errors, the buffer and the assignments
        taken. A share group keeps no position per member, so there is no lag (``lag`` is empty): the broker
        tracks what is unacknowledged for the whole group."""
        return self.counters.snapshot(
            "kafka", self.topics, buffered_records=len(self._buffer) + self._gate.held, lag=()
        )

    def _raise_failure(self) -> None:
        failure = self._error or self._membership.failure
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------------------ acknowledging
    async def ack(self, message: ShareMessage, /, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Settle ``message``: ``ACCEPT`` (done), ``RELEASE`` (deliver again, to any member) or ``REJECT``
        (never deliver again). Sent with the next fetch, or by ``commit``.

        Raises ``AlreadyAcknowledgedError``, ``NotAcquiredError`` (another consumer's message, or delivered
        again since) or ``AcquisitionLockExpiredError``; then nothing is sent.
        """
        self._affinity.check()
        self._life.check_open()
        if not isinstance(message, ShareMessage):
            raise TypeError("ack() takes a message received from this share consumer")
        self._acks.ack(
            message.topic_partition, message.offset, message._serial, AcknowledgeType(type), time.monotonic()
        )
        self._acked.set()

    async def renew(self, message: ShareMessage, /) -> None:
        """Extend the acquisition lock of ``message`` (a RENEW acknowledgement, KIP-1222), for processing
        that takes longer than the group's ``share.record.lock.duration.ms``; sent at once.

        Needs ShareAcknowledge v2 (Kafka 4.2+; ``UnsupportedVersionError`` otherwise) and a group whose
        ``share.renew.acknowledge.enable`` is on; raises as ``ack`` for a message not held, and the
        broker's error when it refuses.
        """
        self._affinity.check()
        self._life.check_open()
        tp = message.topic_partition
        self._acks.check(tp, message.offset, message._serial, time.monotonic())
        node = self._session.metadata.leader_id(*tp)
        share = self._share_sessions.get(node)
        if share is None:
            raise errors.NotLeaderOrFollowerError(
                f"{tp.topic}[{tp.partition}]: no share session with its leader"
            )
        async with self._lock(node):
            if not share.can_acknowledge:
                raise errors.ShareSessionNotFoundError(
                    f"{tp.topic}[{tp.partition}]: the share session is reopening"
                )
            connection = await self._session.connection(node)
            version = connection.version_for(SHARE_ACKNOWLEDGE_KEY)
            if version < RENEW_MIN_VERSION:
                raise UnsupportedVersionError(
                    f"renewing a record lock needs ShareAcknowledge v{RENEW_MIN_VERSION} (Kafka 4.2+); "
                    f"the broker offers v{version}"
                )
            sent_at = time.monotonic()
            body = share.acknowledge_request({tp: {message.offset: RENEW}}, self._topic_ids(), renew=True)
            response = await connection.request(body, version=version)
            if response.error_code:
                error = errors.error_for(
                    response.error_code, response.error_message or "ShareAcknowledge (renew)"
                )
                if isinstance(error, _SESSION_LOST):
                    share.reset()
                raise error
            share.answered()
        for topic in response.responses:
            for part in topic.partitions:
                if part.error_code:
                    raise errors.error_for(part.error_code, part.error_message or f"renewing {tp}")
        deadline = sent_at + response.acquisition_lock_timeout_ms / 1000
        self._acks.renewed(tp, message.offset, message._serial, deadline)

    def skip(self, message: ShareMessage, /) -> None:
        """Go on past a message whose deserializer failed; it is rejected (never delivered again)."""
        self._gate.skip(message)
        self._acks.delivered(message.topic_partition, message.offset)
        self._acks.ack(
            message.topic_partition, message.offset, message._serial, AcknowledgeType.REJECT, time.monotonic()
        )

    async def commit(self) -> dict[TopicPartition, MqwireError]:
        """Send every pending acknowledgement now and wait for the brokers' answers.

        Returns the partitions whose acknowledgements failed since the last commit, with the error (the
        broker's, such as ``InvalidRecordStateError``, or ``AcquisitionLockExpiredError`` for records whose
        lock ran out before the acknowledgement could be sent); an empty dict when all went through. A
        failed acknowledgement loses nothing: the record is delivered again.
        """
        self._affinity.check()
        self._life.check_open()
        if self.acknowledgement_mode == "implicit":
            self._acks.accept_delivered()
        await self._acknowledge_all(close=False)
        failures, self._failures = self._failures, {}
        return failures

    async def _acknowledge_all(self, *, close: bool) -> None:
        nodes = set(self._share_sessions)
        await asyncio.gather(*(self._acknowledge_node(node, close=close) for node in nodes))
        metadata = self._session.metadata
        stranded = [
            tp
            for tp in self._acks.pending_partitions()
            if (share := self._share_sessions.get(metadata.leader_id(*tp))) is None or not share.can_acknowledge
        ]
        if stranded:
            # Acks of partitions whose leader has no open session (it moved): they cannot be sent; the
            # records come back once their locks expire.
            _, left = self._acks.take(stranded, float("inf"))
            for tp, _offset in left:
                self._failures.setdefault(
                    tp, errors.NotLeaderOrFollowerError(f"{tp.topic}[{tp.partition}]: no share session")
                )

    async def _acknowledge_node(self, node: int, *, close: bool) -> None:
        share = self._share_sessions[node]
        async with self._lock(node):
            led = [
                tp for tp in self._acks.pending_partitions() if self._session.metadata.leader_id(*tp) == node
            ]
            if not share.can_acknowledge:
                return
            ids = self._topic_ids()
            acks = self._take_acks(tp for tp in led if tp.topic in ids)
            if not acks and not close:
                return
            try:
                connection = await self._session.connection(node)
                body = share.acknowledge_request(acks, ids, close=close)
                response = await connection.request(
                    body, version=connection.version_for(SHARE_ACKNOWLEDGE_KEY)
                )
            except MqwireError as exc:
                self._fail(acks, exc)
                return
            finally:
                self._acks.answered(acks)
            if response.error_code:
                error = errors.error_for(
                    response.error_code, response.error_message or f"ShareAcknowledge to {node}"
                )
                self._fail(acks, error)
                if isinstance(error, _SESSION_LOST):
                    share.reset()
                return
            share.answered()
            names = self._session.metadata.topic_names
            for topic in response.responses:
                for part in topic.partitions:
                    if part.error_code:
                        tp = TopicPartition(names.get(topic.topic_id, ""), part.partition_index)
                        self._failures[tp] = errors.error_for(part.error_code, part.error_message or str(tp))

    def _take_acks(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[int, int]]:
        acks, expired = self._acks.take(tps, time.monotonic())
        for tp, offset in expired:
            self._failures.setdefault(
                tp,
                errors.AcquisitionLockExpiredError(
                    f"{tp.topic}[{tp.partition}]@{offset}: the lock expired before it was sent"
                ),
            )
        return acks

    def _fail(self, acks: dict[TopicPartition, dict[int, int]], error: MqwireError) -> None:
        for tp in acks:
            self._failures[tp] = error

    def _lock(self, node: int) -> asyncio.Lock:
        lock = self._locks.get(node)
        if lock is None:
            lock = self._locks[node] = asyncio.Lock()
        return lock

    def _topic_ids(self) -> dict[str, Any]:
        metadata = self._session.metadata
        return {name: topic_id for topic_id, name in metadata.topic_names.items()}

    # ------------------------------------------------------------------------------ fetching
    def _assigned(self, assignment: frozenset[TopicPartition]) -> None:
        self.counters.rebalances += 1
        self._wake.set()

    async def _supervise(self) -> None:
        backoff = self._session.new_backoff()
        while True:
            self._wake.clear()
            metadata = self._session.metadata
            assignment = self._membership.assignment
            if any(metadata.leader_id(*tp) < 0 for tp in assignment):
                try:
                    await self._session.refresh_metadata(self.topics)
                except MqwireError as exc:
                    log.debug("share consumer: metadata refresh failed: %s", exc)
                    await asyncio.sleep(backoff.next_delay())
                    continue
            by_node: dict[int, set[TopicPartition]] = {}
            for tp in assignment:
                leader = metadata.leader_id(*tp)
                if leader >= 0:
                    by_node.setdefault(leader, set()).add(tp)
            self._by_node = {node: frozenset(tps) for node, tps in by_node.items()}
            for node in self._by_node:
                if node not in self._loops:
                    self._loops[node] = self._life.tasks.spawn(self._fetch_loop(node), name=f"fetch {node}")
            backoff.reset()
            await self._wake.wait()

    async def _fetch_loop(self, node: int) -> None:
        share = self._share_sessions.setdefault(node, ShareSession(self.group, self.member_id))
        backoff = self._session.new_backoff()
        try:
            while True:
                want = self._by_node.get(node, frozenset())
                if not want:
                    return  # commit and close still acknowledge through the session
                if len(self._buffer) >= self._max_poll_records:
                    if share.can_acknowledge and self._acks.has_pending(want):
                        await self._acknowledge_node(node, close=False)
                        continue
                    self._space.clear()
                    self._acked.clear()
                    await _first(self._space.wait(), self._acked.wait())
                    continue
                if await self._fetch_once(node, share, want):
                    backoff.reset()
                else:
                    await asyncio.sleep(backoff.next_delay())
        except Exception as exc:  # a bug must reach the application, not end the fetching silently
            log.exception("share fetch loop for broker %d failed", node)
            self._error = exc
            self._data.set()
        finally:
            if self._loops.get(node) is asyncio.current_task():
                del self._loops[node]

    async def _fetch_once(self, node: int, share: ShareSession, want: frozenset[TopicPartition]) -> bool:
        """One ShareFetch; False when the loop should back off."""
        async with self._lock(node):
            ids = self._topic_ids()
            want = frozenset(tp for tp in want if tp.topic in ids)  # a topic deleted meanwhile: not asked for
            acks = self._take_acks(want) if share.can_acknowledge else {}
            sent_at = time.monotonic()
            try:
                connection = await self._session.connection(node)
                version = connection.version_for(SHARE_FETCH_KEY)
                body = share.fetch_request(want, acks, ids, self._settings)
                timeout = self._session.request_timeout + self._settings.max_wait_ms / 1000
                self.counters.requests += 1
                response = await connection.request(body, version=version, timeout=timeout)
            except (
                ConnectError,
                ConnectionLostError,
                RequestTimeoutError,
                RetriableError,
                errors.BrokerNotAvailableError,  # the node left the metadata: its leaderships moved
            ) as exc:
                log.debug("share fetch from broker %d failed: %s", node, exc)
                self.counters.error(exc)
                self._fail(acks, exc)
                self._acks.answered(acks)
                share.reset()
                self._session.request_update(self.topics)
                self._wake.set()
                return False
            self._acks.answered(acks)
            if response.error_code:
                error = errors.error_for(
                    response.error_code, response.error_message or f"ShareFetch to broker {node}"
                )
                self.counters.error(error)
                self._fail(acks, error)
                share.reset()
                if not error.retriable and not isinstance(error, _SESSION_LOST):
                    self._error = error
                    self._data.set()
                return False
            share.answered()
        deadline = sent_at + response.acquisition_lock_timeout_ms / 1000
        names = self._session.metadata.topic_names
        healthy = True
        got = 0
        budget = DecompressionBudget(self._max_decompressed)
        for topic in response.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                if data.acknowledge_error_code:
                    self._failures[tp] = errors.error_for(
                        data.acknowledge_error_code, data.acknowledge_error_message or f"acknowledging {tp}"
                    )
                if data.error_code:
                    error = errors.error_for(data.error_code, data.error_message or f"share fetch of {tp}")
                    if isinstance(error, _LEADER_MOVED):
                        self._session.metadata.forget_leader(*tp)
                        self._wake.set()
                    log.debug("share fetch of %s: %s", tp, error)
                    self.counters.error(error)
                    healthy = False
                    continue
                try:
                    messages = acquired_messages(
                        tp,
                        data.records,
                        data.acquired_records,
                        deadline,
                        self._acks,
                        check_crcs=self._check_crcs,
                        budget=budget,
                    )
                except (
                    MqwireError
                ) as exc:  # malformed records: left to their lock timeout, then delivered again
                    log.warning("share fetch of %s: %s", tp, exc)
                    self.counters.error(exc)
                    continue
                if messages:
                    self.counters.bytes += len(data.records or b"")
                    self.counters.batches += 1
                self._buffer.extend(messages)
                got += len(messages)
        if got:
            self._data.set()
        return healthy


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    """Until the first of ``waits`` ends; the others are cancelled."""
    tasks = OwnedTasks("share consumer wait")
    try:
        await asyncio.wait([tasks.spawn(wait, awaited=True) for wait in waits], return_when=asyncio.FIRST_COMPLETED)
    finally:
        tasks.cancel()
