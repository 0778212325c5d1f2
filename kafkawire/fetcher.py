"""The consumer's fetch machinery: one fetch loop per leader broker, feeding the bounded receive queue.

Each loop sends one FetchRequest for all the partitions its broker leads, decodes the records batch by
batch, drops what the application must not see (control batches, aborted transactions under
read_committed, records before the fetch position inside a compressed batch) and queues the rest. A loop
waits before fetching again while the queue holds ``max_buffered_records`` or more: that is the
backpressure from a slow application to the broker. A supervisor task resets positions (ListOffsets),
follows leaders through metadata refreshes and starts the loops.

Compressed batches are decompressed one at a time, only when their records are needed, under one budget
per fetch response (``fetch_max_decompressed_bytes``): what a response's data may expand to is the
consumer's choice, not the producer's. A batch that no longer fits what is left of the budget waits for
the next fetch, where its partition comes first in turn; a batch larger than the whole budget fails its
partition (RecordBatchTooLargeError) after the records before it were delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkawire import errors
from kafkawire.message import Message, TimestampType
from kafkawire.metadata import ZERO_UUID, TopicPartition
from kafkawire.offsets import EARLIEST, LATEST, READ_COMMITTED, list_offsets
from kafkawire.protocol.messages import FetchPartition, FetchRequest, FetchTopic
from kafkawire.protocol.records import (
    ABORT_MARKER,
    DEFAULT_MAX_UNCOMPRESSED,
    DecompressionBudget,
    RecordBatch,
    RecordBatchTooLargeError,
    decode_batches,
)
from kafkawire.receive_queue import ReceiveQueue
from kafkawire.waker import Waker
from mqwire.common.errors import ConnectError, ConnectionLostError, MqwireError, RequestTimeoutError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.stats import ConsumerCounters

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

FETCH_KEY = 1
FETCH_BY_NAME_MAX = 12
CREATE_TIME = TimestampType.CREATE_TIME
LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


@dataclass
class FetchConfig:
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_partition_bytes: int
    isolation_level: int
    reset: str  # "earliest" or "latest"
    check_crcs: bool
    request_timeout: float
    retry_backoff: float
    # The decompressed bytes one fetch response may expand to, over all its partitions.
    max_decompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED


@dataclass(slots=True)
class PartitionState:
    tp: TopicPartition
    # Next offset to fetch; None until known (committed offset or a reset).
    position: int | None = None
    # Set by seek: fetched data for older generations is dropped.
    generation: int = 0
    reset: str | None = None
    leader: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    paused: bool = False
    # A fatal error stops fetching the partition until the application seeks.
    failed: bool = False

    @property
    def fetchable(self) -> bool:
        return self.position is not None and self.reset is None and not self.paused and not self.failed


def batches_to_messages(
    tp: TopicPartition,
    batches: list[RecordBatch],
    position: int,
    aborted: list[tuple[int, int]] | None,
    read_committed: bool,
    budget: DecompressionBudget | None = None,
) -> tuple[list[Message], int]:
    """The application records of ``batches`` at or after ``position``, and the position after them.

    ``batches`` may be lazily decoded: only the batches handed to the application have their records read
    (ProtocolError for a malformed one). With a ``budget``, compressed batches are decompressed out of it
    and the records stop before the first batch that does not fit (the position stays there).

    ``aborted`` is the fetch response's (first_offset, producer_id) list: under read_committed, a
    transactional batch from a producer whose aborted transaction started at or before the batch is
    dropped until that producer's abort marker.
    """
    topic, partition = tp
    out: list[Message] = []
    heap = list(aborted or ())
    heapq.heapify(heap)
    aborted_producers: set[int] = set()
    for batch in batches:
        next_offset = batch.next_offset
        if read_committed and batch.producer_id >= 0:
            last_offset = next_offset - 1
            while heap and heap[0][0] <= last_offset:
                aborted_producers.add(heapq.heappop(heap)[1])
            if batch.is_control:
                if budget is not None and not budget.inflate(batch):
                    break
                if batch.control_type() == ABORT_MARKER:
                    aborted_producers.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborted_producers:
                position = max(position, next_offset)
                continue
        if batch.is_control or next_offset <= position:
            position = max(position, next_offset)
            continue
        if budget is not None and not budget.inflate(batch):
            break
        timestamp_type = LOG_APPEND_TIME if batch.log_append_time else CREATE_TIME
        epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
        # Messages straight from the batch's bytes: Message(topic, partition, offset, key, value, headers,
        # timestamp, timestamp_type, epoch) without an intermediate record per message.
        messages: list[Message] = batch.decode_records(Message, (topic, partition), (timestamp_type, epoch))
        if batch.base_offset < position:
            messages = [message for message in messages if message.offset >= position]
        out += messages
        position = next_offset
    return out, position


class Fetcher:
    def __init__(
        self, session: Session, states: dict[TopicPartition, PartitionState], queue: ReceiveQueue, config: FetchConfig
    ) -> None:
        self.session = session
        self.states = states
        self.queue = queue
        self.config = config
        self.waker = Waker()
        self._tasks = OwnedTasks("kafka fetcher")
        self._nodes: dict[int, asyncio.Task[None]] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._closed = False
        # Per fetch request and per partition's records, never per record.
        self.counters = ConsumerCounters()

    def start(self) -> None:
        if self._supervisor is None:
            self._supervisor = self._tasks.spawn(self._supervise(), name="supervisor")

    def wake(self) -> None:
        self.waker.wake()

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._nodes.values())
        if self._supervisor is not None:
            tasks.append(self._supervisor)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._nodes.clear()

    # ---------------------------------------------------------------------------------- supervisor
    async def _supervise(self) -> None:
        backoff = self.session.new_backoff()
        while not self._closed:
            self.waker.clear()
            trouble = False
            try:
                trouble |= await self._reset_positions()
                trouble |= await self._update_leaders()
            except MqwireError as exc:
                if not exc.retriable:
                    log.warning("consumer cannot continue: %s", exc)
                    self.queue.put_error(exc)
                    await self.waker.wait(None)  # until the application seeks or closes
                    continue
                log.debug("consumer housekeeping failed (%s); retrying", exc)
                trouble = True
            except Exception as exc:  # a bug must reach the application, not kill the consumer silently
                log.exception("consumer fetch supervisor failed")
                self.queue.put_error(exc)
                return
            self._start_node_loops()
            if trouble:
                await self.waker.wait(backoff.next_delay())
            else:
                backoff.reset()
                await self.waker.wait(None)

    async def _reset_positions(self) -> bool:
        pending = {tp: state.reset for tp, state in self.states.items() if state.reset is not None}
        if not pending:
            return False
        specs = {tp: EARLIEST if how == "earliest" else LATEST for tp, how in pending.items()}
        found = await list_offsets(self.session, specs, isolation_level=self.config.isolation_level)
        for tp, value in found.items():
            state = self.states.get(tp)
            if state is not None and state.reset == pending[tp]:
                state.position = value.offset
                state.reset = None
                log.debug("%s-%d: position reset to %s offset %d", tp.topic, tp.partition, pending[tp], value.offset)
        return any(state.reset is not None for state in self.states.values())

    async def _update_leaders(self) -> bool:
        metadata = self.session.metadata
        # A partition whose fetch failed (leader = -1) asks for fresh metadata too: the leader may have moved.
        missing = [s for s in self.states.values() if s.leader < 0 or metadata.leader_id(*s.tp) < 0]
        if missing:
            await self.session.refresh_metadata({s.tp.topic for s in self.states.values()})
        lost = False
        for state in self.states.values():
            state.leader = metadata.leader_id(*state.tp)
            lost |= state.leader < 0
        return lost

    def _start_node_loops(self) -> None:
        for state in self.states.values():
            node = state.leader
            if node >= 0 and state.fetchable and node not in self._nodes:
                self._nodes[node] = self._tasks.spawn(self._fetch_loop(node), name=f"fetch loop of broker {node}")

    # ---------------------------------------------------------------------------------- fetch loop
    async def _fetch_loop(self, node: int) -> None:
        rotation = 0
        try:
            while not self._closed:
                if not self.queue.has_space:
                    await self.queue.wait_space()
                    continue
                partitions = [s for s in self.states.values() if s.leader == node and s.fetchable]
                if not partitions:
                    return
                # Rotate the order so that no partition always comes last when the response size runs out.
                rotation = (rotation + 1) % len(partitions)
                partitions = partitions[rotation:] + partitions[:rotation]
                if not await self._fetch_once(node, partitions):
                    await asyncio.sleep(self.config.retry_backoff)
        except Exception as exc:
            log.exception("fetch loop for broker %d failed", node)
            self.queue.put_error(exc)
        finally:
            if self._nodes.get(node) is asyncio.current_task():
                del self._nodes[node]
            self.waker.wake()

    async def _fetch_once(self, node: int, partitions: list[PartitionState]) -> bool:
        """One fetch from ``node``; False when the loop should pause before the next one."""
        config = self.config
        connection = None
        try:
            connection = await self.session.connection(node)
            metadata = self.session.metadata
            version = connection.version_for(FETCH_KEY)
            if version > FETCH_BY_NAME_MAX and any(metadata.topic_id(s.tp.topic) is None for s in partitions):
                version = connection.version_for(FETCH_KEY, at_most=FETCH_BY_NAME_MAX)
            sent = {s.tp: (s.generation, s.position) for s in partitions}
            body = self._request(partitions, version)
            self.counters.requests += 1
            began = time.monotonic()
            response = await connection.request(
                body, version=version, timeout=config.request_timeout + config.max_wait_ms / 1000
            )
            self.session.measures.fetch_request(node, time.monotonic() - began)
        except (ConnectError, ConnectionLostError, RequestTimeoutError) as exc:
            log.debug("fetch from broker %d failed: %s", node, exc)
            self.counters.error(exc)
            if connection is not None:
                self.session.discard(connection, exc)
            self._lose_leader(partitions)
            return False
        if response.error_code:
            error = errors.error_for(response.error_code, f"fetch from broker {node}")
            if not error.retriable:
                self.queue.put_error(error)
            self._lose_leader(partitions)
            return False
        return self._handle_response(response, sent)

    def _request(self, partitions: list[PartitionState], version: int) -> FetchRequest:
        config = self.config
        metadata = self.session.metadata
        by_topic: dict[str, list[FetchPartition]] = {}
        for state in partitions:
            assert state.position is not None
            by_topic.setdefault(state.tp.topic, []).append(
                FetchPartition(
                    partition=state.tp.partition,
                    current_leader_epoch=metadata.leader_epoch(*state.tp),
                    fetch_offset=state.position,
                    partition_max_bytes=config.max_partition_bytes,
                )
            )
        topics = []
        for name, parts in by_topic.items():
            topic = FetchTopic(topic=name, partitions=parts)
            if version > FETCH_BY_NAME_MAX:
                topic.topic_id = metadata.topic_id(name) or ZERO_UUID
            topics.append(topic)
        return FetchRequest(
            max_wait_ms=config.max_wait_ms,
            min_bytes=config.min_bytes,
            max_bytes=config.max_bytes,
            isolation_level=config.isolation_level,
            session_id=0,
            session_epoch=-1,  # no fetch session: every request is complete in itself
            topics=topics,
        )

    def _handle_response(self, response: Any, sent: dict[TopicPartition, tuple[int, int | None]]) -> bool:
        names = self.session.metadata.topic_names
        read_committed = self.config.isolation_level == READ_COMMITTED
        budget = DecompressionBudget(self.config.max_decompressed_bytes)
        healthy = True
        stale: set[str] = set()
        for topic in response.responses:
            name = topic.topic or names.get(topic.topic_id, "")
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                state = self.states.get(tp)
                request = sent.get(tp)
                if state is None or request is None or (state.generation, state.position) != request:
                    continue  # sought elsewhere, or not ours: this data is stale
                if data.error_code:
                    healthy &= self._partition_error(state, data.error_code, stale)
                    continue
                state.high_watermark = data.high_watermark
                state.last_stable_offset = data.last_stable_offset
                state.log_start_offset = data.log_start_offset
                if not data.records:
                    continue
                try:
                    batches = decode_batches(data.records, verify_crc=self.config.check_crcs, lazy=True)
                except MqwireError as exc:
                    state.failed = True
                    self.queue.put_error(exc)
                    continue
                if not batches:
                    continue
                aborted = None
                if read_committed and data.aborted_transactions:
                    aborted = [(a.first_offset, a.producer_id) for a in data.aborted_transactions]
                assert state.position is not None
                try:
                    messages, position = batches_to_messages(
                        tp, batches, state.position, aborted, read_committed, budget
                    )
                except RecordBatchTooLargeError as exc:
                    self._fail_oversized(state, batches, aborted, read_committed, budget, exc)
                    continue
                except MqwireError as exc:  # a malformed record, found when its batch is read
                    state.failed = True
                    self.queue.put_error(exc)
                    continue
                state.position = position
                if messages:
                    counters = self.counters
                    counters.records += len(messages)
                    counters.bytes += len(data.records)
                    counters.batches += 1
                self.queue.put(tp, messages)
        if stale:
            self.session.request_update(stale)
            self.waker.wake()
        return healthy

    def _fail_oversized(
        self,
        state: PartitionState,
        batches: list[RecordBatch],
        aborted: list[tuple[int, int]] | None,
        read_committed: bool,
        budget: DecompressionBudget,
        error: RecordBatchTooLargeError,
    ) -> None:
        """Deliver the records before a batch larger than the whole budget, then stop the partition there."""
        tp = state.tp
        assert state.position is not None
        before = [batch for batch in batches if batch.base_offset < error.base_offset]
        # These batches were inflated already: the budget is not charged for them again.
        messages, position = batches_to_messages(tp, before, state.position, aborted, read_committed, budget)
        state.position = position
        self.queue.put(tp, messages)
        state.failed = True
        failure = RecordBatchTooLargeError(
            f"{tp.topic}-{tp.partition}: {error} (fetch_max_decompressed_bytes); seek past offset "
            f"{error.base_offset} to go on",
            base_offset=error.base_offset,
            limit=error.limit,
        )
        self.counters.error(failure)
        self.queue.put_error(failure)

    def _partition_error(self, state: PartitionState, code: int, stale: set[str]) -> bool:
        error = errors.error_for(code, f"fetching {state.tp.topic}-{state.tp.partition}")
        self.counters.error(error)
        if isinstance(error, errors.OffsetOutOfRangeError):
            log.info(
                "%s-%d: offset %s out of range; resetting to %s",
                state.tp.topic, state.tp.partition, state.position, self.config.reset,
            )
            state.reset = self.config.reset
            self.waker.wake()
            return True
        if error.retriable or error.refresh_metadata:
            state.leader = -1
            self.session.metadata.forget_leader(*state.tp)
            stale.add(state.tp.topic)
            return False
        state.failed = True
        self.queue.put_error(error)
        return True

    def _lose_leader(self, partitions: Iterable[PartitionState]) -> None:
        for state in partitions:
            state.leader = -1
        self.waker.wake()
