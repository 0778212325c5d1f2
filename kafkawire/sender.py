"""The producer's sender, a background task: ready batches to their leaders, one ProduceRequest per broker at a time.

Each request carries at most one batch per partition (brokers refuse more) and resolves all of its
batches' futures when its response arrives. Retriable errors put a batch back, ahead of newer ones, after a
backoff; the batch keeps its sequence number, so an idempotent producer's broker drops a duplicate. Errors
that leave a gap in the sequence of a partition (a batch failed or expired after it was numbered) make the
sender fetch a new producer id once nothing is in flight, and number the remaining batches from zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkawire import errors
from kafkawire.accumulator import SEQUENCE_LIMIT, Accumulator, ProducerBatch, SendWindow
from kafkawire.connection import KafkaConnection
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.messages import (
    InitProducerIdRequest,
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kafkawire.waker import Waker
from mqwire.common.errors import (
    ClosedError,
    ConnectError,
    ConnectionLostError,
    MqwireError,
    ProtocolError,
    RequestTimeoutError,
)
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.stats import ProducerCounters

if TYPE_CHECKING:
    from kafkawire.session import Session
    from kafkawire.transaction import TransactionManager

log = logging.getLogger(__name__)

PRODUCE_KEY = 0
# Produce v13 names topics by id; below it, by name.
PRODUCE_BY_NAME_MAX = 12
# Inside a transaction, Produce v12+ means transaction version 2 (KIP-890): the broker adds the partition.
PRODUCE_TRANSACTION_V1_MAX = 11


# Out-of-order answers a batch may get while earlier batches are retried before the producer id is renewed.
OUT_OF_ORDER_RETRIES_BEFORE_RESET = 3


@dataclass
class SenderConfig:
    acks: int
    request_timeout: float
    retries: int
    retry_backoff: float
    retry_backoff_max: float
    max_in_flight: int
    idempotent: bool
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000


class IdempotenceState:
    """Producer id, epoch and the next sequence number of each partition."""

    def __init__(self) -> None:
        self.producer_id = -1
        self.producer_epoch = -1
        self.next_sequence: dict[TopicPartition, int] = {}
        # The sequence after the last acknowledged batch: a batch starting there cannot be out of order.
        self.acked_sequence: dict[TopicPartition, int] = {}
        # The sequence the broker expects next from what was written and not known to have failed: a batch
        # that does not start there is out of turn (an earlier one failed after it was dispatched).
        self.next_write: dict[TopicPartition, int] = {}
        self.reset_needed = False

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0 and not self.reset_needed

    def assign(self, batch: ProducerBatch) -> None:
        sequence = self.next_sequence.get(batch.tp, 0)
        batch.set_producer(self.producer_id, self.producer_epoch, sequence)
        self.next_sequence[batch.tp] = (sequence + len(batch)) % SEQUENCE_LIMIT

    def acknowledge(self, batch: ProducerBatch) -> None:
        if batch.sequence is not None:
            self.acked_sequence[batch.tp] = (batch.sequence + len(batch)) % SEQUENCE_LIMIT

    def in_turn(self, batch: ProducerBatch) -> bool:
        """Whether ``batch`` may be written now; if so it is counted as written."""
        if batch.sequence is None:
            return True
        if batch.sequence != self.next_write.get(batch.tp, 0):
            return False
        self.next_write[batch.tp] = (batch.sequence + len(batch)) % SEQUENCE_LIMIT
        return True

    def not_written(self, batch: ProducerBatch) -> None:
        """``batch`` failed: the broker expects it (or an earlier one) next, and what follows waits for it."""
        if batch.sequence is None:
            return
        expected = self.next_write.get(batch.tp, 0)
        if (expected - batch.sequence) % SEQUENCE_LIMIT < SEQUENCE_LIMIT // 2:  # the batch is not after it
            self.next_write[batch.tp] = batch.sequence

    def restart(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.next_sequence.clear()
        self.acked_sequence.clear()
        self.next_write.clear()
        self.reset_needed = False


class Sender:
    def __init__(
        self, session: Session, accumulator: Accumulator, config: SenderConfig, waker: Waker | None = None
    ) -> None:
        self.session = session
        self.accumulator = accumulator
        self.config = config
        # The accumulator's on_ready must call this waker's wake.
        self.waker = waker or Waker()
        self.idempotence = IdempotenceState() if config.idempotent else None
        # Set by a transactional producer: batches wait until their partition is in the transaction.
        self.transaction: TransactionManager | None = None
        self._node_in_flight: dict[int, int] = {}
        self._partition_in_flight: dict[TopicPartition, int] = {}
        # Requests to one broker reach the wire in the order they were dispatched (see _exchange).
        self._node_order: dict[int, asyncio.Lock] = {}
        # The sender's loop and its requests in flight.
        self._tasks = OwnedTasks("kafka producer sender")
        self._task: asyncio.Task[None] | None = None
        # A fatal error that stops the producer (fenced, not authorized to be idempotent, ...).
        self.fatal_error: MqwireError | None = None
        # Counted per request and per batch, never per record.
        self.counters = ProducerCounters()

    # ---------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self._task is None:
            self._task = self._tasks.spawn(self._run(), name="sender")

    async def stop(self) -> None:
        """Stop after every buffered batch is done (the accumulator must be closing)."""
        self.accumulator.close_appends()
        self.waker.wake()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def abort(self) -> None:
        """Stop now; batches still buffered or in flight fail with ClosedError."""
        self._tasks.cancel()  # the requests in flight and the loop
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        error = ClosedError("producer closed before these records were sent")
        self.accumulator.abort_all(error)
        for batch in self.accumulator.incomplete():
            batch.fail(error)
            self.accumulator.finished(batch)

    @property
    def in_flight(self) -> int:
        return sum(self._node_in_flight.values())

    # ---------------------------------------------------------------------------------- main loop
    async def _run(self) -> None:
        accumulator = self.accumulator
        try:
            while True:
                self.waker.clear()
                now = accumulator.clock()
                self._expire(now)
                if self.fatal_error is not None:
                    accumulator.abort_all(self.fatal_error)
                elif self.transaction is not None and self.transaction.abortable is not None:
                    accumulator.abort_all(self.transaction.abortable)  # the transaction can only be aborted
                if accumulator.closing and accumulator.empty:
                    return
                next_time: float | None = None
                if self.fatal_error is not None:
                    pass  # nothing more is sent; wait for the producer to close
                elif self.idempotence is not None and not self.idempotence.ready:
                    if self.in_flight == 0:
                        if await self._init_producer_id():
                            continue  # batches may have become ready meanwhile: look at once
                        next_time = accumulator.clock() + self.config.retry_backoff
                else:
                    next_time = self._send_ready(now)
                deadline = accumulator.next_deadline()
                if deadline is not None and (next_time is None or deadline < next_time):
                    next_time = deadline
                await self.waker.wait(None if next_time is None else next_time - accumulator.clock())
        except Exception as exc:  # a bug here must not leave every future pending forever
            log.exception("producer sender failed")
            error = exc if isinstance(exc, MqwireError) else ProtocolError(f"producer sender failed: {exc!r}")
            self._stop_with(error)

    def _stop_with(self, error: MqwireError) -> None:
        self.fatal_error = error
        if self.transaction is not None and self.transaction.error is None:
            self.transaction.fail(error)
        self.accumulator.abort_all(error)

    def _send_ready(self, now: float) -> float | None:
        drained, next_time, unknown = self.accumulator.drain(now, self._window())
        if unknown:
            self.session.request_update(unknown)
            retry_at = now + self.config.retry_backoff
            next_time = retry_at if next_time is None else min(next_time, retry_at)
        for node, batches in drained.items():
            self._dispatch(node, batches)
        if drained:
            # More batches may be ready for nodes that still have room for another request.
            self.waker.wake()
        return next_time

    def _window(self) -> SendWindow:
        """What may be sent now: the leaders, the nodes without room for a request, the partitions' requests
        in flight, and those not in the transaction yet (asked of the coordinator as they are found)."""
        max_in_flight = self.config.max_in_flight
        full = {node for node, count in self._node_in_flight.items() if count >= max_in_flight}
        transaction = self.transaction
        held: set[TopicPartition] = set()
        if transaction is not None:
            held = {tp for tp in self.accumulator.waiting_partitions() if not transaction.partition_ready(tp)}
        return SendWindow(
            leader_of=self.session.metadata.leader_id,
            full_nodes=full,
            in_flight=self._partition_in_flight,
            strict=max_in_flight == 1,
            idempotent=self.idempotence is not None,
            held=held,
        )

    # ---------------------------------------------------------------------------------- requests
    def _dispatch(self, node: int, batches: list[ProducerBatch]) -> None:
        idempotence = self.idempotence
        for batch in batches:
            batch.in_flight = True
            if idempotence is not None and batch.sequence is None:
                idempotence.assign(batch)
            self._partition_in_flight[batch.tp] = self._partition_in_flight.get(batch.tp, 0) + 1
        self._node_in_flight[node] = self._node_in_flight.get(node, 0) + 1
        self._tasks.spawn(self._produce(node, batches), name="produce")

    async def _produce(self, node: int, batches: list[ProducerBatch]) -> None:
        try:
            await self._exchange(node, batches)
        finally:
            self._node_in_flight[node] -= 1
            for batch in batches:
                self._partition_in_flight[batch.tp] -= 1
            self.waker.wake()

    async def _exchange(self, node: int, batches: list[ProducerBatch]) -> None:
        connection: KafkaConnection | None = None
        try:
            # Getting the connection may wait (a metadata refresh for an unknown broker, a connection being
            # opened), and a request dispatched later must not overtake this one meanwhile: an idempotent
            # producer's later batch written first makes the broker refuse the earlier one as out of order.
            # The lock wakes its waiters in order, and nothing below awaits before the request is written.
            order = self._node_order.setdefault(node, asyncio.Lock())
            async with order:
                connection = await self.session.connection(node)
            batches = self._in_turn(batches)
            if not batches:
                return
            version = self._produce_version(connection, batches)
            body = self._request_body(batches, version)
            self.counters.requests += 1
            # Client telemetry's queue time and request latency: one observation per batch and per request.
            clock = self.accumulator.clock
            written = clock()
            queue_time = self.session.measures.record_queue_time
            for batch in batches:
                queue_time.observe(written - batch.created)
            if self.config.acks == 0:
                await connection.send(body, version=version)
                for batch in batches:
                    self._complete(batch, -1, -1)
                return
            timeout = self.config.request_timeout + 5.0  # the broker answers by its own timeout first
            response = await connection.request(body, version=version, timeout=timeout)
            del body  # its record sets, written uncopied, are the batches' buffers: recycle may take them now
            self.session.measures.produce_latency(node).observe(clock() - written)
        except (ConnectError, ConnectionLostError, RequestTimeoutError) as exc:
            if connection is not None:
                self.session.discard(connection, exc)
            self.session.request_update({b.tp.topic for b in batches})
            for batch in batches:
                self._retry_or_fail(batch, exc)
            return
        except MqwireError as exc:
            for batch in batches:
                self._fail(batch, exc)
            return
        except Exception as exc:  # a bug must fail these records, not leave them pending
            log.exception("produce request failed")
            for batch in batches:
                self._fail(batch, ProtocolError(f"produce request failed: {exc!r}"))
            return
        self._handle_response(response, batches)

    def _produce_version(self, connection: KafkaConnection, batches: list[ProducerBatch]) -> int:
        """The highest shared version, by name while a topic id is unknown, and the transaction's own range."""
        transaction = self.transaction
        at_most = None
        if transaction is not None and not transaction.v2:
            at_most = PRODUCE_TRANSACTION_V1_MAX
        version = connection.version_for(PRODUCE_KEY, at_most=at_most)
        topic_ids = self.session.metadata.topic_ids
        if version > PRODUCE_BY_NAME_MAX and any(b.tp.topic not in topic_ids for b in batches):
            version = connection.version_for(PRODUCE_KEY, at_most=PRODUCE_BY_NAME_MAX)
        if transaction is not None and transaction.v2 and version <= PRODUCE_TRANSACTION_V1_MAX:
            raise errors.UnsupportedVersionError(
                f"Produce v{PRODUCE_TRANSACTION_V1_MAX + 1}+ is needed for transaction version 2 and "
                f"{connection.address[0]}:{connection.address[1]} offers v{version} at most"
            )
        return version

    def _in_turn(self, batches: list[ProducerBatch]) -> list[ProducerBatch]:
        """The batches that continue their partition's sequence. One whose predecessor failed while it waited
        for the connection goes back to the queue, behind the retry: written now, the broker would refuse it
        as out of order, or (from a producer id it has not seen yet) write it first."""
        idempotence = self.idempotence
        if idempotence is None:
            return batches
        in_turn = []
        for batch in batches:
            if idempotence.in_turn(batch):
                in_turn.append(batch)
            else:
                batch.in_flight = False
                self.accumulator.reenqueue(batch, self.accumulator.clock(), attempt=False)
        return in_turn

    def _request_body(self, batches: list[ProducerBatch], version: int) -> ProduceRequest:
        by_topic: dict[str, list[PartitionProduceData]] = {}
        for batch in batches:
            by_topic.setdefault(batch.tp.topic, []).append(
                PartitionProduceData(index=batch.tp.partition, records=batch.encode())
            )
        topic_ids = self.session.metadata.topic_ids
        topic_data = []
        for topic, partitions in by_topic.items():
            data = TopicProduceData(name=topic, partition_data=partitions)
            if version > PRODUCE_BY_NAME_MAX:
                data.topic_id = topic_ids[topic]
            topic_data.append(data)
        return ProduceRequest(
            transactional_id=self.config.transactional_id,
            acks=self.config.acks,
            timeout_ms=int(self.config.request_timeout * 1000),
            topic_data=topic_data,
        )

    def _handle_response(self, response: object, batches: list[ProducerBatch]) -> None:
        names = self.session.metadata.topic_names
        results: dict[TopicPartition, object] = {}
        for topic in response.responses:  # type: ignore[attr-defined]
            name = topic.name or names.get(topic.topic_id, "")
            for partition in topic.partition_responses:
                results[TopicPartition(name, partition.index)] = partition
        stale: set[str] = set()
        for batch in batches:
            result = results.get(batch.tp)
            if result is None:
                self._fail(batch, ProtocolError(f"produce response says nothing about {batch.tp}"))
                continue
            self._handle_partition(batch, result, stale)
        if stale:
            self.session.request_update(stale)

    def _handle_partition(self, batch: ProducerBatch, result: object, stale: set[str]) -> None:
        code: int = result.error_code  # type: ignore[attr-defined]
        if code == 0:
            self._complete(batch, result.base_offset, result.log_append_time_ms)  # type: ignore[attr-defined]
            self.accumulator.recycle(batch)  # answered: its request was written whole
            return
        message = getattr(result, "error_message", None)
        error = errors.error_for(code, message or f"producing to {batch.tp.topic}-{batch.tp.partition}")
        idempotence = self.idempotence
        if isinstance(error, errors.DuplicateSequenceNumberError):
            self._complete(batch, -1, -1)  # already written by an earlier attempt
            return
        if error.refresh_metadata:
            self.session.metadata.forget_leader(*batch.tp)
            stale.add(batch.tp.topic)
        if idempotence is not None:
            if isinstance(error, errors.OutOfOrderSequenceNumberError) and batch.sequence != (
                idempotence.acked_sequence.get(batch.tp, 0)
            ):
                # An earlier batch of this partition failed and is retried first; this one follows it.
                if batch.attempts >= OUT_OF_ORDER_RETRIES_BEFORE_RESET:
                    # Still refused after the earlier batches had their turn: the broker's sequence state and
                    # ours disagree. A new producer id renumbers from zero; the refused batch was not written.
                    idempotence.reset_needed = True
                self._retry_or_fail(batch, error, retriable=True)
                return
            if isinstance(error, errors.UnknownProducerIdError | errors.InvalidProducerIdMappingError):
                idempotence.reset_needed = True
                self._retry_or_fail(batch, error, retriable=True)
                return
            if isinstance(error, errors.InvalidProducerEpochError | errors.ProducerFencedError):
                self._stop_with(error)
                self._fail(batch, error)
                return
        self._retry_or_fail(batch, error)

    # ---------------------------------------------------------------------------------- outcomes
    def _complete(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        if self.idempotence is not None:
            self.idempotence.acknowledge(batch)
        batch.in_flight = False
        self.counters.acknowledged(len(batch), batch.encoded_size, self.accumulator.clock() - batch.created)
        batch.complete(base_offset, log_append_time)
        self.accumulator.finished(batch)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        if self.idempotence is not None:
            self.idempotence.not_written(batch)
        numbered = batch.sequence is not None
        transaction = self.transaction
        # In a transaction, which can only be aborted now, the end renews the epoch (and so the sequences).
        in_transaction = (
            transaction is not None
            and self.fatal_error is None
            and transaction.batch_failed(error, numbered=numbered)
        )
        if not in_transaction and self.idempotence is not None and numbered:
            # The broker never got this sequence: later batches of the partition would be out of order.
            self.idempotence.reset_needed = True
        batch.in_flight = False
        self.counters.records_failed += len(batch)
        self.counters.error(error)
        batch.fail(error)
        self.accumulator.finished(batch)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, *, retriable: bool | None = None) -> None:
        batch.last_error = error
        if self.idempotence is not None:
            self.idempotence.not_written(batch)
        if retriable is None:
            retriable = bool(getattr(error, "retriable", False))
        if not retriable or batch.attempts >= self.config.retries:
            self._fail(batch, error)
            return
        delay = min(self.config.retry_backoff * 2 ** min(batch.attempts, 16), self.config.retry_backoff_max)
        retry_at = self.accumulator.clock() + delay
        if retry_at >= batch.deadline:
            self._fail(batch, self._expired(batch))
            return
        log.debug("retrying %r after %s", batch, error)
        self.counters.retries += 1
        self.counters.error(error)
        self.accumulator.reenqueue(batch, retry_at)

    def _expired(self, batch: ProducerBatch) -> errors.DeliveryTimeoutError:
        error = errors.DeliveryTimeoutError(
            f"{len(batch)} record(s) for {batch.tp.topic}-{batch.tp.partition} not acknowledged within "
            f"{self.accumulator.delivery_timeout:g} s"
            + (f" (last error: {batch.last_error})" if batch.last_error is not None else "")
        )
        error.__cause__ = batch.last_error
        return error

    def _expire(self, now: float) -> None:
        for batch in self.accumulator.expire(now):
            self._fail(batch, self._expired(batch))

    # ---------------------------------------------------------------------------------- producer id
    async def _init_producer_id(self) -> bool:
        """Get a producer id (again); False after a retriable failure. Batches get numbered afresh."""
        state = self.idempotence
        assert state is not None
        transactional_id = self.config.transactional_id
        body = InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=self.config.transaction_timeout_ms
        )
        try:
            if transactional_id is None:
                response = await self.session.request_any(body)
            else:
                # A transactional id belongs to its transaction coordinator, which also fences older holders.
                response = await self.session.request_coordinator(transactional_id, body, key_type=1)
            if response.error_code:
                raise errors.error_for(response.error_code, "InitProducerId")
        except MqwireError as exc:
            if exc.retriable:
                log.debug("InitProducerId failed (%s); retrying", exc)
                if transactional_id is not None and getattr(exc, "refresh_coordinator", False):
                    self.session.forget_coordinator(transactional_id, 1)
                return False
            log.error("the producer cannot get a producer id: %s", exc)
            if self.transaction is not None:
                self.transaction.fail(exc)
            self._stop_with(exc)
            return False
        if self.transaction is not None:
            try:
                await self.transaction.settle_version()
            except MqwireError as exc:
                log.debug("the transaction coordinator's features are not known (%s); retrying", exc)
                return False
        state.restart(response.producer_id, response.producer_epoch)
        renumber(self.accumulator.queued())
        log.debug("producer id %d epoch %d", response.producer_id, response.producer_epoch)
        return True


def renumber(batches: Iterable[ProducerBatch]) -> None:
    """Drop the sequence numbers of queued batches; they get new ones when sent under the new producer id."""
    for batch in batches:
        if batch.sequence is not None:
            batch.set_producer(-1, -1, None)
