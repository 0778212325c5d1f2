"""The Kafka producer: ``send`` waits for the broker's acknowledgement, ``enqueue`` only for buffer space.

Records are appended to the open batch of their partition (``accumulator``); a background task
(``sender``) ships ready batches to the partition leaders. Options keep the names of the Java client and
aiokafka; the client checks them into a ``ProducerConfig`` (``kafkawire.options``) before the producer is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from kafkawire import errors
from kafkawire.accumulator import Accumulator, ProducerBatch, estimate_record_size
from kafkawire.buffer_waits import BufferWaits
from kafkawire.bulk import BulkMetadata, BulkSend
from kafkawire.delivery import BatchOutcome, RecordFuture
from kafkawire.message import RecordMetadata
from kafkawire.metadata import TopicPartition
from kafkawire.offsets import OffsetAndMetadata
from kafkawire.options import ProducerConfig
from kafkawire.partitioner import StickyPartitioner, partition_for_key
from kafkawire.protocol.records import HEADER_SIZE
from kafkawire.sender import Sender, SenderConfig
from kafkawire.transaction import GroupMetadataLike, TransactionManager
from kafkawire.waker import Waker
from mqwire.common.contract import Serializer
from mqwire.common.errors import ClosedError, ConfigurationError, OptionTypeError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.serde import to_bytes
from mqwire.common.stats import ProducerStats

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

Header = tuple[str, bytes | None]
HeadersInput = Mapping[str, bytes | None] | Iterable[tuple[str, bytes | None]] | None
INT32_MAX = 2**31 - 1
# Record timestamps are int64 milliseconds; like the Java producer, a negative one is refused (brokers do too).
INT64_MAX = 2**63 - 1
_BYTES_TYPES = (bytes, bytearray, memoryview)
_FIRST = operator.itemgetter(0)


class Producer(AsyncResource):
    """Use as ``async with client.producer("topic", **options) as producer``."""

    def __init__(self, session: Session, topic: str | None, config: ProducerConfig) -> None:
        if topic is not None and (not isinstance(topic, str) or not topic):
            raise OptionTypeError("topic must be a non-empty str or None")
        self._session = session
        self.topic = topic
        # What the per-record path reads is copied out of the config once, here: one attribute each.
        self._key_serializer = config.key_serializer
        self._value_serializer = config.value_serializer
        self.acks = config.acks
        self.batch_size = config.batch_size
        self.compression = config.compression
        self.max_request_size = config.max_request_size
        self.retries = config.retries
        self.transactional_id = transactional_id = config.transactional_id
        self.transaction_timeout_ms = config.transaction_timeout_ms
        self.idempotent = config.idempotent
        self.buffer_memory = config.buffer_memory
        self.max_block = config.max_block
        self._record_limit = min(self.max_request_size, self.buffer_memory)
        self._partitioner = config.partitioner
        self._sticky = StickyPartitioner()
        waker = Waker()
        self._accumulator = Accumulator(
            batch_size=self.batch_size,
            linger=config.linger,
            compression=self.compression,
            buffer_memory=self.buffer_memory,
            delivery_timeout=config.delivery_timeout,
            max_request_size=self.max_request_size,
            on_ready=waker.wake,
            transactional=transactional_id is not None,
            max_batch_size=config.max_batch_size,
        )
        self._waits = BufferWaits(self._accumulator)
        self._sender = Sender(
            session,
            self._accumulator,
            SenderConfig(
                acks=self.acks,
                request_timeout=config.request_timeout,
                retries=self.retries,
                retry_backoff=config.retry_backoff,
                retry_backoff_max=config.retry_backoff_max,
                max_in_flight=config.max_in_flight,
                idempotent=self.idempotent,
                transactional_id=transactional_id,
                transaction_timeout_ms=self.transaction_timeout_ms,
            ),
            waker,
        )
        self._transaction: TransactionManager | None = None
        if transactional_id is not None:
            assert self._sender.idempotence is not None
            self._transaction = TransactionManager(
                session, transactional_id, self.transaction_timeout_ms, self._sender.idempotence, waker.wake
            )
            self._sender.transaction = self._transaction
        # topic -> (metadata version, partition ids, partitions with a leader)
        self._topics: dict[str, tuple[int, list[int], list[int]]] = {}
        self._tracked: set[str] = set()
        self._lifecycle = Lifecycle("kafka producer")
        self._affinity = session.affinity
        self._running = False  # the sender runs (from start, or from the first send)
        # The short way of ``enqueue`` (see there): possible without serializers, a partitioner or a
        # transaction; the open batch it appends to, set by the full way.
        self._fast_enabled = (
            self._value_serializer is None
            and self._key_serializer is None
            and self._partitioner is None
            and transactional_id is None
        )
        self._fast_batch: ProducerBatch | None = None
        self._fast_value_limit = self._record_limit - _BARE_RECORD

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Start the sender and, with a default topic, load its partitions so the first send does not wait."""
        self._affinity.check()
        try:
            await self._lifecycle.start(self._start)
        except Exception:
            await self.close()
            raise

    async def _start(self) -> None:
        self._ensure_started()
        if self.topic is not None:
            await self._partitions(self.topic)

    def _ensure_started(self) -> None:
        """Start the sender at once (a send before ``start`` needs no await to begin)."""
        self._lifecycle.check_open()
        if not self._running:
            self._session.adopt(self)
            self._running = True
            self._sender.start()

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered now and wait until each of those records is acknowledged or failed;
        raises RequestTimeoutError (a TimeoutError) if ``timeout`` seconds pass first."""
        self._affinity.check()
        await self._waits.flush(timeout)

    async def close(self) -> None:
        """Flush, then stop. Records not delivered within ``delivery_timeout_ms`` fail as usual. In a process
        forked after the client was made it does nothing (what is buffered and connected is the parent's)."""
        if not self._affinity.may_close():
            return
        await self._lifecycle.close(self._close)

    async def stop(self) -> None:
        """aiokafka's name for ``close``: flush, then stop."""
        await self.close()

    async def _close(self) -> None:
        if self._running:
            try:
                await self._sender.stop()
            except asyncio.CancelledError:
                await self._sender.abort()
                raise
            finally:
                if self._transaction is not None:
                    await self._transaction.close()
            self._session.untrack(self._tracked)
            self._session.release(self)

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._lifecycle.closed

    @property
    def requests_sent(self) -> int:
        """Produce requests sent so far (each carries one batch per partition)."""
        return self._sender.counters.requests

    def stats(self) -> ProducerStats:
        """Records, bytes and batches acknowledged, requests, retries, errors, the buffer and send latency.

        Counted per batch as the broker acknowledges it; ``buffered_records`` and ``buffered_bytes`` are what the
        accumulator holds now (``buffered_bytes`` is the memory reserved against ``buffer_memory``)."""
        accumulator = self._accumulator
        return self._sender.counters.snapshot(
            "kafka",
            self.topic,
            in_flight=self._sender.in_flight,
            buffered_records=accumulator.buffered_records(),
            buffered_bytes=accumulator.used,
        )

    # ---------------------------------------------------------------------------------- sending
    async def send(
        self,
        value: Any = None,
        *,
        key: Any = None,
        headers: HeadersInput = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        topic: str | None = None,
    ) -> RecordMetadata:
        """Produce one record and wait for the broker's acknowledgement."""
        future = await self.enqueue(
            value, key=key, headers=headers, partition=partition, timestamp_ms=timestamp_ms, topic=topic
        )
        return await future

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersInput = None,
    ) -> RecordMetadata:
        """aiokafka's ``send_and_wait``, with its arguments in its order: the topic first, then the value.

        Produces one record to ``topic`` and waits for the broker's acknowledgement; the same as
        ``send(value, topic=topic, ...)``.
        """
        return await self.send(
            value, key=key, headers=headers, partition=partition, timestamp_ms=timestamp_ms, topic=topic
        )

    async def enqueue(
        self,
        value: Any = None,
        *,
        key: Any = None,
        headers: HeadersInput = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        topic: str | None = None,
    ) -> RecordFuture:
        """Buffer one record; the returned future resolves with its RecordMetadata once acknowledged.

        The future is a ``RecordFuture``: it is awaited and used as an ``asyncio.Future`` (``done``,
        ``result``, ``add_done_callback``, ``asyncio.gather``/``wait``), without ``set_result``.

        ``key`` and ``value`` are bytes or None, or anything the ``key_serializer`` / ``value_serializer``
        turns into bytes. Waits only while the buffer is full (at most ``max_block_ms``) or the topic's
        partitions are unknown.
        """
        self._affinity.check()
        batch = self._fast_batch
        if (
            batch is not None
            and type(value) is bytes
            and key is None
            and headers is None
            and partition is None
            and timestamp_ms is None
            and topic is None
            and not batch.closed
            and self._sender.fatal_error is None
            and len(value) <= self._fast_value_limit
        ):
            # Most records of a loop of plain sends: bytes to the default topic's sticky partition, whose open
            # batch the previous such record found. Everything else the checks below would look at is fixed
            # while that batch is open (and closing the producer closes it first).
            record = self._accumulator.append_now(batch, value)
            if record is not None:
                if batch.closed:
                    await asyncio.sleep(0)  # the batch is complete: let the sender ship it now
                return record
        if not self._running:
            self._ensure_started()
        fatal = self._sender.fatal_error
        if fatal is not None:
            raise fatal
        if self._transaction is not None:
            self._transaction.check_send()
        if topic is None:
            topic = self.topic if self.topic is not None else self._topic(None)
        elif type(topic) is not str or not topic:
            raise TypeError("topic must be a non-empty str")
        # The common case (bytes, no serializer, no headers) is checked inline: this runs once per record.
        if self._value_serializer is not None or (type(value) is not bytes and value is not None):
            value = to_bytes(value, self._value_serializer, "value")
        if self._key_serializer is not None or (type(key) is not bytes and key is not None):
            key = to_bytes(key, self._key_serializer, "key")
        if headers:
            header_list = _headers(headers)
            size = HEADER_SIZE + estimate_record_size(key, value, header_list)
        else:
            header_list = ()
            size = _BARE_RECORD + (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._record_limit:
            raise errors.MessageTooLargeError(
                f"a record of about {size} bytes exceeds max_request_size ({self.max_request_size}) "
                f"or buffer_memory ({self.buffer_memory})"
            )
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        elif type(timestamp_ms) is not int or not 0 <= timestamp_ms <= INT64_MAX:
            _bad_timestamp(timestamp_ms)
        accumulator = self._accumulator
        if accumulator.closing:
            raise ClosedError("producer is closed")
        if accumulator.used >= self.buffer_memory:
            await self._waits.for_space(self.max_block)
        cached = self._topics.get(topic)
        if cached is None or cached[0] != self._session.metadata.version:
            await self._partitions(topic)
            cached = self._topics[topic]
        _, partitions, available = cached
        sealed = accumulator.sealed
        if partition is None and key is None and self._partitioner is None:
            # The common case, unkeyed records on the sticky partition: once per record, so kept short.
            sticky = self._sticky
            partition = sticky.current.get(topic, INT32_MAX)
            if partition >= len(partitions):
                partition = sticky.partition(topic, len(partitions), available)
            future = accumulator.append(topic, partition, timestamp_ms, key, value, header_list, True)
            if future is None:
                # The sticky partition's batch is complete: move on to another partition for the new batch.
                partition = sticky.next_batch(topic, len(partitions), available, partition)
                future = accumulator.append(topic, partition, timestamp_ms, key, value, header_list)
                assert future is not None
            if self._fast_enabled and topic == self.topic and not header_list:
                self._fast_batch = accumulator.open_batch(topic, partition)
        else:
            if partition is not None:
                if type(partition) is not int:
                    raise TypeError("partition must be an int or None")
                if not 0 <= partition < len(partitions):
                    raise ValueError(
                        f"partition {partition} is not in topic {topic!r} (partitions 0-{len(partitions) - 1})"
                    )
            elif self._partitioner is not None:
                partition = self._partitioner(key, partitions, available)
                if type(partition) is not int or not 0 <= partition < len(partitions):
                    raise ValueError(f"the partitioner returned {partition!r}, not a partition of topic {topic!r}")
            else:
                assert key is not None
                partition = partition_for_key(key, len(partitions))
            future = accumulator.append(topic, partition, timestamp_ms, key, value, header_list)
            assert future is not None
        if accumulator.sealed != sealed:
            # A batch is complete: let the sender ship it now, even if the caller never awaits anything else.
            await asyncio.sleep(0)
        return future

    async def _enqueue_records(
        self,
        args: Sequence[Any],
        kwargs: Sequence[Mapping[str, Any] | None],
        into: list[tuple[int, int, BatchOutcome | Exception, int]],
    ) -> None:
        """``enqueue(*args[i], **kwargs[i])`` (``enqueue(args[i])`` where ``kwargs[i]`` is None) for many records
        in order, for the blocking producer's hand-over.

        What became of them is appended to ``into`` as it goes (so a cancelled call leaves there what was
        buffered), in order, as runs ``(start, stop, outcome, first)``: records ``start``..``stop`` went into
        the batch of ``outcome`` at the places from ``first``; or ``(i, i + 1, error, -1)``: record ``i`` was
        refused with ``error`` (that record only; the next ones go on).

        Bare values to the default topic's open batch go in a run at a time, stamped when they go in, as
        ``enqueue`` stamps them; every other record through ``enqueue`` itself, with its checks, errors and
        waits (``max_block_ms``)."""
        count = len(args)
        values = self._bare_values(args, kwargs) if self._fast_enabled else None
        accumulator = self._accumulator
        sender = self._sender
        limit = self._fast_value_limit
        at = 0
        while at < count:
            batch = self._fast_batch
            fast = batch is not None and not batch.closed and sender.fatal_error is None
            if fast and values is not None:
                assert batch is not None
                first = len(batch.outcome)
                added = accumulator.append_values_now(batch, values, at, count)
                if added:
                    _add_run(into, at, at + added, batch.outcome, first)
                    at += added
                    if batch.closed:
                        await asyncio.sleep(0)  # the batch is complete: let the sender ship it now
                    continue
                fast = False  # nothing fitted and the batch is closed: the full way opens the next one
            positional, named = args[at], kwargs[at]
            if named is None:  # the value alone
                positional, named = (positional,), {}
            future: RecordFuture | None = None
            try:
                if (
                    fast
                    and batch is not None
                    and not named
                    and len(positional) == 1
                    and type(value := positional[0]) is bytes
                    and len(value) <= limit
                ):
                    future = accumulator.append_now(batch, value)  # enqueue's short way (see there)
                if future is None:
                    future = await self.enqueue(*positional, **named)
                    batch = None
            except Exception as error:
                into.append((at, at + 1, error, -1))
                at += 1
                continue
            _add_run(into, at, at + 1, future._outcome, future._index)
            at += 1
            if batch is not None and batch.closed:
                await asyncio.sleep(0)

    def _bare_values(
        self, args: Sequence[Any], kwargs: Sequence[Mapping[str, Any] | None]
    ) -> list[bytes | None] | None:
        """The values of a slice whose records are all bare values the short way takes (bytes, no keyword
        argument, none too large), found without a step per record in Python; else None."""
        if not args:
            return None
        values: list[bytes | None]
        if kwargs.count(None) == len(kwargs):  # values alone
            values = list(args)
        elif kwargs.count({}) == len(kwargs) and set(map(len, args)) == {1}:
            values = list(map(_FIRST, args))
        else:
            return None
        if set(map(type, values)) != {bytes} or max(map(len, values)) > self._fast_value_limit:  # type: ignore[arg-type]
            return None
        return values

    async def enqueue_many(
        self,
        values: Sequence[Any],
        *,
        keys: Sequence[Any] | None = None,
        headers: Sequence[HeadersInput] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        topic: str | None = None,
    ) -> asyncio.Future[BulkMetadata]:
        """Buffer many records already in memory in one call; one future for the call.

        ``values`` (and ``keys`` and ``headers`` when given, one entry per record) are what ``enqueue``
        takes, checked the same way with the same errors, all of them before any record is buffered: a call
        is refused whole or buffered whole. The records share one timestamp and are encoded into batches in
        one pass. The future resolves once every record is acknowledged, with a ``BulkMetadata``: the
        RecordMetadata of each record in the order given. It fails with the first error of any batch
        carrying the call's records (records of its other batches may have been written), or at once if
        the producer closes or the buffer stays full (``max_block_ms``) before all are buffered.
        """
        self._affinity.check()
        if not self._running:
            self._ensure_started()
        fatal = self._sender.fatal_error
        if fatal is not None:
            raise fatal
        if self._transaction is not None:
            self._transaction.check_send()
        if topic is None:
            topic = self.topic if self.topic is not None else self._topic(None)
        elif type(topic) is not str or not topic:
            raise TypeError("topic must be a non-empty str")
        if isinstance(values, (str, bytes, bytearray, memoryview)) or not isinstance(values, Sequence):
            raise TypeError("values must be a sequence (a list) of record values")
        count = len(values)
        value_list = self._bulk_bytes(values, self._value_serializer, "value")
        key_list = None
        if keys is not None:
            if isinstance(keys, (str, bytes, bytearray, memoryview)) or not isinstance(keys, Sequence):
                raise TypeError("keys must be a sequence (a list) of record keys, or None")
            if len(keys) != count:
                raise ValueError(f"keys has {len(keys)} entries for {count} values")
            key_list = self._bulk_bytes(keys, self._key_serializer, "key")
        elif self._key_serializer is not None:
            key_list = self._bulk_bytes([None] * count, self._key_serializer, "key")
        header_lists: list[Sequence[Header]] | None = None
        if headers is not None:
            if isinstance(headers, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(headers, Sequence):
                raise TypeError("headers must be a sequence with the headers of each record, or None")
            if len(headers) != count:
                raise ValueError(f"headers has {len(headers)} entries for {count} values")
            header_lists = [_headers(h) if h else () for h in headers]
            if not any(header_lists):
                header_lists = None
        self._check_sizes(key_list, value_list, header_lists)
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        elif type(timestamp_ms) is not int or not 0 <= timestamp_ms <= INT64_MAX:
            _bad_timestamp(timestamp_ms)
        accumulator = self._accumulator
        if accumulator.closing:
            raise ClosedError("producer is closed")
        cached = self._topics.get(topic)
        if cached is None or cached[0] != self._session.metadata.version:
            await self._partitions(topic)
            cached = self._topics[topic]
        _, partitions, available = cached
        if partition is not None:
            if type(partition) is not int:
                raise TypeError("partition must be an int or None")
            if not 0 <= partition < len(partitions):
                raise ValueError(
                    f"partition {partition} is not in topic {topic!r} (partitions 0-{len(partitions) - 1})"
                )
        call = BulkSend(count, asyncio.get_running_loop())
        if count == 0:
            call.future.set_result(BulkMetadata(0, []))
            return call.future
        try:
            if partition is None and (key_list is not None or self._partitioner is not None):
                chosen = self._bulk_partitions(topic, key_list, partitions, available, count)
                for part, indices in chosen.items():
                    await self._append_run(
                        topic,
                        part,
                        timestamp_ms,
                        _pick(key_list, indices),
                        [value_list[i] for i in indices],
                        _pick(header_lists, indices),
                        indices,
                        call,
                        sticky=False,
                    )
            else:
                await self._append_run(
                    topic,
                    partition,
                    timestamp_ms,
                    key_list,
                    value_list,
                    header_lists,
                    range(count),
                    call,
                    sticky=partition is None,
                )
        except BaseException as exc:
            call.abandon(exc)
            raise
        return call.future

    async def _append_run(
        self,
        topic: str,
        partition: int | None,
        timestamp_ms: int,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        headers: list[Sequence[Header]] | None,
        positions: range | list[int],
        call: BulkSend,
        *,
        sticky: bool,
    ) -> None:
        """Records of one partition (or of the sticky partition, moving on as batches complete) into batches."""
        accumulator = self._accumulator
        count = len(values)
        done = 0
        # Complete batches are handed to the sender a request's worth at a time, and at the end of the run:
        # yielding after each one (as enqueue does) sent small batches one request each.
        shipped = accumulator.sealed
        per_request = max(1, self.max_request_size // self._accumulator.max_batch_size)
        while done < count:
            if accumulator.closing:
                raise ClosedError("producer is closed")
            if accumulator.used >= self.buffer_memory:
                await self._waits.for_space(self.max_block)
                shipped = accumulator.sealed
            if sticky:
                _, partitions, available = self._topics[topic]
                part = self._sticky.partition(topic, len(partitions), available)
                added = accumulator.append_many(
                    topic,
                    part,
                    timestamp_ms,
                    keys,
                    values,
                    headers,
                    positions,
                    done,
                    count,
                    call,
                    abort_on_new_batch=True,
                )
                if not added:
                    part = self._sticky.next_batch(topic, len(partitions), available, part)
                    added = accumulator.append_many(
                        topic, part, timestamp_ms, keys, values, headers, positions, done, count, call
                    )
            else:
                assert partition is not None
                added = accumulator.append_many(
                    topic, partition, timestamp_ms, keys, values, headers, positions, done, count, call
                )
            done += added
            if accumulator.sealed - shipped >= per_request:
                shipped = accumulator.sealed
                await asyncio.sleep(0)  # let the sender ship the complete batches
        if accumulator.sealed != shipped:
            await asyncio.sleep(0)

    def _bulk_partitions(
        self, topic: str, keys: list[bytes | None] | None, partitions: list[int], available: list[int], count: int
    ) -> dict[int, list[int]]:
        """The records' indices by partition: the partitioner's choice, else the key's hash (sticky for
        records without a key, as enqueue does)."""
        chosen: dict[int, list[int]] = {}
        partitioner = self._partitioner
        for i in range(count):
            key = None if keys is None else keys[i]
            if partitioner is not None:
                part = partitioner(key, partitions, available)
                if type(part) is not int or not 0 <= part < len(partitions):
                    raise ValueError(f"the partitioner returned {part!r}, not a partition of topic {topic!r}")
            elif key is None:
                part = self._sticky.partition(topic, len(partitions), available)
            else:
                part = partition_for_key(key, len(partitions))
            indices = chosen.get(part)
            if indices is None:
                indices = chosen[part] = []
            indices.append(i)
        return chosen

    @staticmethod
    def _bulk_bytes(
        items: Sequence[Any], serializer: Serializer | None, what: Literal["key", "value"]
    ) -> list[bytes | None]:
        """Keys or values as bytes, through the serializer; the same checks and errors as enqueue's."""
        if serializer is None and set(map(type, items)) <= _PLAIN:
            return list(items)
        return [
            item if serializer is None and (item is None or type(item) is bytes) else to_bytes(item, serializer, what)
            for item in items
        ]

    def _check_sizes(
        self,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        headers: list[Sequence[Header]] | None,
    ) -> None:
        """MessageTooLargeError, as enqueue raises it, for the first record over the limit."""
        longest = max(map(len, filter(None, values)), default=0)
        if keys is not None:
            longest += max(map(len, filter(None, keys)), default=0)
        if headers is None and _BARE_RECORD + longest <= self._record_limit:
            return  # no record can be over
        for i, value in enumerate(values):
            key = None if keys is None else keys[i]
            if headers is not None and headers[i]:
                size = HEADER_SIZE + estimate_record_size(key, value, headers[i])
            else:
                size = _BARE_RECORD + (len(key) if key else 0) + (len(value) if value else 0)
            if size > self._record_limit:
                raise errors.MessageTooLargeError(
                    f"a record of about {size} bytes exceeds max_request_size ({self.max_request_size}) "
                    f"or buffer_memory ({self.buffer_memory})"
                )

    # ---------------------------------------------------------------------------------- transactions
    def _transactional(self) -> TransactionManager:
        self._affinity.check()
        if self._transaction is None:
            raise ConfigurationError("transactions need a producer created with transactional_id=")
        return self._transaction

    async def begin_transaction(self) -> None:
        """Start a transaction: what is sent until commit or abort becomes visible all at once, or never."""
        transaction = self._transactional()
        self._ensure_started()
        transaction.begin()

    async def commit_transaction(self) -> None:
        """Send everything buffered, then make the transaction's records (and offsets) visible."""
        await self._end(commit=True)

    async def abort_transaction(self) -> None:
        """Send everything buffered, then mark the transaction aborted: read_committed consumers skip it."""
        await self._end(commit=False)

    async def _end(self, commit: bool) -> None:
        transaction = self._transactional()
        await self._producer_id_ready()

        async def flush() -> None:
            await self._waits.flush(None)
            if self._sender.fatal_error is not None:
                raise self._sender.fatal_error

        await transaction.end(commit, flush)

    async def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], group: str | GroupMetadataLike
    ) -> None:
        """Commit consumer offsets inside the transaction: they count only if it commits.

        ``group`` is a group id, or better ``consumer.group_metadata()`` so that a member that lost its
        partitions in a rebalance cannot commit for them.
        """
        transaction = self._transactional()
        await self._producer_id_ready()
        await transaction.send_offsets({TopicPartition(*tp): v for tp, v in offsets.items()}, group)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Producer]:
        """``async with producer.transaction():`` commits when the block ends, aborts when it raises."""
        await self.begin_transaction()
        try:
            yield self
        except BaseException:
            if self._transactional().error is None:
                await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def _producer_id_ready(self) -> None:
        state = self._sender.idempotence
        assert state is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_block
        while not state.ready:
            if self._sender.fatal_error is not None:
                raise self._sender.fatal_error
            if loop.time() > deadline:
                raise errors.CoordinatorNotAvailableError("no producer id from the transaction coordinator in time")
            await asyncio.sleep(0.01)

    def _topic(self, topic: str | None) -> str:
        if topic is None:
            if self.topic is None:
                raise ValueError("no topic: pass topic= to send/enqueue or give the producer a default topic")
            return self.topic
        if not isinstance(topic, str) or not topic:
            raise TypeError("topic must be a non-empty str")
        return topic

    async def _partitions(self, topic: str) -> None:
        metadata = self._session.metadata
        partitions = metadata.partitions(topic)
        if not partitions:
            partitions = await self._session.partitions_for(topic, timeout=self.max_block)
            if topic not in self._tracked:
                self._tracked.add(topic)
                self._session.track([topic])
        self._topics[topic] = (metadata.version, partitions, metadata.available_partitions(topic))

    def __repr__(self) -> str:
        return f"Producer(topic={self.topic!r}, acks={self.acks}, idempotent={self.idempotent})"


# HEADER_SIZE + estimate_record_size(key, value, ()) without the key and value.
_BARE_RECORD = HEADER_SIZE + estimate_record_size(None, None, ())


_PLAIN = frozenset((bytes, type(None)))


def _add_run(
    runs: list[tuple[int, int, BatchOutcome | Exception, int]], start: int, stop: int, outcome: BatchOutcome, first: int
) -> None:
    """Records ``start``..``stop`` went into ``outcome``'s batch from place ``first``: the last run goes on when
    they follow it there, else a run begins."""
    if runs:
        last_start, last_stop, last_outcome, last_first = runs[-1]
        if last_outcome is outcome and last_stop == start and last_first + start - last_start == first:
            runs[-1] = (last_start, stop, outcome, last_first)
            return
    runs.append((start, stop, outcome, first))


def _pick(items: list[Any] | None, indices: list[int]) -> list[Any] | None:
    return None if items is None else [items[i] for i in indices]


def _as_bytes(name: str, value: object) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, _BYTES_TYPES):
        return bytes(value)
    raise TypeError(f"{name} must be bytes or None, not {type(value).__name__} (encode text yourself)")


def _headers(headers: HeadersInput) -> Sequence[Header]:
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    result: list[Header] = []
    for item in items:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError("headers must be a mapping of str to bytes or a list of (str, bytes) pairs") from None
        if not isinstance(name, str):
            raise TypeError(f"header name must be str, not {type(name).__name__}")
        result.append((name, _as_bytes(f"header {name!r}", value)))
    return result


def _bad_timestamp(timestamp_ms: object) -> NoReturn:
    """Refuse a ``timestamp_ms`` argument at the call, before anything is buffered (it would not fit the batch)."""
    if type(timestamp_ms) is not int:
        raise OptionTypeError("timestamp_ms must be an int (milliseconds since the epoch) or None")
    raise ConfigurationError(
        f"timestamp_ms {timestamp_ms} is out of range: milliseconds since the epoch, from 0 to 2**63 - 1"
    )
