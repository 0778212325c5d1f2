"""One producer on one topic or partition: batches, sequence ids, receipts, send timeout, reconnection.

Messages accumulate as encoded batch entries (the sans-IO builders of :mod:`pulsarwire.batch_builder`); a
batch leaves as one SEND frame when it is full (count or bytes) or its delay has passed. What the frames
hold (compression, encryption, chunks, metadata) is :mod:`pulsarwire.message_encoder`'s work; this class
sequences, sends, keeps the pending queue and matches receipts.

Every SEND is kept, already encoded, until its receipt arrives, so that a reconnection can send them all
again in order; receipts arrive in sequence order and complete the head of that queue. The broker
deduplicates by producer name and sequence id, which is why a reconnecting producer asks for the name the
broker gave it the first time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from typing import Any

from mqwire.common.errors import ConnectionLostError, MqwireError, RequestTimeoutError
from mqwire.common.stats import ProducerCounters
from pulsarwire import errors
from pulsarwire.batch_builder import Batch, BatchBuilder, KeyBasedBatchBuilder
from pulsarwire.connection import DEFAULT_MAX_MESSAGE_SIZE, PulsarConnection
from pulsarwire.crypto import MessageEncryptor
from pulsarwire.errors import CryptoError, MessageTooBigError, ProducerClosedError, SendTimeoutError
from pulsarwire.handler import TopicHandler, close_remote
from pulsarwire.message import Receipt, receipt
from pulsarwire.message_encoder import Encoded, MessageEncoder, OutgoingMessage
from pulsarwire.options import ProducerConfig
from pulsarwire.protocol import commands
from pulsarwire.protocol.batch import PROPERTIES_TAG as ENTRY_PROPERTIES_TAG
from pulsarwire.protocol.batch import encode_entry_fast
from pulsarwire.protocol.frames import Frame
from pulsarwire.protocol.metadata import producer_name_field, schema_version_field
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, ServerError
from pulsarwire.protocol.wire import key_values
from pulsarwire.session import Session

log = logging.getLogger(__name__)

T = BaseCommand.Type
Properties = list[tuple[bytes, bytes]]


class _Op:
    """One SEND frame in flight and the futures of the messages it carries."""

    __slots__ = ("batch", "count", "deadline", "frames", "futures", "highest_sequence_id", "sequence_id")

    def __init__(
        self,
        sequence_id: int,
        highest_sequence_id: int,
        count: int,
        frames: list[bytearray],
        futures: list[asyncio.Future[Receipt]],
        batch: bool,
        deadline: float,
    ) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.count = count
        # Several frames only for a chunked message; they share the sequence id and one receipt each.
        self.frames = frames
        self.futures = futures
        self.batch = batch
        self.deadline = deadline


class TopicProducer(TopicHandler):
    """The producer of one partition (or of a topic without partitions)."""

    def __init__(
        self,
        session: Session,
        topic: str,
        partition: int,
        options: ProducerConfig,
        receipt_topic: str | None = None,
        counters: ProducerCounters | None = None,
    ) -> None:
        super().__init__(session, topic, f"producer on {topic}")
        # Shared by the partitions of one producer; counted per SEND frame, never per message.
        self.counters = ProducerCounters() if counters is None else counters
        self.partition = partition
        # The topic receipts name: the partitioned topic's own name, not the partition's.
        self.receipt_topic = topic if receipt_topic is None else receipt_topic
        self.options = options
        self.producer_id = session.next_producer_id()
        self.producer_name = options.producer_name
        self._name_field = b"" if options.producer_name is None else producer_name_field(options.producer_name)
        encryptor = None
        if options.encryption_keys:
            assert options.crypto_key_reader is not None  # checked with the options
            encryptor = MessageEncryptor(list(options.encryption_keys), options.crypto_key_reader)
        # Compression, encryption, chunking and framing: sans-IO, in the encoder.
        self._encoder = MessageEncoder(
            self.producer_id,
            compression=options.compression,
            encryptor=encryptor,
            crypto_failure_action=options.crypto_failure_action,
            chunking_enabled=options.chunking_enabled,
            chunk_max_message_size=options.chunk_max_message_size,
        )
        self._created = False
        self._epoch = 0
        initial = options.initial_sequence_id
        self._next_sequence_id = 0 if initial is None else initial + 1
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self._loop = asyncio.get_running_loop()
        self._ready = False
        self._error: MqwireError | None = None
        self._closed = False
        # The batch being filled (sans-IO builders); with key-based batching, the batches of the window by key.
        self._batch: BatchBuilder[asyncio.Future[Receipt]] = BatchBuilder()
        self._keyed: KeyBasedBatchBuilder[asyncio.Future[Receipt]] = KeyBasedBatchBuilder()
        self._batch_publish_time = 0
        self._batch_started = 0.0
        self._batch_timer: asyncio.Handle | None = None
        # Sent (or waiting for a connection) and not yet confirmed, in sequence order.
        self._pending: deque[_Op] = deque()
        # A chunked message confirmed chunk by chunk: how many receipts its head op still waits for.
        self._chunk_receipts_left = 0
        self._chunk_first_id: Receipt | None = None
        self._pending_messages = 0
        self._space_waiters: deque[asyncio.Future[None]] = deque()
        self._timeout_timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------------------------- state
    @property
    def last_sequence_id(self) -> int:
        """The sequence id given to the latest message (-1 before the first)."""
        return self._next_sequence_id - 1

    @property
    def in_flight(self) -> int:
        """SEND frames sent (or waiting for a connection) and not yet confirmed."""
        return len(self._pending)

    @property
    def buffered_bytes(self) -> int:
        """The open batch and the frames not yet confirmed (summed when asked)."""
        return self._batch.size + self._keyed.size + sum(len(frame) for op in self._pending for frame in op.frames)

    @property
    def pending_messages(self) -> int:
        return self._pending_messages

    @property
    def error(self) -> MqwireError | None:
        return self._error

    # ----------------------------------------------------------------------------------- sending
    def add(
        self,
        value: bytes,
        properties: Properties | None,
        partition_key: bytes | None,
        key_b64: bool,
        ordering_key: bytes | None,
        event_time: int,
        deliver_at: int | None,
        null_value: bool,
        txn: tuple[int, int] | None = None,
    ) -> asyncio.Future[Receipt] | None:
        """Buffer one message; its future completes with the receipt. None when the pending queue is full.

        ``txn`` (most, least bits): the transaction the message belongs to."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ProducerClosedError(f"{self.label}: producer is closed")
        if self._pending_messages >= self.options.max_pending_messages:
            return None
        options = self.options
        future: asyncio.Future[Receipt] = self._loop.create_future()
        if not options.batching_enabled or deliver_at is not None or txn is not None:
            # Delayed and transactional messages travel alone (a batch belongs to one transaction).
            if len(value) > self.max_message_size and not options.compression and not options.chunking_enabled:
                raise MessageTooBigError(
                    f"message of {len(value)} bytes exceeds the broker's maximum of {self.max_message_size}"
                )
            self._pending_messages += 1
            if len(self._batch) or len(self._keyed):
                self.flush_batch()
            message = OutgoingMessage(
                value, properties, partition_key, key_b64, ordering_key, event_time, deliver_at, null_value, txn
            )
            self._send_single(message, future)
            return future
        if len(value) > self.max_message_size and not options.compression:
            raise MessageTooBigError(
                f"message of {len(value)} bytes exceeds the broker's maximum of {self.max_message_size}"
            )
        self._pending_messages += 1
        sequence_id = self._next_sequence_id
        self._next_sequence_id = sequence_id + 1
        entry = encode_entry_fast(
            value,
            key_values(ENTRY_PROPERTIES_TAG, properties) if properties else b"",
            partition_key,
            key_b64,
            ordering_key,
            event_time,
            sequence_id,
            null_value,
        )
        if options.key_based_batching:
            self._add_keyed(entry, future, sequence_id, partition_key, key_b64, ordering_key)
            return future
        # Attributes rather than len(): this runs once per message.
        batch = self._batch
        max_bytes = options.batching_max_allowed_size_in_bytes
        if batch.items and batch.size + len(entry) > max_bytes:
            self.flush_batch()
        if not batch.items:
            self._start_window()
        batch.add(entry, future, sequence_id)
        if batch.size >= max_bytes or len(batch.items) >= options.batching_max_messages:
            self.flush_batch()
        return future

    def _add_keyed(
        self,
        entry: bytes,
        future: asyncio.Future[Receipt],
        sequence_id: int,
        partition_key: bytes | None,
        key_b64: bool,
        ordering_key: bytes | None,
    ) -> None:
        options = self.options
        keyed = self._keyed
        if len(keyed) and keyed.size + len(entry) > options.batching_max_allowed_size_in_bytes:
            self.flush_batch()
        if not len(keyed):
            self._start_window()
        keyed.add(entry, future, sequence_id, partition_key, key_b64, ordering_key)
        if keyed.size >= options.batching_max_allowed_size_in_bytes or len(keyed) >= options.batching_max_messages:
            self.flush_batch()

    def _start_window(self) -> None:
        self._batch_publish_time = int(time.time() * 1000)
        self._batch_started = self._loop.time()
        delay = self.options.batching_max_publish_delay
        self._batch_timer = (
            self._loop.call_later(delay, self._batch_due) if delay > 0 else self._loop.call_soon(self._batch_due)
        )

    def _send_batches(self, batches: list[Batch[asyncio.Future[Receipt]]]) -> None:
        """Encode closed batches (compressed, encrypted, framed) and send them."""
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        deadline = self._batch_started + self.options.send_timeout
        for batch in batches:
            try:
                encoded = self._encoder.encode_batch(
                    batch, self._name_field, self._batch_publish_time, self.max_message_size
                )
            except (CryptoError, MessageTooBigError) as exc:
                self._fail_futures(batch.items, exc)
                self._release(batch.count)
                continue
            self._warn_unencrypted(encoded)
            self._submit(_Op(batch.first, batch.last, batch.count, encoded.frames, batch.items, True, deadline))

    async def wait_for_space(self) -> None:
        """Wait until the pending queue has room (messages get confirmed, fail or time out)."""
        if self._error is not None:
            raise self._error
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._space_waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._space_waiters:
                self._space_waiters.remove(waiter)

    def _batch_due(self) -> None:
        self._batch_timer = None
        if len(self._batch) or len(self._keyed):
            self.flush_batch()

    def flush_batch(self) -> None:
        """Close the batch being filled (with key-based batching, every batch of the window) and send it."""
        if len(self._keyed):
            self._send_batches(self._keyed.take())
            return
        batch = self._batch.take()
        if batch is not None:
            self._send_batches([batch])

    def _send_single(self, message: OutgoingMessage, future: asyncio.Future[Receipt]) -> None:
        sequence_id = self._next_sequence_id
        self._next_sequence_id = sequence_id + 1
        try:
            encoded = self._encoder.encode_message(
                message,
                sequence_id,
                self._name_field,
                int(time.time() * 1000),
                self.max_message_size,
                producer_label=self.producer_name,
            )
        except (CryptoError, MessageTooBigError) as exc:
            self._fail_futures([future], exc)
            self._release(1)
            return
        self._warn_unencrypted(encoded)
        deadline = self._loop.time() + self.options.send_timeout
        self._submit(_Op(sequence_id, sequence_id, 1, encoded.frames, [future], False, deadline))

    def _warn_unencrypted(self, encoded: Encoded) -> None:
        if encoded.unencrypted is not None:
            log.warning("%s: sending unencrypted: %s", self.label, encoded.unencrypted)

    def _submit(self, op: _Op) -> None:
        self._pending.append(op)
        self.counters.requests += 1
        connection = self.connection
        if self._ready and connection is not None:
            try:
                for frame in op.frames:
                    connection.send(frame)
            except MqwireError:
                pass  # the close listener reattaches and sends it again
        if self._timeout_timer is None:
            self._arm_timeout()

    async def flush(self) -> None:
        """Send the open batch and wait until everything sent so far is confirmed or has failed."""
        self.flush_batch()
        if self._pending:
            last = self._pending[-1].futures[-1]
            await asyncio.wait((last,))

    # ---------------------------------------------------------------------------------- receipts
    def _on_push(self, kind: int, body: Any, frame: Frame) -> None:
        if kind == T.SEND_RECEIPT:
            self._receipt(body)
        elif kind == T.SEND_ERROR:
            self._send_error(body)
        elif kind in (T.CLOSE_PRODUCER, T.TOPIC_MIGRATED):
            connection = self.connection
            if connection is not None:
                connection.unregister_producer(self.producer_id)
                self.connection_lost(connection, ConnectionLostError(f"{self.label}: closed by the broker"))

    def _receipt(self, body: Any) -> None:
        sequence_id = body.sequence_id
        if not self._pending:
            log.debug("%s: receipt for %d with nothing pending", self.label, sequence_id)
            return
        op = self._pending[0]
        if sequence_id < op.sequence_id:
            return  # a receipt for a message already timed out, or sent twice around a reconnection
        if sequence_id > op.sequence_id:
            log.warning("%s: receipt for %d while %d is the oldest pending; resending", self.label, sequence_id,
                        op.sequence_id)
            self._reattach("receipt out of order")
            return
        message_id = body.message_id
        # A duplicate the broker dropped is confirmed with the id (-1, -1), sent unsigned.
        ledger, entry = _signed(message_id.ledgerId), _signed(message_id.entryId)
        if len(op.frames) > 1:
            # One receipt per chunk; the message id is the first chunk's, as the Java client reports it.
            if self._chunk_receipts_left == 0:
                self._chunk_receipts_left = len(op.frames)
                self._chunk_first_id = receipt(self.receipt_topic, ledger, entry, -1, self.partition, 0)
            self._chunk_receipts_left -= 1
            if self._chunk_receipts_left:
                return
            first = self._chunk_first_id
            self._chunk_first_id = None
            self._pending.popleft()
            future = op.futures[0]
            if not future.done() and first is not None:
                future.set_result(first)
        else:
            self._pending.popleft()
            partition = self.partition
            topic = self.receipt_topic
            if op.batch:
                count = op.count
                for index, future in enumerate(op.futures):
                    if not future.done():
                        future.set_result(receipt(topic, ledger, entry, index, partition, count))
            else:
                future = op.futures[0]
                if not future.done():
                    future.set_result(receipt(topic, ledger, entry, -1, partition, 0))
        self.counters.acknowledged(
            op.count, sum(map(len, op.frames)), self._loop.time() - op.deadline + self.options.send_timeout
        )
        self._release(op.count)
        if not self._pending and self._timeout_timer is not None:
            self._timeout_timer.cancel()
            self._timeout_timer = None

    def _send_error(self, body: Any) -> None:
        error = errors.error_for(body.error, body.message)
        self.counters.error(error)
        head = self._pending[0] if self._pending else None
        if body.error == ServerError.NotAllowedError and head is not None and head.sequence_id == body.sequence_id:
            # The broker refuses this message only (e.g. an unsupported feature); the rest go on.
            op = self._pending.popleft()
            self._fail_futures(op.futures, error)
            self._release(op.count)
            return
        log.warning("%s: send of %d failed (%s); reconnecting to resend", self.label, body.sequence_id, error)
        self._reattach(str(error))

    def _reattach(self, reason: str) -> None:
        connection = self.connection
        if connection is None:
            return
        connection.unregister_producer(self.producer_id)
        close_remote(connection, commands.close_producer, self.producer_id, self.session.operation_timeout)
        self.connection_lost(connection, ConnectionLostError(f"{self.label}: {reason}"))

    # ------------------------------------------------------------------------------ send timeout
    def _arm_timeout(self) -> None:
        if self.options.send_timeout <= 0 or not self._pending:
            return
        delay = max(0.0, self._pending[0].deadline - self._loop.time())
        self._timeout_timer = self._loop.call_later(delay, self._check_timeout)

    def _check_timeout(self) -> None:
        self._timeout_timer = None
        if not self._pending:
            return
        if self._pending[0].deadline <= self._loop.time():
            # Later messages cannot be kept in order once one failed, so all pending ones fail together.
            self._fail_all(SendTimeoutError(
                f"{self.label}: not confirmed within {self.options.send_timeout:g} s"
            ))
        else:
            self._arm_timeout()

    # -------------------------------------------------------------------------------- attachment
    async def _attach(self, connection: PulsarConnection) -> None:
        producer_id = self.producer_id
        self._epoch += 1
        connection.register_producer(producer_id, self._on_push, functools.partial(self.connection_lost, connection))
        request_id = connection.next_request_id()
        command = commands.producer(
            self.topic,
            producer_id,
            request_id,
            producer_name=self.producer_name,
            user_provided_name=self.options.producer_name is not None,
            epoch=self._epoch,
            metadata=dict(self.options.properties or {}),
            access_mode=self.options.access_mode,
            initial_subscription_name=self.options.initial_subscription_name,
            schema=self.options.schema_info,
        )
        try:
            frame = await connection.request(command, request_id, self.session.operation_timeout)
        except RequestTimeoutError:
            # The protocol asks for a close before the next attempt, so the broker drops a late creation.
            connection.unregister_producer(producer_id)
            close_remote(connection, commands.close_producer, producer_id, self.session.operation_timeout)
            raise
        except BaseException:
            connection.unregister_producer(producer_id)
            raise
        success = frame.command.producer_success
        if connection.closed:
            # Closed right after answering: its close notice came before we were attached to hear it.
            connection.unregister_producer(producer_id)
            raise ConnectionLostError(f"{self.label}: connection closed while creating the producer")
        if self._closing:
            connection.unregister_producer(producer_id)
            close_remote(connection, commands.close_producer, producer_id, self.session.operation_timeout)
            raise ProducerClosedError(f"{self.label}: closed while connecting")
        if not self._created:
            self._created = True
            self.producer_name = success.producer_name
            # The schema version the broker gave travels in every message's metadata, next to the name.
            self._name_field = producer_name_field(success.producer_name) + schema_version_field(success.schema_version)
            if self.options.initial_sequence_id is None:
                self._next_sequence_id = max(self._next_sequence_id, success.last_sequence_id + 1)
        self.max_message_size = connection.max_message_size
        self.connection = connection
        self._ready = True
        self.label = f"producer {self.producer_name} on {self.topic}"
        if self._pending:
            self.counters.retries += len(self._pending)
            self.counters.requests += len(self._pending)
        try:
            for op in self._pending:
                for payload_frame in op.frames:
                    connection.send(payload_frame)
        except MqwireError:
            pass  # lost again already; the close listener takes it from here
        self._chunk_receipts_left = 0
        self._chunk_first_id = None

    def _reconnect_deadline(self) -> float | None:
        # A reconnection backoff must not carry the oldest pending send past its timeout.
        if self.options.send_timeout > 0 and self._pending:
            return self._pending[0].deadline
        return None

    def _detached(self, error: MqwireError) -> None:
        self._ready = False
        self._chunk_receipts_left = 0

    def _failed(self, error: MqwireError) -> None:
        self._error = error
        self._fail_all(error)
        for waiter in self._space_waiters:
            if not waiter.done():
                waiter.set_exception(error)

    # ----------------------------------------------------------------------------------- closing
    async def close(self) -> None:
        """Send what is buffered, wait (bounded) for the receipts, then close the producer on the broker."""
        if self._closed:
            return
        self._closed = True
        self.flush_batch()
        if self._pending and self._error is None:
            limit = self.options.send_timeout or self.session.operation_timeout
            last = self._pending[-1].futures[-1]
            await asyncio.wait((last,), timeout=limit)
        await self._stop_reconnecting()
        connection, self.connection = self.connection, None
        self._ready = False
        if connection is not None:
            connection.unregister_producer(self.producer_id)
            request_id = connection.next_request_id()
            with contextlib.suppress(MqwireError):
                await connection.request(
                    commands.close_producer(self.producer_id, request_id), request_id, self.session.operation_timeout
                )
        closed = ProducerClosedError(f"{self.label}: producer closed")
        self._fail_all(closed)
        for waiter in self._space_waiters:
            if not waiter.done():
                waiter.set_exception(closed)
        if self._timeout_timer is not None:
            self._timeout_timer.cancel()
            self._timeout_timer = None

    # ----------------------------------------------------------------------------------- helpers
    def _fail_all(self, error: MqwireError) -> None:
        pending, self._pending = self._pending, deque()
        count = 0
        for op in pending:
            self._fail_futures(op.futures, error)
            count += op.count
        batches = self._keyed.take()
        batch = self._batch.take()
        if batch is not None:
            batches.append(batch)
        if batches and self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        for batch in batches:
            self._fail_futures(batch.items, error)
            count += batch.count
        self._chunk_receipts_left = 0
        if count:
            self.counters.records_failed += count
            self.counters.error(error)
            self._release(count)

    @staticmethod
    def _fail_futures(futures: list[asyncio.Future[Receipt]], error: MqwireError) -> None:
        for future in futures:
            if not future.done():
                future.set_exception(error)

    def _release(self, count: int) -> None:
        self._pending_messages -= count
        waiters = self._space_waiters
        room = self.options.max_pending_messages - self._pending_messages
        while waiters and room > 0:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                room -= 1


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
