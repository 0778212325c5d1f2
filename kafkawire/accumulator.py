"""The producer's buffer: records collected into one open batch per partition until the sender takes them.

A batch is ready when it is full, its linger time is up, a flush asks for everything, or it is a retry.
``drain`` hands the sender at most one ready batch per partition, grouped by the leader that takes them, as
far as the sender's ``SendWindow`` lets them go, and reports when the next batch will become ready so the
sender can sleep until then. Records are encoded into the batch as they arrive (``BatchBuilder``), so
sending a batch costs one compression and one copy.

A batch's size limit is fixed (``batch_size``) unless ``max_batch_size`` is larger: then a partition whose
batches fill faster than they are acknowledged gets larger ones (``_limit_for``), so a busy partition sends
fewer, larger requests while a quiet one keeps small batches; memory is still reserved per batch for its
limit, so ``buffer_memory`` bounds it as before.

Batching is all here, the short way of a bare value included (``append_now``); the waits on the buffer
that need the event loop (for room, for a flush) are the sender's (``buffer_waits``). Nothing here awaits.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kafkawire.bulk import BulkSend
from kafkawire.delivery import BatchOutcome, RecordFuture
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.records import HEADER_SIZE, BatchBuilder
from mqwire.common.errors import MqwireError

Header = tuple[str, bytes | None]

# Per-record framing beyond key, value and header bytes: length, attributes, deltas and lengths (varints).
RECORD_OVERHEAD = 21
HEADER_OVERHEAD = 10
SEQUENCE_LIMIT = 2**31
# Records of its first record's size a growing batch has room for from the start (see _limit_for).
RECORDS_PER_BATCH = 4
# Seconds before its linger time is up from which a batch counts as ready. The event loops' timers fire up to a
# millisecond late (epoll and libuv count whole milliseconds), so batches went out half a millisecond past their
# linger time on average; counted ready this much early, they go out at it on average, never later than it plus
# the same half millisecond.
TIMER_SLACK = 0.0005
# Buffers of acknowledged batches kept for the next batches (see recycle): a new batch writes into memory already
# mapped instead of fresh pages, each a page fault (about 3.5 µs on a virtual machine) per 4 KB written. Past the
# producer's buffer_memory: at most this many batches of at most max_batch_size each.
SPARE_BUFFERS = 8


def estimate_record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
    """An upper bound on the encoded size of one record."""
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    for name, header_value in headers:
        size += HEADER_OVERHEAD + len(name) * 4 + (len(header_value) if header_value else 0)
    return size


@dataclass(frozen=True, slots=True)
class SendWindow:
    """What the sender lets through now, as ``drain`` reads it: taken by the sender before each drain.

    ``leader_of`` is the metadata's leader lookup (-1: unknown). A node in ``full_nodes`` has as many requests
    in flight as it may. A partition with a batch in flight (``in_flight``) sends no other while ``strict``
    (one batch per partition on the wire), and an idempotent producer's retry waits until the partition has
    none in flight (a retry must be the lowest sequence outstanding). A partition in ``held`` may not send at
    all yet (not added to the transaction).
    """

    leader_of: Callable[[str, int], int]
    full_nodes: AbstractSet[int]
    in_flight: Mapping[TopicPartition, int]
    strict: bool
    idempotent: bool
    held: AbstractSet[TopicPartition]


class ProducerBatch:
    """The records of one partition that travel together, and the outcome their futures share."""

    __slots__ = (
        "_encoded",
        "attempts",
        "builder",
        "bulk",
        "closed",
        "created",
        "deadline",
        "filled",
        "filled_early",
        "in_flight",
        "last_error",
        "limit",
        "outcome",
        "reserved",
        "retry_at",
        "sequence",
        "tp",
    )

    def __init__(
        self, tp: TopicPartition, builder: BatchBuilder, created: float, deadline: float, limit: int
    ) -> None:
        self.tp = tp
        self.builder = builder
        # The size at which the batch is complete (a single larger record makes a batch of its own).
        self.limit = limit
        # Closed because it was full (``seal``), not by its linger time or a flush.
        self.filled = False
        # Full before its linger time was up: the partition was given records faster than batches carry them.
        self.filled_early = False
        # The records' timestamps and what became of them, for the futures of records from enqueue; the
        # records of enqueue_many calls are also in ``bulk`` runs: (the call, its first index in this
        # batch, the call's positions of the run).
        self.outcome = BatchOutcome.on_running_loop(tp.topic, tp.partition)
        self.bulk: list[tuple[BulkSend, int, range | list[int]]] | None = None
        self.created = created
        self.deadline = deadline
        self.attempts = 0
        self.retry_at = 0.0
        # Base sequence of an idempotent producer, assigned when the batch is first sent, kept for retries.
        self.sequence: int | None = None
        self.closed = False
        self.in_flight = False
        self.reserved = 0
        self.last_error: BaseException | None = None
        self._encoded: bytearray | None = None

    def __len__(self) -> int:
        return len(self.outcome.timestamps)

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp.topic}-{self.tp.partition}, {len(self)} records, attempt {self.attempts})"

    @property
    def size(self) -> int:
        return self.builder.size

    def set_producer(self, producer_id: int, producer_epoch: int, sequence: int | None) -> None:
        builder = self.builder
        builder.producer_id = producer_id
        builder.producer_epoch = producer_epoch
        builder.base_sequence = -1 if sequence is None else sequence
        self.sequence = sequence
        self._encoded = None

    def encode(self) -> bytearray:
        """The batch as it goes on the wire; kept for retries that do not change the producer fields."""
        if self._encoded is None:
            self._encoded = self.builder.build_in_place(0)
        return self._encoded

    @property
    def encoded_size(self) -> int:
        return len(self._encoded) if self._encoded is not None else self.builder.size

    def complete(self, base_offset: int, log_append_time: int = -1) -> None:
        """Settle every record's future at once (their metadata is made when read)."""
        outcome = self.outcome
        outcome.succeed(base_offset, log_append_time)
        if outcome.error is not None:
            # An offset putting the last record past int64 failed the batch: its bulk calls fail alike.
            self.fail(outcome.error)
            return
        if self.bulk is not None:
            topic, partition = self.tp
            timestamps = self.outcome.timestamps
            for call, first, positions in self.bulk:
                stamp = timestamps[first] if log_append_time < 0 else log_append_time
                call.run_done(positions, topic, partition, -1 if base_offset < 0 else base_offset + first, stamp)
        self._finish()

    def fail(self, error: BaseException) -> None:
        self.outcome.fail(error)
        if self.bulk is not None:
            for call, _first, _positions in self.bulk:
                call.run_failed(error)
        self._finish()

    def _finish(self) -> None:
        self.closed = True  # a settled batch takes no more records (enqueue's short way looks at this)
        self._encoded = None


class Accumulator:
    """Per-partition queues of batches, bounded in memory."""

    def __init__(
        self,
        *,
        batch_size: int,
        linger: float,
        compression: str | None,
        buffer_memory: int,
        delivery_timeout: float,
        max_request_size: int,
        clock: Callable[[], float] | None = None,
        on_ready: Callable[[], None] = lambda: None,
        on_space: Callable[[], None] = lambda: None,
        transactional: bool = False,
        max_batch_size: int | None = None,
    ) -> None:
        self.transactional = transactional
        self.batch_size = batch_size
        # The most a busy partition's batches grow to; equal to batch_size: every batch has that size.
        self.max_batch_size = max(batch_size, max_batch_size or batch_size)
        self.linger = linger
        self.compression = compression
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout
        self.max_request_size = max_request_size
        # The event loop's clock (monotonic), unless a test brings its own.
        self.clock = clock or time.monotonic
        # Called when the sender should look again: a batch was created, filled, or needs a flush.
        self._on_ready = on_ready
        # Called when memory is returned and the buffer has room (a producer may be waiting for it).
        self.on_space = on_space
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        # The newest batch of each partition while it is not done yet: the next batch's size follows it.
        self._latest: dict[TopicPartition, ProducerBatch] = {}
        # The next batch's size for a partition whose newest batch, done already, was at least half full by
        # its linger time: twice that batch's if it was full before it, else the same.
        self._next_limit: dict[TopicPartition, int] = {}
        self.used = 0
        self._flushing = 0
        self.closing = False
        # Counts batches closed for appends: the producer yields to the sender when it grows.
        self.sealed = 0
        self._spare_buffers: list[bytearray] = []

    # ---------------------------------------------------------------------------------- appending
    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        abort_on_new_batch: bool = False,
    ) -> RecordFuture | None:
        """Add a record to the open batch of the partition; None when that needs a new batch and the caller
        said not to (the sticky partitioner then moves on first)."""
        # A plain tuple finds the TopicPartition key (same hash and equality) without building one per record.
        queue = self._queues.get((topic, partition))  # type: ignore[call-overload]
        if queue:
            batch = queue[-1]
            if not batch.closed:
                future = self.append_open(batch, timestamp, key, value, headers)
                if future is not None:
                    return future
        elif queue is None:
            queue = self._queues[TopicPartition(topic, partition)] = deque()
        if abort_on_new_batch:
            return None
        batch = self._new_batch(topic, partition, HEADER_SIZE + estimate_record_size(key, value, headers))
        new_future = self.append_open(batch, timestamp, key, value, headers)  # closes the batch if full
        assert new_future is not None  # the first record always fits
        queue.append(batch)
        if not batch.closed:
            self._on_ready()  # the sender needs the new batch's linger deadline
        return new_future

    def append_open(
        self, batch: ProducerBatch, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]
    ) -> RecordFuture | None:
        """Add a record to ``batch``, the open batch of its partition (``batch.closed`` is false); None if the
        record does not fit, and the batch is then closed. The batch is closed too once it is full."""
        size = batch.builder.add(timestamp, key, value, headers)
        if size < 0:
            self.seal(batch)
            return None
        outcome = batch.outcome
        timestamps = outcome.timestamps
        future = RecordFuture(outcome, len(timestamps))
        timestamps.append(timestamp)
        if size >= batch.limit:
            self.seal(batch)
        return future

    def append_now(self, batch: ProducerBatch, value: bytes) -> RecordFuture | None:
        """``append_open`` for the producer's most common record, a bare value (no key, no headers) stamped
        now: None if it does not fit. The batch is closed once it is full."""
        outcome = batch.outcome
        timestamps = outcome.timestamps
        index = len(timestamps)
        size = batch.builder.add_now(value, timestamps)
        if size < 0:
            return None
        if size >= batch.limit:
            self.seal(batch)
        return RecordFuture(outcome, index)

    def append_values_now(self, batch: ProducerBatch, values: list[bytes | None], start: int, stop: int) -> int:
        """``append_now`` for ``values[start:stop]`` in one pass, all stamped now: how many went in (as many as
        fit, from ``start``), at the places from ``len(batch.outcome)`` before the call. The batch is closed
        once full or once a value did not fit."""
        timestamp = time.time_ns() // 1_000_000
        added = batch.builder.append_many(timestamp, None, values, None, start, stop)
        if added:
            batch.outcome.timestamps.extend(itertools.repeat(timestamp, added))
        if added < stop - start or batch.builder.size >= batch.limit:
            self.seal(batch)
        return added

    def open_batch(self, topic: str, partition: int) -> ProducerBatch | None:
        """The partition's batch still taking records, if any."""
        queue = self._queues.get((topic, partition))  # type: ignore[call-overload]
        if queue and not queue[-1].closed:
            return queue[-1]  # type: ignore[no-any-return]
        return None

    def close_appends(self) -> None:
        """Take no more records: the open batches are closed, to go out as they are."""
        self.closing = True
        for queue in self._queues.values():
            if queue:
                queue[-1].closed = True

    def append_many(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        headers: list[Sequence[Header]] | None,
        positions: range | list[int],
        start: int,
        stop: int,
        call: BulkSend,
        *,
        abort_on_new_batch: bool = False,
    ) -> int:
        """Add records ``start``..``stop`` of the lists to the partition's open batch, or to a new one, in one
        pass; returns how many went in. 0 only when a new batch is needed and the caller said not to.
        ``positions[start:stop]`` are the records' places in the call, for its results."""
        queue = self._queues.get((topic, partition))  # type: ignore[call-overload]
        if queue and not queue[-1].closed:
            batch = queue[-1]
            added = self._add_run(batch, timestamp, keys, values, headers, positions, start, stop, call)
            if added:
                if added < stop - start or batch.builder.size >= batch.limit:
                    self.seal(batch)
                return added
            self.seal(batch)
        elif queue is None:
            queue = self._queues[TopicPartition(topic, partition)] = deque()
        if abort_on_new_batch:
            return 0
        first_key = None if keys is None else keys[start]
        first = estimate_record_size(first_key, values[start], () if headers is None else headers[start])
        batch = self._new_batch(topic, partition, HEADER_SIZE + first)
        added = self._add_run(batch, timestamp, keys, values, headers, positions, start, stop, call)
        queue.append(batch)
        if added < stop - start or batch.size >= batch.limit:
            self.seal(batch)
        else:
            self._on_ready()
        return added

    def _new_batch(self, topic: str, partition: int, first_size: int) -> ProducerBatch:
        """A batch for the partition, its memory reserved (for the most it can hold, so appends need no
        accounting) and counted as incomplete; the caller adds its first record and queues it."""
        tp = TopicPartition(topic, partition)
        # A grown batch takes no more than the buffer has free: buffer_memory stays the bound (a batch of
        # batch_size may still go past it by less than one batch, as with a fixed batch size).
        limit = min(self._limit_for(tp, first_size), max(self.batch_size, self.buffer_memory - self.used))
        capacity = max(limit, first_size)
        now = self.clock()
        spare = self._spare_buffers.pop() if self._spare_buffers else None
        batch = ProducerBatch(
            tp,
            BatchBuilder(
                compression=self.compression, max_size=capacity, transactional=self.transactional, buffer=spare
            ),
            now,
            now + self.delivery_timeout,
            limit,
        )
        self._incomplete.add(batch)
        batch.reserved = capacity
        self.used += capacity
        if self.max_batch_size > self.batch_size:
            self._latest[tp] = batch
        return batch

    def _limit_for(self, tp: TopicPartition, first_size: int) -> int:
        """The size of the partition's next batch: ``batch_size``, or more while the partition is busy or
        its records are large.

        A partition whose newest batch is done (or that has none) keeps up at ``batch_size``. One whose
        newest batch is still waiting or in flight is busy: the next batch is as large, and twice as large
        if that one filled up, up to ``max_batch_size`` -- the records that would queue behind many small
        requests go in fewer large ones. A partition whose newest batch is done but was full before its
        linger time was up is busy too (its next batch twice as large): the sticky partitioner moves on at
        each new batch, so over several partitions a partition's batch was long acknowledged when the
        partitioner came back to it, and at full speed every batch stayed at ``batch_size``, at half again
        the CPU per record of one partition's grown batches. A grown batch reserves its size of
        ``buffer_memory`` as any batch does, so the buffer bounds the memory as before; only a partition busy
        enough to fill a batch within its linger time grows, so a producer writing slowly to many partitions
        reserves what Java's would. A done batch that was at least half full when it went out (its linger
        time up, or full after it) leaves the next at its size: the partition fills about that much in a
        linger time. Sent back to ``batch_size`` instead, a partition over several partitions at full speed
        went 16, 32, 64, 128, 256 KB and back, at twice the requests of batches that keep their size.

        A batch also starts with room for ``RECORDS_PER_BATCH`` records of its first record's size: with
        records of more than a quarter of ``batch_size`` (10 KB in 16 KB batches), a batch of that size
        would be complete at its first or second record, so every record went out in a request of its own
        -- at a few thousand records/s, thousands of requests where a few hundred carry them, and their
        queue was the tail latency.
        """
        latest = self._latest.get(tp)
        if latest is None:
            limit = self._next_limit.pop(tp, self.batch_size)
        else:
            limit = min(latest.limit * 2, self.max_batch_size) if latest.filled else latest.limit
        return max(limit, min(first_size * RECORDS_PER_BATCH, self.max_batch_size))

    @staticmethod
    def _add_run(
        batch: ProducerBatch,
        timestamp: int,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        headers: list[Sequence[Header]] | None,
        positions: range | list[int],
        start: int,
        stop: int,
        call: BulkSend,
    ) -> int:
        timestamps = batch.outcome.timestamps
        first = len(timestamps)
        added = batch.builder.append_many(timestamp, keys, values, headers, start, stop)
        if added:
            timestamps.extend(itertools.repeat(timestamp, added))
            if batch.bulk is None:
                batch.bulk = []
            batch.bulk.append((call, first, positions[start : start + added]))
            call.add_run()
        return added

    def seal(self, batch: ProducerBatch) -> None:
        """Close ``batch`` for appends: it goes out as it is."""
        batch.closed = True
        batch.filled = True
        batch.filled_early = self.clock() - batch.created < self.linger
        self.sealed += 1
        self._on_ready()

    @property
    def full(self) -> bool:
        return self.used >= self.buffer_memory

    def _release(self, batch: ProducerBatch) -> None:
        self.used -= batch.reserved
        batch.reserved = 0
        if self.used < self.buffer_memory:
            self.on_space()

    # ----------------------------------------------------------------------------------- draining
    def drain(
        self, now: float, window: SendWindow
    ) -> tuple[dict[int, list[ProducerBatch]], float | None, set[str]]:
        """Take the sendable batches, one per partition, grouped by leader, as far as ``window`` lets them.

        Returns the batches, the time the next batch becomes ready (None: only an event can make one), and
        the topics with a partition whose leader is unknown.
        """
        leader_of, full_nodes, in_flight, held = window.leader_of, window.full_nodes, window.in_flight, window.held
        strict, idempotent = window.strict, window.idempotent
        taken: dict[int, list[ProducerBatch]] = {}
        request_sizes: dict[int, int] = {}
        next_time: float | None = None
        unknown: set[str] = set()
        flushing = self._flushing > 0 or self.closing
        linger = self.linger - TIMER_SLACK
        for tp, queue in self._queues.items():
            if not queue:
                continue
            batch = queue[0]
            if batch.attempts and batch.retry_at > now:
                next_time = batch.retry_at if next_time is None else min(next_time, batch.retry_at)
                continue
            ready_at = batch.created + linger
            if not (batch.closed or len(queue) > 1 or flushing or batch.attempts or now >= ready_at):
                next_time = ready_at if next_time is None else min(next_time, ready_at)
                continue
            node = leader_of(tp.topic, tp.partition)
            if node < 0:
                unknown.add(tp.topic)
                continue
            if node in full_nodes or tp in held:
                continue
            if in_flight.get(tp) and (strict or (idempotent and batch.sequence is not None)):
                continue
            size = request_sizes.get(node, 0)
            if size and size + batch.encoded_size > self.max_request_size:
                continue  # the next request to this node takes it
            request_sizes[node] = size + batch.encoded_size
            queue.popleft()
            batch.closed = True
            taken.setdefault(node, []).append(batch)
        return taken, next_time, unknown

    def reenqueue(self, batch: ProducerBatch, retry_at: float, *, attempt: bool = True) -> None:
        """Put a batch back for a retry, ahead of newer batches and in sequence order among retries
        (``attempt=False``: it was never sent, so it does not count as an attempt)."""
        if attempt:
            batch.attempts += 1
        batch.retry_at = retry_at
        batch.in_flight = False
        queue = self._queues.setdefault(batch.tp, deque())
        position = 0
        if batch.sequence is not None:
            for position, other in enumerate(queue):  # noqa: B007 - the index is used after the loop
                if other.sequence is None or other.sequence > batch.sequence:
                    break
            else:
                position = len(queue)
        queue.insert(position, batch)
        self._on_ready()

    def finished(self, batch: ProducerBatch) -> None:
        """Forget a batch that was completed or failed, and return its memory."""
        self._incomplete.discard(batch)
        if self._latest.get(batch.tp) is batch:
            del self._latest[batch.tp]
            if batch.filled_early:  # see _limit_for
                self._next_limit[batch.tp] = min(batch.limit * 2, self.max_batch_size)
            elif 2 * batch.size >= batch.limit:
                self._next_limit[batch.tp] = batch.limit
            # otherwise the partition keeps up: its next batch starts at the base size
        self._release(batch)

    def recycle(self, batch: ProducerBatch) -> None:
        """Keep the buffer of ``batch``, finished with the broker's answer to its request, for a next batch. Only
        after that answer (a request's large record sets go to the connection uncopied, and a transport may hold
        one until written), and only when nothing else holds it (``reclaim_buffer``). The batch is done: its
        builder is read no more."""
        if len(self._spare_buffers) >= SPARE_BUFFERS or batch.builder.size > self.max_batch_size:
            return  # enough kept, or a single large record's buffer
        buffer = batch.builder.reclaim_buffer()
        if buffer is not None:
            self._spare_buffers.append(buffer)

    def expire(self, now: float) -> list[ProducerBatch]:
        """Remove and return queued batches past their delivery deadline (the caller fails them)."""
        expired: list[ProducerBatch] = []
        for queue in self._queues.values():
            if queue and queue[0].deadline <= now:
                keep = deque(b for b in queue if b.deadline > now)
                gone = [b for b in queue if b.deadline <= now]
                for batch in gone:
                    batch.closed = True  # out of its queue: nothing may be appended to it any more
                expired.extend(gone)
                queue.clear()
                queue.extend(keep)
        return expired

    def next_deadline(self) -> float | None:
        heads = [queue[0].deadline for queue in self._queues.values() if queue]
        return min(heads) if heads else None

    def waiting_partitions(self) -> Iterator[TopicPartition]:
        """The partitions with batches waiting to be sent."""
        return (tp for tp, queue in self._queues.items() if queue)

    def queued(self) -> Iterator[ProducerBatch]:
        """Batches waiting to be sent (not in flight)."""
        for queue in self._queues.values():
            yield from queue

    def abort_all(self, error: MqwireError) -> None:
        """Fail every queued batch (the producer cannot continue)."""
        for queue in self._queues.values():
            while queue:
                batch = queue.popleft()
                batch.fail(error)
                self.finished(batch)

    @property
    def empty(self) -> bool:
        return not self._incomplete

    def incomplete(self) -> list[ProducerBatch]:
        return list(self._incomplete)

    # ----------------------------------------------------------------------------------- flushing
    def begin_flush(self) -> None:
        """Every batch is ready now, however long it lingered, until ``end_flush``."""
        self._flushing += 1
        self._on_ready()

    def end_flush(self) -> None:
        """One ``begin_flush`` is over: batches linger again once none is left."""
        self._flushing -= 1

    def buffered_records(self) -> int:
        """Records in batches not yet acknowledged or failed (counted when asked, not as they come)."""
        return sum(len(batch) for batch in self._incomplete)
