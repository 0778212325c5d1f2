"""One claimed partition: register with its broker, fetch batches, confirm them, release the partition.

TubeMQ confirms per batch, not per message: a GetMessage answer is one batch, and the broker serves the
partition's next batch only after this one is confirmed (CommitOffset with ``lastPackConsumed``) or given
back. So a fetcher holds at most one batch at a time; the batch is confirmed when the application has
acknowledged every message of it, and given back (to be served again) when that does not happen within
``confirm_timeout``. This bounds memory by one batch per partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mqwire.common.errors import FatalError, MqwireError, ProtocolError, RetriableError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.policy import Backoff
from mqwire.common.stats import ConsumerCounters
from tubemqwire.auth import Credentials
from tubemqwire.brokers import BrokerConnections
from tubemqwire.errors import error_for_code
from tubemqwire.keys import KEY_ATTRIBUTE, decode_key
from tubemqwire.message import Message
from tubemqwire.protocol import broker as proto
from tubemqwire.protocol.broker_service_pb2 import TransferedMessage
from tubemqwire.protocol.constants import FLAG_HAS_ATTRIBUTE, ErrorCode, Method, ServiceType
from tubemqwire.protocol.messages import decode_message, parse_msg_time, verify_checksum
from tubemqwire.protocol.metadata import PartitionInfo

log = logging.getLogger(__name__)

# Pauses after a failed fetch, by errCode, as the reference client makes them (seconds).
_ERROR_PAUSE: dict[int, float] = {
    ErrorCode.FORBIDDEN: 2.0,
    ErrorCode.SERVICE_UNAVAILABLE: 0.3,
    ErrorCode.MOVED: 0.2,
}
_DEFAULT_ERROR_PAUSE = 0.3
# Codes that say the broker no longer counts the partition as ours.
_LOST = frozenset({ErrorCode.HB_NO_NODE, ErrorCode.CERTIFICATE_FAILURE, ErrorCode.DUPLICATE_PARTITION})


# The size of one message's entry in a TubeMQ broker's index file, the unit of its offsets. The partitions
# of one topic store share that index, so an offset difference counts the store's messages.
INDEX_ENTRY_SIZE = 28


@dataclass(frozen=True, slots=True)
class FetchSettings:
    client_id: str
    group: str
    brokers: BrokerConnections
    credentials: Credentials
    request_timeout: float
    # Wait after an empty fetch (errCode 404), seconds.
    no_data_wait: float
    # How long a delivered batch may stay unacknowledged before it is given back, seconds.
    confirm_timeout: float
    # The consumer's statistics: GetMessage requests and fetch errors are counted here.
    counters: ConsumerCounters = field(default_factory=ConsumerCounters)


class Batch:
    """The messages of one fetch; confirmed once each of them is acknowledged."""

    __slots__ = ("_acked", "_fetcher", "finished", "size", "valid")

    def __init__(self, fetcher: PartitionFetcher, size: int) -> None:
        self._fetcher = fetcher
        self.size = size
        self._acked: set[int] = set()
        self.finished = asyncio.Event()
        # False once the batch was given back or its partition released: its messages are stale.
        self.valid = True

    @property
    def owner(self) -> FetchSettings:
        """The settings of the consumer that fetched the batch (identifies it)."""
        return self._fetcher.settings

    @property
    def complete(self) -> bool:
        return len(self._acked) >= self.size

    async def ack(self, index: int) -> None:
        if not self.valid or index in self._acked:
            return
        self._acked.add(index)
        if self.complete:
            await self._fetcher.confirm(self)


def to_message(topic: str, partition: PartitionInfo, raw: TransferedMessage, batch: Batch, index: int) -> Message:
    """A fetched message for the application; ChecksumError or ProtocolError when it is corrupt."""
    payload = raw.payLoadData
    if not raw.flag & FLAG_HAS_ATTRIBUTE:
        # No attribute (no headers, type or time): the common case of plain data, built directly.
        verify_checksum(payload, raw.checkSum)
        return Message(
            topic, partition.partition_id, partition.broker.broker_id, payload, {}, raw.messageId,
            None, None, None, None, batch, index,
        )
    decoded = decode_message(raw)
    headers = decoded.attributes
    key = None
    key_text = headers.pop(KEY_ATTRIBUTE, None)
    if key_text is not None:
        key = decode_key(key_text)
        if key is None:
            # Not one a tubemqwire producer wrote: it stays an ordinary header.
            headers[KEY_ATTRIBUTE] = key_text
    timestamp = None
    if decoded.msg_time:
        with contextlib.suppress(ValueError, OverflowError, OSError):
            timestamp = int(parse_msg_time(decoded.msg_time).timestamp() * 1000)
    return Message(
        topic=topic,
        partition=partition.partition_id,
        broker_id=partition.broker.broker_id,
        value=decoded.data,
        headers={name: value.encode("utf-8") for name, value in headers.items()},
        message_id=decoded.message_id,
        msg_type=decoded.msg_type,
        msg_time=decoded.msg_time,
        timestamp=timestamp,
        key=key,
        batch=batch,
        index=index,
    )


class PartitionFetcher:
    def __init__(
        self,
        settings: FetchSettings,
        partition: PartitionInfo,
        msg_types: frozenset[str],
        deliver: Callable[[Sequence[Message]], None],
        on_lost: Callable[[PartitionFetcher, MqwireError], None],
    ) -> None:
        self.settings = settings
        self.partition = partition
        self.msg_types = msg_types
        self._deliver = deliver
        self._on_lost = on_lost
        self._tasks = OwnedTasks(f"TubeMQ fetch {self.key}")
        self._task: asyncio.Task[None] | None = None
        self._batch: Batch | None = None
        # Whether the broker may count the last batch served as consumed (on the next fetch or release).
        self._last_consumed = False
        self._stopping = False
        self._in_fetch = False
        # The group's read position in the partition and the partition's end, as the broker last said
        # (byte offsets in the broker's index: INDEX_ENTRY_SIZE bytes per message); None until known.
        self.position: int | None = None
        self.end: int | None = None
        # The last fetch found nothing more to read (until more is written).
        self.caught_up = False
        # Cleared while the application has the partition paused: it stays claimed, nothing is fetched.
        self._resumed = asyncio.Event()
        self._resumed.set()

    @property
    def paused(self) -> bool:
        """Whether fetching is held back (``pause``); the partition stays claimed at its broker."""
        return not self._resumed.is_set()

    def pause(self) -> None:
        """Fetch nothing more until ``resume``; a batch already delivered is still served and confirmed."""
        self._resumed.clear()

    def resume(self) -> None:
        """Fetch again after ``pause``."""
        self._resumed.set()

    @property
    def key(self) -> str:
        return self.partition.key

    def __repr__(self) -> str:
        return f"PartitionFetcher({self.partition})"

    # ------------------------------------------------------------------------------------- claiming
    async def register(self, *, read_status: int, offset: int | None = None) -> proto.OffsetAnswer:
        """Claim the partition (opType 31), from ``offset`` when given (the broker keeps it within the
        partition's bounds). The answer says whether the broker agreed, and where reading starts."""
        s = self.settings
        request = proto.register_request(
            s.client_id,
            s.group,
            self.partition.topic,
            self.partition.partition_id,
            read_status=read_status,
            filters=self.msg_types,
            auth=s.credentials.consumer_broker_auth(sign=True),
            offset=offset,
        )
        data = await s.brokers.call(
            self.partition.broker.address, ServiceType.BROKER_READ, Method.BROKER_CONSUMER_REGISTER, request
        )
        answer = proto.parse_register_response(data)
        if answer.success:
            self._note_offsets(answer.curr_offset, answer.max_offset)
        return answer

    def start(self) -> None:
        self._task = self._tasks.spawn(self._run(), name="fetch loop")

    async def stop(self, *, wait: float, release: bool = True) -> None:
        """Stop fetching; wait up to ``wait`` seconds for an outstanding batch to be acknowledged, then
        release the partition (opType 32) unless ``release`` is false (the broker dropped it already)."""
        self._stopping = True
        batch = self._batch
        if batch is not None and batch.valid and wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(batch.finished.wait(), wait)
        task, self._task = self._task, None
        if task is not None:
            if self._in_fetch:
                # Let a fetch on the wire finish rather than leave its answer unclaimed; the loop ends
                # after it, and a batch it brings is given back below.
                await asyncio.wait({task}, timeout=self.settings.request_timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        batch = self._batch
        if batch is not None and not batch.finished.is_set():
            batch.valid = False
            self._last_consumed = False
        self._batch = None
        if release:
            await self._unregister()

    def abandon(self) -> None:
        """Forget the partition without telling the broker, which no longer counts it as ours."""
        self._stopping = True
        if self._batch is not None:
            self._batch.valid = False
            self._batch = None
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _unregister(self) -> None:
        s = self.settings
        request = proto.unregister_request(
            s.client_id,
            s.group,
            self.partition.topic,
            self.partition.partition_id,
            last_pack_consumed=self._last_consumed,
            auth=s.credentials.consumer_broker_auth(sign=True),
        )
        try:
            data = await s.brokers.call(
                self.partition.broker.address, ServiceType.BROKER_READ, Method.BROKER_CONSUMER_REGISTER, request
            )
            answer = proto.parse_register_response(data)
            if not answer.success:
                log.info("releasing %s: broker answered %d %s", self.key, answer.err_code, answer.err_msg)
        except MqwireError as exc:
            # The broker frees the partition by itself once our heartbeats stop.
            log.info("releasing %s failed: %s", self.key, exc)

    # --------------------------------------------------------------------------------------- fetching
    async def _run(self) -> None:
        backoff = Backoff(initial=0.3, maximum=5.0)
        while not self._stopping:
            if not self._resumed.is_set():
                await self._resumed.wait()
                continue
            try:
                pause = await self._fetch()
                backoff.reset()
            except RetriableError as exc:
                log.debug("fetch from %s failed: %s", self.key, exc)
                self.settings.counters.error(exc)
                self._last_consumed = False
                pause = backoff.next_delay()
            except FatalError as exc:
                log.warning("fetch from %s failed: %s", self.key, exc)
                self.settings.counters.error(exc)
                self._last_consumed = False
                pause = backoff.next_delay()
            if pause is None:
                return
            batch = self._batch
            if batch is not None:
                try:
                    await asyncio.wait_for(batch.finished.wait(), self.settings.confirm_timeout)
                except TimeoutError:
                    log.warning(
                        "batch from %s not acknowledged within %.0f s: it will be delivered again",
                        self.key,
                        self.settings.confirm_timeout,
                    )
                    batch.valid = False
                    self._last_consumed = False
                self._batch = None
            elif pause > 0:
                await asyncio.sleep(pause)

    async def _fetch(self) -> float | None:
        """One GetMessage. Returns the pause before the next one, or None when the partition is lost."""
        s = self.settings
        request = proto.get_message_request(
            s.client_id,
            s.group,
            self.partition.topic,
            self.partition.partition_id,
            last_pack_consumed=self._last_consumed,
        )
        # Until the answer is in, the broker may have served a batch we never see: it must not count as
        # consumed if we are stopped meanwhile.
        self._last_consumed = False
        self._in_fetch = True
        s.counters.requests += 1
        try:
            data = await s.brokers.call(
                self.partition.broker.address, ServiceType.BROKER_READ, Method.BROKER_CONSUMER_GET_MESSAGE, request
            )
        finally:
            self._in_fetch = False
        if self._stopping:
            return None
        answer = proto.parse_get_message_response(data)
        code = answer.err_code
        if code == ErrorCode.SUCCESS:
            # The answer's offset is where this batch starts; the commit tells where it ends.
            self._note_offsets(answer.curr_offset, answer.max_offset)
            self.caught_up = False
            return self._accept(answer.messages)
        self._last_consumed = False
        if code == ErrorCode.NOT_FOUND:
            self._note_offsets(answer.curr_offset, answer.max_offset)
            self.caught_up = True
            return s.no_data_wait
        if code in _LOST:
            self._on_lost(self, error_for_code(code, answer.err_msg))
            return None
        if code == ErrorCode.SERVER_CONSUME_SPEED_LIMIT:
            return answer.min_limit_time / 1000 if answer.min_limit_time > 0 else s.no_data_wait
        log.debug("fetch from %s: %d %s", self.key, code, answer.err_msg)
        return _ERROR_PAUSE.get(code, _DEFAULT_ERROR_PAUSE)

    def _note_offsets(self, position: int | None, end: int | None) -> None:
        if position is not None and position >= 0:
            self.position = position
        if end is not None and end >= 0:
            self.end = end

    def _accept(self, raw: Sequence[TransferedMessage]) -> float:
        if not raw:
            # Everything read was filtered out by the broker; the next fetch confirms it.
            self._last_consumed = True
            return 0.0
        batch = Batch(self, 0)
        messages: list[Message] = []
        for item in raw:
            try:
                message = to_message(self.partition.topic, self.partition, item, batch, len(messages))
            except ProtocolError as exc:
                # As the reference client does: a corrupt message is skipped, not delivered.
                log.warning("skipping message %d of %s: %s", item.messageId, self.key, exc)
                continue
            # The broker filters by the hash of the type; hashes collide, so the type is checked here too.
            if self.msg_types and message.msg_type not in self.msg_types:
                continue
            messages.append(message)
        if not messages:
            # Nothing for the application: the next fetch confirms this batch.
            self._last_consumed = True
            return 0.0
        batch.size = len(messages)
        self._batch = batch
        self._deliver(messages)
        return 0.0

    async def confirm(self, batch: Batch) -> None:
        """Commit ``batch`` (every message acknowledged); on failure the broker serves it again."""
        s = self.settings
        try:
            if not batch.valid or batch is not self._batch:
                return
            request = proto.commit_request(
                s.client_id, s.group, self.partition.topic, self.partition.partition_id, last_pack_consumed=True
            )
            data = await s.brokers.call(
                self.partition.broker.address, ServiceType.BROKER_READ, Method.BROKER_CONSUMER_COMMIT, request
            )
            answer = proto.parse_commit_response(data)
            if answer.success:
                self._last_consumed = True
                self._note_offsets(answer.curr_offset, answer.max_offset)
            else:
                log.warning("confirming a batch of %s failed: %d %s", self.key, answer.err_code, answer.err_msg)
                self._last_consumed = False
        except MqwireError as exc:
            log.warning("confirming a batch of %s failed: %s", self.key, exc)
            self._last_consumed = False
        finally:
            batch.finished.set()
