"""One subscription on one topic or partition: subscribe, flow permits, unpack, acks, reconnection.

The broker pushes at most as many messages as it holds permits; the first FLOW grants the receiver queue
size, and once the application has taken half of that, another FLOW grants what it took. Under the client's
``memory_limit_bytes`` (:mod:`pulsarwire.memory_budget`) a FLOW grants only as many permits as the room left
holds messages of the size seen so far; the rest is held back, and granted as arrivals, the application
taking messages, or other queues emptying make room. An entry whose data key is not known yet waits,
with every entry after it, while a worker thread opens the key (the reader, parsing the private key,
RSA). An entry's chunks are joined (:mod:`pulsarwire.chunks`), its payload decrypted and decompressed
(:mod:`pulsarwire.entry_payload`) and its messages decoded (:mod:`pulsarwire.entry_decoder`), all
sans-IO, in one pass into the shared receive queue. After a reconnection the messages still queued from
the old session are dropped (the broker delivers every unacknowledged message again) and the permits
start over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from mqwire.common.errors import ConnectionLostError, MqwireError, ProtocolError, RequestTimeoutError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.stats import ConsumerCounters
from pulsarwire import errors
from pulsarwire.acks import AckGrouping, NegativeAcks, Position, UnackedTracker, bits_of_words, bitset_words
from pulsarwire.chunks import COMPLETE, ChunkAssembler
from pulsarwire.connection import PulsarConnection
from pulsarwire.crypto import MessageDecryptor
from pulsarwire.dead_letter import DeadLetters
from pulsarwire.entry_decoder import decode_entry
from pulsarwire.entry_payload import open_payload
from pulsarwire.errors import ConsumerClosedError, Undecryptable
from pulsarwire.handler import TopicHandler, close_remote
from pulsarwire.message import EARLIEST, LATEST, Message, MessageId
from pulsarwire.options import ConsumerConfig
from pulsarwire.protocol import commands
from pulsarwire.protocol.ack import individual_ack_frame
from pulsarwire.protocol.frames import Frame, encode_command
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, CommandAck, CommandSubscribe, MessageIdData
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.session import Session

log = logging.getLogger(__name__)

T = BaseCommand.Type
KEY_SHARED = CommandSubscribe.Key_Shared
_SHARED_TYPES = (CommandSubscribe.Shared, KEY_SHARED)


class TopicConsumer(TopicHandler):
    """The consumer of one partition (or of a topic without partitions)."""

    def __init__(
        self,
        session: Session,
        queue: ReceiveQueue,
        topic: str,
        given_topic: str,
        partition: int,
        options: ConsumerConfig,
        *,
        queue_size: int,
        on_failure: Callable[[TopicConsumer, MqwireError], None],
        durable: bool = True,
        start_message_id: MessageId | None = None,
        start_inclusive: bool = False,
        dead_letters: DeadLetters | None = None,
        counters: ConsumerCounters | None = None,
    ) -> None:
        super().__init__(session, topic, f"consumer {options.subscription} on {topic}")
        # Shared by the partitions of one consumer; counted per entry pushed and per message taken.
        self.counters = ConsumerCounters() if counters is None else counters
        # The subscription's backlog on this partition as the broker last reported it (CONSUMER_STATS).
        self.backlog: int | None = None
        self.queue = queue
        self.given_topic = given_topic
        self.partition = partition
        self.options = options
        self.consumer_id = session.next_consumer_id()
        self.queue_size = queue_size
        self._refill_at = max(1, queue_size // 2)
        # The permits owed at which a message taken tries a grant: _refill_at, or more while the broker has
        # sent past the permits (a batch counts whole) and a grant would bring nothing until those are taken.
        self._grant_at = self._refill_at
        self._on_failure = on_failure
        self.durable = durable
        self._start = start_message_id
        self._start_inclusive = start_inclusive
        self._last_dequeued: MessageId | None = None
        # Permits owed to the broker and not yet granted; granted and not yet used by a message.
        self._permits = 0
        self._outstanding = 0
        # This partition's messages waiting in the queue, and the bytes it expects per message.
        self._queued = 0
        self._message_bytes = _ASSUMED_MESSAGE_BYTES
        # The messages per entry seen (a batch is one entry): the broker's reads count entries, not messages.
        self._entry_messages = 1.0
        # The bytes this consumer's outstanding permits may bring, counted in the budget's expected bytes.
        self._promised = 0
        # Raised by a redelivery of everything; the broker tags messages with it, so stale ones show.
        self._epoch = 0
        self._closed = False
        self.end_of_topic = False
        self.active = True
        self._batch_index_acks = options.batch_index_ack_enabled
        self._acks = AckGrouping(
            self._send_acks,
            self._send_cumulative,
            delay=options.ack_group_time,
            max_size=options.ack_group_max_size,
            send_partial=self._send_partial_acks if options.batch_index_ack_enabled else None,
        )
        self._nacks = NegativeAcks(self._redeliver, delay=options.negative_ack_redelivery_delay)
        self._unacked = UnackedTracker(self._redeliver, timeout=options.ack_timeout) if options.ack_timeout else None
        self._dead_letters = dead_letters
        # Entries redelivered max_redeliver_count times: their next redelivery sends them to the DLQ.
        self._doomed: dict[Position, list[Message]] = {}
        self._dead_letter_sends = OwnedTasks(f"{self.label}: dead letters")
        self._chunks = ChunkAssembler()
        reader = options.crypto_key_reader
        self._decryptor = None if reader is None else MessageDecryptor(reader)
        # Entries waiting behind one whose data key a worker thread is opening, and that task.
        self._held: deque[tuple[PulsarConnection | None, Any, Frame, int]] = deque()
        self._opening: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------------------ attachment
    async def _attach(self, connection: PulsarConnection) -> None:
        consumer_id = self.consumer_id
        options = self.options
        connection.register_consumer(consumer_id, self._on_push, functools.partial(self.connection_lost, connection))
        start = self._resume_position()
        request_id = connection.next_request_id()
        command = commands.subscribe(
            self.topic,
            options.subscription,
            options.subscription_type,
            consumer_id,
            request_id,
            consumer_name=options.consumer_name,
            initial_position=options.initial_position,
            durable=self.durable,
            start_message_id=None if start is None else start.to_data(),
            read_compacted=options.read_compacted,
            metadata=dict(options.properties or {}),
            subscription_properties=dict(options.subscription_properties or {}),
            priority_level=options.priority_level,
            key_shared_mode=options.key_shared_mode if options.subscription_type == KEY_SHARED else None,
            replicate_subscription_state=options.replicate_subscription_state or None,
            consumer_epoch=self._epoch,
            schema=options.schema_info,
        )
        try:
            await connection.request(command, request_id, self.session.operation_timeout)
        except RequestTimeoutError:
            # The protocol asks for a close before the next attempt, so the broker drops a late subscription.
            connection.unregister_consumer(consumer_id)
            close_remote(connection, commands.close_consumer, consumer_id, self.session.operation_timeout)
            raise
        except BaseException:
            connection.unregister_consumer(consumer_id)
            raise
        if connection.closed:
            # Closed right after answering: its close notice came before we were attached to hear it.
            connection.unregister_consumer(consumer_id)
            raise ConnectionLostError(f"{self.label}: connection closed while subscribing")
        if self._closing:
            connection.unregister_consumer(consumer_id)
            close_remote(connection, commands.close_consumer, consumer_id, self.session.operation_timeout)
            raise ConsumerClosedError(f"{self.label}: closed while subscribing")
        self.connection = connection
        # What the old session had queued comes again from the broker.
        self.queue.remove_owner(self)
        self._queued = 0
        self._held.clear()
        self._chunks.clear()
        self._permits = self.queue_size
        self._set_outstanding(0)
        self.end_of_topic = False
        if not self._grant():
            return  # lost again already; the close listener takes it from here
        self._acks.flush()

    def _resume_position(self) -> MessageId | None:
        """Where a non-durable subscription starts: after the last message handed out, else the start."""
        if self.durable:
            return None
        if self._last_dequeued is not None:
            return self._last_dequeued
        start = self._start
        if start is None or start in (EARLIEST, LATEST):
            return start
        # The broker starts at the entry it is given, that entry included; an exclusive start is skipped
        # here (_before_start, or _start_filter inside a batch).
        return start

    def _detached(self, error: MqwireError) -> None:
        self._permits = 0
        self._grant_at = self._refill_at
        self._set_outstanding(0)
        # The new subscription gets every unacknowledged message again.
        if self._unacked is not None:
            self._unacked.clear()
        self._doomed.clear()

    def _failed(self, error: MqwireError) -> None:
        self._on_failure(self, error)

    # --------------------------------------------------------------------------------- receiving
    def _on_push(self, kind: int, body: Any, frame: Frame) -> None:
        if kind == T.MESSAGE:
            self._on_message(body, frame)
        elif kind in (T.CLOSE_CONSUMER, T.TOPIC_MIGRATED):
            connection = self.connection
            if connection is not None:
                connection.unregister_consumer(self.consumer_id)
                self.connection_lost(connection, ConnectionLostError(f"{self.label}: closed by the broker"))
        elif kind == T.REACHED_END_OF_TOPIC:
            self.end_of_topic = True
        elif kind == T.ACTIVE_CONSUMER_CHANGE:
            self.active = bool(body.is_active)
            self.counters.rebalances += 1

    def _on_message(self, body: Any, frame: Frame) -> None:
        if self.connection is None:
            return
        metadata = frame.metadata
        batched = metadata is not None and metadata.HasField("num_messages_in_batch")
        count = metadata.num_messages_in_batch if batched and metadata is not None else 1
        # Below zero when a batch used more permits than were left: the broker counts it so too.
        self._set_outstanding(self._outstanding - count)
        self._learn_entry(count)
        if frame.checksum_mismatch:
            self._reject_corrupt(body)
            return
        if metadata is None:
            raise ProtocolError(f"{self.label}: MESSAGE without metadata and payload")
        if body.HasField("consumer_epoch") and body.consumer_epoch < self._epoch:
            self.consumed(count)  # sent before a redelivery we asked for; it comes again
            return
        if self._held or self._needs_keys(metadata):
            self._hold(body, frame, count)
            return
        self._deliver(body, frame, count)

    def _deliver(self, body: Any, frame: Frame, count: int) -> None:
        """Unpack one entry into the receive queue (or drop, discard or leave it, as it deserves)."""
        position = (body.message_id.ledgerId, body.message_id.entryId)
        try:
            messages, skipped, size = self._unpack(body, frame)
        except Undecryptable as exc:
            self._undecryptable(position, count, str(exc))
            return
        except ProtocolError as exc:
            log.warning("%s: discarding entry %d:%d: %s", self.label, position[0], position[1], exc)
            self._discard(position, exc)
            self.consumed(count)
            return
        if skipped:
            self.consumed(skipped)
        if messages:
            dead_letters = self._dead_letters
            if dead_letters is not None and messages[0].redelivery_count >= dead_letters.max_redeliver_count:
                first = messages[0].message_id
                self._doomed[first.ledger_id, first.entry_id] = messages
            counters = self.counters
            counters.batches += 1
            counters.bytes += len(frame.payload or b"")
            self._queued += len(messages)
            self.queue.extend(messages, size)
            self._learn_size(size // len(messages), len(messages))
        if self._permits and self.queue.budget is not None:
            self._grant()  # permits held back for memory: this arrival may have changed what fits

    def _needs_keys(self, metadata: Any) -> bool:
        decryptor = self._decryptor
        return decryptor is not None and len(metadata.encryption_keys) > 0 and not decryptor.ready(metadata)

    def _hold(self, body: Any, frame: Frame, count: int) -> None:
        """Keep an entry, in order, while a data key is opened in a worker thread (RSA and key parsing take
        milliseconds each, too long for the event loop); every entry after it waits behind it."""
        payload = frame.payload
        if payload is not None:
            # A view into the received bytes: kept beyond this callback, it must own them.
            frame = dataclasses.replace(frame, payload=memoryview(bytes(payload)))
        self._held.append((self.connection, body, frame, count))
        if self._opening is None:
            self._opening = self._tasks.spawn(self._open_keys(), name="open data keys")

    async def _open_keys(self) -> None:
        held = self._held
        try:
            while held:
                connection, body, frame, count = held[0]
                if connection is not self.connection:
                    held.popleft()  # from a session gone since: the broker sends it again
                    continue
                if self._needs_keys(frame.metadata):
                    assert self._decryptor is not None
                    try:
                        await asyncio.to_thread(self._decryptor.prepare, frame.metadata)
                    except Exception as exc:  # a reader's bug: decrypt reports it as the message's error
                        log.warning("%s: opening a data key failed: %s", self.label, type(exc).__name__)
                    else:
                        continue  # the session may have changed meanwhile: check again
                held.popleft()
                self._deliver(body, frame, count)
        finally:
            self._opening = None

    def _undecryptable(self, position: Position, count: int, reason: str) -> None:
        """crypto_failure_action "DISCARD": acknowledged and dropped; "FAIL": not delivered, left unacknowledged
        (it comes again after a reconnection or a redelivery, when the key may be there)."""
        self.consumed(count)
        if self.options.crypto_failure_action == "DISCARD":
            log.warning("%s: discarding entry %d:%d: %s", self.label, position[0], position[1], reason)
            self._acks.add(*position)
        else:
            log.error("%s: entry %d:%d not delivered: %s", self.label, position[0], position[1], reason)

    def _unpack(self, body: Any, frame: Frame) -> tuple[list[Message], int, int]:
        """The entry's messages for the application, how many it left out, and the bytes they hold."""
        metadata = frame.metadata
        assert metadata is not None and frame.payload is not None
        id_data = body.message_id
        ledger = _signed(id_data.ledgerId)
        entry = _signed(id_data.entryId)
        partition = self.partition
        payload: bytes | memoryview = frame.payload
        chunk_positions: list[Position] | None = None
        if metadata.num_chunks_from_msg > 1:
            assembly = self._chunks.offer(
                metadata.uuid,
                metadata.chunk_id,
                metadata.num_chunks_from_msg,
                metadata.total_chunk_msg_size,
                (ledger, entry),
                bytes(payload),
                time.monotonic(),
            )
            if assembly.dropped:
                # Chunks given up (a broken, evicted or expired message) would come back forever unacknowledged.
                self._send_acks(assembly.dropped)
            if assembly.outcome != COMPLETE:
                return [], 1, 0
            payload, chunk_positions = assembly.payload, assembly.positions
            # The message is known by its first chunk; acking it acks every chunk.
            ledger, entry = chunk_positions[0]
        opened = open_payload(
            metadata,
            payload,
            decryptor=self._decryptor,
            crypto_failure_action=self.options.crypto_failure_action,
            max_uncompressed=_MAX_UNCOMPRESSED,
        )
        data, encrypted = opened.data, opened.encrypted
        batched = not encrypted and metadata.HasField("num_messages_in_batch")
        messages, skipped = decode_entry(
            metadata,
            data,
            topic=self.given_topic,
            topic_name=self.topic,
            partition=partition,
            ledger=ledger,
            entry=entry,
            redelivery=body.redelivery_count,
            owner=self,
            ack_set=_bits(body.ack_set) if batched and len(body.ack_set) else -1,
            start=self._start_filter(ledger, entry) if batched else 0,
            chunks=chunk_positions,
            encrypted=encrypted,
        )
        if not batched:
            if self._before_start(messages[0].message_id):
                return [], 1, 0
            return messages, skipped, len(data)
        if not messages and skipped:
            # Nothing left for the application (all acknowledged before, or compacted out).
            self._acks.add(ledger, entry)
        return messages, skipped, len(data)

    def _start_filter(self, ledger: int, entry: int) -> int:
        """The first batch index to deliver from this entry (non-zero only where a reader starts inside it)."""
        start = self._last_dequeued if self._last_dequeued is not None else self._start
        if start is None or self.durable or (start.ledger_id, start.entry_id) != (ledger, entry):
            return 0
        inclusive = self._last_dequeued is None and self._start_inclusive
        if start.batch_index < 0:
            # An id naming the whole entry: all of it, or (exclusive) none of it.
            return 0 if inclusive or start in (EARLIEST, LATEST) else 1 << 31
        return start.batch_index if inclusive else start.batch_index + 1

    def _before_start(self, message_id: MessageId) -> bool:
        """Whether the broker sent an entry this reader has already passed: the last one handed out before
        a reconnection, or the start entry itself when the start is exclusive."""
        if self.durable:
            return False
        start = self._last_dequeued
        if start is None:
            start = self._start
            exclusive_entry = start is not None and start.batch_index < 0 and not self._start_inclusive
            if not exclusive_entry or start in (EARLIEST, LATEST):
                return False
        assert start is not None
        return (message_id.ledger_id, message_id.entry_id) <= (start.ledger_id, start.entry_id)

    def consumed(self, count: int = 1) -> None:
        """The application took ``count`` messages (or they were skipped): grant permits when half are used."""
        self._permits += count
        if self._permits >= self._grant_at:
            self._grant()

    def _grant(self) -> bool:
        """Send a FLOW for the permits owed, as many as the memory budget has room for; False when sending failed.

        Permits go out once half the queue is owed (all of it after subscribing). Under a memory limit only
        those that fit in the room left go out, by the bytes per message seen so far; the others wait for
        room (the budget calls back) or for the permits in flight to arrive. A partition with nothing queued
        and nothing in flight always gets one, so that no queue of the client can starve another.
        """
        permits = self._permits
        connection = self.connection
        self._grant_at = self._refill_at
        if permits < self._refill_at or connection is None or self._closed:
            return True
        budget = self.queue.budget
        count = permits
        if budget is not None and budget.limited:
            budget.forget(self._grant)
            count = min(permits, max(0, budget.free // self._message_bytes))
            outstanding = self._outstanding
            if count < permits:
                # Woken when the room for the smallest grant it would make is free: half the queue while
                # messages are on their way, else one message.
                least = self._refill_at if outstanding > 0 else 1
                budget.wait(self._grant, min(permits, least) * self._message_bytes)
            # Nothing would come of it, or a small grant while messages are on their way (they call again).
            if outstanding + count <= 0 or (outstanding > 0 and count < self._refill_at):
                if outstanding > 0 or self._queued:
                    if count == permits and outstanding < 0:
                        # The broker pushed past the permits (it reads whole entries, tens of batches at once):
                        # no grant can bring anything before 1 - outstanding are owed, so the messages taken
                        # until then do not ask again, one by one (an arrival or the budget still does).
                        self._grant_at = max(self._refill_at, 1 - outstanding)
                    return True
                count = min(permits, 1 - outstanding)  # an empty partition: enough for one more entry
        # The broker reads as many entries as it holds permits (up to 100, 5 MB), whatever each entry holds: with
        # batches of 1000 messages a grant of 500 brought 47,000. Its permits are kept to the entries the queue
        # holds, at least one: what is owed beyond goes out as those entries arrive.
        room = max(1, int(self.queue_size / self._entry_messages)) - self._outstanding
        if count > room:
            if room <= 0:
                self._grant_at = _AFTER_ARRIVAL
                return True
            count = room
        try:
            connection.send(encode_command(commands.flow(self.consumer_id, count)))
        except MqwireError:
            return False  # on failure the reconnection grants a full queue anyway
        self.counters.requests += 1
        self._permits = permits - count
        self._set_outstanding(self._outstanding + count)
        return True

    def _set_outstanding(self, permits: int) -> None:
        """Record the permits in flight and the bytes they may bring in the budget's expectation."""
        self._outstanding = permits
        budget = self.queue.budget
        if budget is not None:
            promised = max(0, permits) * self._message_bytes
            budget.expect(promised - self._promised)
            self._promised = promised

    def _learn_entry(self, count: int) -> None:
        """Follow the messages per entry: at once upwards, an eighth of the way per entry downwards; and let
        the next message taken try a grant again (fewer permits are in flight now)."""
        seen = self._entry_messages
        self._entry_messages = count if count >= seen else seen + (count - seen) / 8
        self._grant_at = self._refill_at

    def _learn_size(self, size: int, count: int = 1) -> None:
        """Follow the bytes per message (``size``, the average of an entry's ``count``): at once upwards, slowly
        downwards, each message of a batch a step. One step per entry kept the first guess (64 KiB) for tens
        of entries of small messages, so that the partitions of a topic seemed to fill the memory limit many
        times over and got their permits a few at a time."""
        estimate = self._message_bytes
        if size < estimate:
            kept = _KEPT_PER_MESSAGE ** min(count, 64)  # beyond 64 messages the old estimate weighs nothing
            estimate = max(size, int(estimate * kept + size * (1 - kept)), 1)
        else:
            estimate = size
        if estimate != self._message_bytes:
            self._message_bytes = estimate
            self._set_outstanding(self._outstanding)

    def dequeued(self, message: Message) -> None:
        message_id = self._last_dequeued = message.message_id
        if self._queued:
            self._queued -= 1
        self.counters.records += 1
        tracker = self._unacked
        if tracker is not None:
            for position in message._chunks or [(message_id.ledger_id, message_id.entry_id)]:
                tracker.add(position)
        self.consumed(1)

    def _entry_done(self, position: Position) -> None:
        if self._unacked is not None:
            self._unacked.remove(position)
        if self._doomed:
            self._doomed.pop(position, None)

    # ------------------------------------------------------------------------------------- acks
    def ack(self, message: Message) -> None:
        message_id = message.message_id
        batch = message._batch
        if batch is not None and not batch.ack(message_id.batch_index):
            if self._batch_index_acks and not batch.complete:
                # Told to the broker only with batch_index_ack_enabled; else the entry waits for all of it.
                self._acks.add_partial(message_id.ledger_id, message_id.entry_id, batch.unacked)
            return
        chunks = message._chunks
        if chunks:
            for ledger, entry in chunks:
                self._acks.add(ledger, entry)
                self._entry_done((ledger, entry))
            return
        self._acks.add(message_id.ledger_id, message_id.entry_id)
        self._entry_done((message_id.ledger_id, message_id.entry_id))

    async def ack_in_transaction(self, message: Message, txn: tuple[int, int]) -> None:
        """Acknowledge ``message`` as part of transaction ``txn`` (most, least bits), sent now and confirmed.

        The broker applies it when the transaction commits, and drops it when it aborts."""
        connection = self.connection
        if connection is None:
            raise ConnectionLostError(f"{self.label}: not connected")
        message_id = message.message_id
        batch = message._batch
        positions = message._chunks or [(message_id.ledger_id, message_id.entry_id)]
        if batch is not None and message_id.batch_size > 1:
            # This message alone: every other bit of the batch stays set (not acknowledged by this request),
            # as other transactions may hold the rest of the entry.
            everyone = (1 << message_id.batch_size) - 1
            ids = [MessageIdData(ledgerId=message_id.ledger_id & _UINT64, entryId=message_id.entry_id & _UINT64,
                                 ack_set=bitset_words(everyone & ~(1 << message_id.batch_index)),
                                 batch_size=message_id.batch_size)]
            if not batch.ack(message_id.batch_index):
                positions = []
        else:
            ids = [MessageIdData(ledgerId=ledger & _UINT64, entryId=entry & _UINT64) for ledger, entry in positions]
        request_id = connection.next_request_id()
        command = commands.ack(self.consumer_id, ids, request_id=request_id)
        command.ack.txnid_most_bits, command.ack.txnid_least_bits = txn
        frame = await connection.request(command, request_id, self.session.operation_timeout)
        response = frame.command.ackResponse
        if response.HasField("error"):
            raise errors.error_for(response.error, response.message)
        for position in positions:
            self._entry_done(position)

    def ack_cumulative(self, message: Message) -> None:
        message_id = message.message_id
        batch = message._batch
        ledger, entry = message_id.ledger_id, message_id.entry_id
        if batch is not None and not batch.ack_up_to(message_id.batch_index) and not batch.complete:
            # Part of the batch is still unacknowledged: everything before this entry is done.
            entry -= 1
            if entry < 0:
                return
        self._acks.add_cumulative(ledger, entry)
        if self._unacked is not None:
            self._unacked.remove_up_to((ledger, entry))

    def negative_ack(self, message: Message) -> None:
        message_id = message.message_id
        chunks = message._chunks or [(message_id.ledger_id, message_id.entry_id)]
        for ledger, entry in chunks:
            self._nacks.add(ledger, entry)
            if self._unacked is not None:
                self._unacked.remove((ledger, entry))

    def flush_acks(self) -> None:
        self._acks.flush()

    def _send_acks(self, positions: list[Position]) -> bool:
        connection = self.connection
        if connection is None:
            return False
        try:
            connection.send(individual_ack_frame(self.consumer_id, positions))
        except MqwireError:
            return False
        return True

    def _send_partial_acks(self, items: list[tuple[Position, int]]) -> bool:
        connection = self.connection
        if connection is None:
            return False
        ids = [
            MessageIdData(ledgerId=ledger & _UINT64, entryId=entry & _UINT64, ack_set=bitset_words(unacked))
            for (ledger, entry), unacked in items
        ]
        try:
            connection.send(encode_command(commands.ack(self.consumer_id, ids)))
        except MqwireError:
            return False
        return True

    def _send_cumulative(self, position: Position) -> bool:
        connection = self.connection
        if connection is None:
            return False
        message_id = MessageIdData(ledgerId=position[0] & _UINT64, entryId=position[1] & _UINT64)
        try:
            connection.send(encode_command(commands.ack(self.consumer_id, [message_id], cumulative=True)))
        except MqwireError:
            return False
        return True

    def _discard(self, position: Position, error: ProtocolError) -> None:
        # A corrupt entry would come back forever; acknowledging it with the reason ends that.
        connection = self.connection
        if connection is None:
            return
        reason = CommandAck.DecompressionError if "compress" in str(error) else CommandAck.BatchDeSerializeError
        message_id = MessageIdData(ledgerId=position[0] & _UINT64, entryId=position[1] & _UINT64)
        with contextlib.suppress(MqwireError):
            connection.send(encode_command(commands.ack(self.consumer_id, [message_id], validation_error=reason)))

    def _reject_corrupt(self, body: Any) -> None:
        # Not delivered: acknowledged with the reason, so that the broker does not send it again.
        id_data = body.message_id
        log.warning("%s: discarding entry %d:%d: checksum mismatch", self.label, _signed(id_data.ledgerId),
                    _signed(id_data.entryId))
        connection = self.connection
        if connection is not None:
            message_id = MessageIdData(ledgerId=id_data.ledgerId, entryId=id_data.entryId)
            with contextlib.suppress(MqwireError):
                connection.send(encode_command(
                    commands.ack(self.consumer_id, [message_id], validation_error=CommandAck.ChecksumMismatch)
                ))
        self.consumed(1)

    def _redeliver(self, positions: list[Position]) -> None:
        if self._doomed:
            doomed = [position for position in positions if position in self._doomed]
            if doomed:
                positions = [position for position in positions if position not in self._doomed]
                for position in doomed:
                    self._dead_letter_sends.spawn(self._dead_letter(position, self._doomed.pop(position)))
                if not positions:
                    return
        if self.options.subscription_type in _SHARED_TYPES:
            connection = self.connection
            if connection is None:
                return  # a reconnection redelivers everything unacknowledged anyway
            ids = [MessageIdData(ledgerId=ledger & _UINT64, entryId=entry & _UINT64) for ledger, entry in positions]
            with contextlib.suppress(MqwireError):
                connection.send(encode_command(commands.redeliver_unacknowledged(self.consumer_id, ids)))
        else:
            # Exclusive and Failover keep order: everything unacknowledged comes again, in order.
            self.redeliver_all()

    async def _dead_letter(self, position: Position, messages: list[Message]) -> None:
        assert self._dead_letters is not None
        # Indexes of the batch the application acknowledged meanwhile are not dead letters.
        alive = [m for m in messages if m._batch is None or (m._batch.unacked >> m.message_id.batch_index) & 1]
        try:
            if alive:
                await self._dead_letters.send_to_dead_letter(alive)
        except MqwireError as exc:
            log.warning("%s: sending %d:%d to the dead-letter topic failed (%s); redelivering it",
                        self.label, position[0], position[1], exc)
            if not self._closed:
                self._redeliver([position])
            return
        self._acks.add(*position)

    def redeliver_all(self) -> None:
        connection = self.connection
        if connection is None:
            return
        if self._unacked is not None:
            self._unacked.clear()
        self._doomed.clear()
        self._epoch += 1
        removed = self.queue.remove_owner(self)
        self._queued = max(0, self._queued - removed)
        try:
            connection.send(encode_command(
                commands.redeliver_unacknowledged(self.consumer_id, consumer_epoch=self._epoch)
            ))
        except MqwireError:
            return
        if removed:
            self.consumed(removed)

    # ---------------------------------------------------------------------------------- closing
    async def close(self, *, unsubscribe: bool = False) -> None:
        """Send the pending acks, then close (or unsubscribe) the consumer on the broker."""
        if self._closed:
            return
        self._closed = True
        self._set_outstanding(0)
        self._held.clear()
        if self._opening is not None:
            self._opening.cancel()
        if self.queue.budget is not None:
            self.queue.budget.forget(self._grant)
        # Dead letters on their way are acknowledged before the consumer goes.
        await self._dead_letter_sends.wait(self.session.operation_timeout)
        self._acks.flush()
        self._nacks.discard()
        if self._unacked is not None:
            self._unacked.stop()
        await self._stop_reconnecting()
        connection, self.connection = self.connection, None
        if connection is None:
            self._acks.discard()
            return
        build = commands.unsubscribe if unsubscribe else commands.close_consumer
        request_id = connection.next_request_id()
        try:
            await connection.request(build(self.consumer_id, request_id), request_id, self.session.operation_timeout)
        except MqwireError as exc:
            if unsubscribe:
                raise
            log.debug("%s: close failed: %s", self.label, exc)
        finally:
            connection.unregister_consumer(self.consumer_id)
            self._acks.discard()

    async def get_last_message_id(self) -> MessageId:
        """The id of the last message stored in this partition (GET_LAST_MESSAGE_ID)."""
        return (await self._last_ids())[0]

    async def _last_ids(self) -> tuple[MessageId, MessageId | None]:
        """The last message id stored, and the subscription's mark-delete position when the broker says it.

        Waits (within the operation timeout) for a reconnection under way, as after a seek."""
        return await self.session.retrying(self._last_ids_once, f"{self.label}: last message id")

    async def _last_ids_once(self) -> tuple[MessageId, MessageId | None]:
        connection = self.connection
        if connection is None:
            raise ConnectionLostError(f"{self.label}: not connected")
        request_id = connection.next_request_id()
        frame = await connection.request(
            commands.get_last_message_id(self.consumer_id, request_id), request_id, self.session.operation_timeout
        )
        response = frame.command.getLastMessageIdResponse
        mark_delete = None
        if response.HasField("consumer_mark_delete_position"):
            mark_delete = MessageId.from_data(response.consumer_mark_delete_position, self.partition)
        return MessageId.from_data(response.last_message_id, self.partition), mark_delete

    async def has_message_available(self) -> bool:
        """Whether this partition stores a message after the last one handed out (or from where reading starts).

        Before any message was handed out from a position ("earliest", "latest", or where a seek by time
        put the subscription), the broker's mark-delete position of the subscription tells where that is.
        """
        last, mark_delete = await self._last_ids()
        if last.entry_id < 0:
            return False
        newest = (last.ledger_id, last.entry_id, last.batch_index)
        seen = self._last_dequeued
        if seen is not None:
            return newest > (seen.ledger_id, seen.entry_id, seen.batch_index)
        start = self._start
        if start is None or start in (EARLIEST, LATEST):
            if mark_delete is None:
                return start == EARLIEST
            return (last.ledger_id, last.entry_id) > (mark_delete.ledger_id, mark_delete.entry_id)
        position = (start.ledger_id, start.entry_id, start.batch_index)
        return newest >= position if self._start_inclusive else newest > position

    async def refresh_backlog(self) -> int:
        """Ask the broker for this subscription's backlog on this partition (CONSUMER_STATS) and keep it."""
        connection = self.connection
        if connection is None:
            raise ConnectionLostError(f"{self.label}: not connected")
        request_id = connection.next_request_id()
        frame = await connection.request(
            commands.consumer_stats(self.consumer_id, request_id), request_id, self.session.operation_timeout
        )
        response = frame.command.consumerStatsResponse
        if response.HasField("error_code"):
            raise errors.error_for(response.error_code, response.error_message)
        self.backlog = int(response.msgBacklog)
        return self.backlog

    async def seek(self, *, message_id: MessageId | None = None, publish_time: int | None = None) -> None:
        """Move the subscription; the broker then closes the consumer, which reconnects from there."""
        connection = self.connection
        if connection is None:
            raise ConnectionLostError(f"{self.label}: not connected")
        # Acks still grouped here would land after the seek and acknowledge what it rewound to.
        self._acks.flush()
        self._acks.discard()
        request_id = connection.next_request_id()
        command = commands.seek(
            self.consumer_id,
            request_id,
            message_id=None if message_id is None else message_id.to_data(),
            publish_time=publish_time,
        )
        await connection.request(command, request_id, self.session.operation_timeout)
        self._last_dequeued = None
        # As the Java client: from a message id, that message included; after a seek by time, from wherever
        # the broker put the subscription (a reader's non-durable cursor is kept across the reconnection).
        self._start, self._start_inclusive = (EARLIEST if message_id is None else message_id), True
        self.queue.remove_owner(self)


_UINT64 = (1 << 64) - 1


# The reference clients decompress whatever size the producer declared; this bounds a lying declaration.
# It is the client's own bound: a broker announcing a larger maximum message size does not raise it.
_MAX_UNCOMPRESSED = 64 * 1024 * 1024
_MAX_LONG = (1 << 63) - 1
# The bytes per message a consumer assumes before it has seen any: 64 MiB of memory limit hold a
# default receiver queue (1000) of them, so the first FLOW grants the whole queue.
_ASSUMED_MESSAGE_BYTES = 64 * 1024
# What of the estimate each smaller message keeps: an eighth of the way to the new size per message.
_KEPT_PER_MESSAGE = 7 / 8
# The permits owed at which a message taken tries a grant while only an arrival can let one out.
_AFTER_ARRIVAL = 1 << 62


def _signed(value: int) -> int:
    return value - (1 << 64) if value > _MAX_LONG else value


def _bits(words: Any) -> int:
    """A Java BitSet (little-endian 64-bit words) as one integer, built in one pass (linear in the words)."""
    return bits_of_words(words)
