"""The TubeMQ producer: registration with the master, partition routing, pipelined sends, receipts.

Every message is one SendMessage RPC (TubeMQ has no batches on the wire); throughput comes from keeping
many in flight: ``enqueue`` starts a send and returns its future at once, waiting only while
``max_in_flight`` sends are outstanding. A send that fails in a way a retry can fix goes to another
partition (a keyed message stays on its key's partition) after a short pause, ``retries`` times at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mqwire.common.errors import ClosedError, RequestTimeoutError, RetriableError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.policy import Backoff
from mqwire.common.serde import to_bytes
from mqwire.common.stats import ProducerCounters, ProducerStats
from tubemqwire import identity
from tubemqwire.errors import MessageTooLargeError, TopicNoPartitionError
from tubemqwire.keys import KEY_ATTRIBUTE, encode_key
from tubemqwire.message import Receipt
from tubemqwire.names import check_topic, check_topics
from tubemqwire.options import ProducerConfig
from tubemqwire.producer_membership import ProducerMembership
from tubemqwire.protocol.constants import CHECKSUM_NOT_SET
from tubemqwire.protocol.messages import checksum, encode_payload, format_attributes, format_msg_time, parse_msg_time
from tubemqwire.protocol.metadata import PartitionInfo
from tubemqwire.routing import PartitionRouter
from tubemqwire.sender import Outgoing, Sender
from tubemqwire.session import Session

log = logging.getLogger(__name__)


def _header_text(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"header {name!r}: TubeMQ attributes are text; the value is not UTF-8") from None
    raise TypeError(f"header {name!r} must be bytes or str, not {type(value).__name__}")


def encode_headers(headers: Mapping[str, bytes | str] | None) -> dict[str, str]:
    """Headers as the attribute's text pairs (values UTF-8); the key's attribute name is reserved."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping, not {type(headers).__name__}")
    result = {}
    for name, value in headers.items():
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, not {type(name).__name__}")
        if name == KEY_ATTRIBUTE:
            raise ValueError(f"header {name!r} is reserved for the message key: pass key=")
        result[name] = _header_text(name, value)
    return result


def msg_time_text(msg_time: datetime | str | int | None) -> str | None:
    """``yyyyMMddHHmm`` in local time of a datetime (naive ones are taken as local), of milliseconds
    since the epoch, or of such a string (checked)."""
    if msg_time is None:
        return None
    if isinstance(msg_time, str):
        parse_msg_time(msg_time)
        return msg_time
    if isinstance(msg_time, datetime):
        moment = msg_time.astimezone() if msg_time.tzinfo else msg_time
    elif isinstance(msg_time, int) and not isinstance(msg_time, bool):
        try:
            moment = datetime.fromtimestamp(msg_time / 1000)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"msg_time {msg_time} is not a time in milliseconds since the epoch") from None
    else:
        raise TypeError(
            f"msg_time must be a datetime, milliseconds or a yyyyMMddHHmm str, not {type(msg_time).__name__}"
        )
    text = format_msg_time(moment)
    parse_msg_time(text)  # years before 1000 do not fit the format
    return text


class Producer(AsyncResource):
    """Publishes to one or more topics; ``async with client.producer("orders") as producer``.

    Made by :meth:`tubemqwire.Client.producer`, which describes the options. ``topics`` (sorted, without
    duplicates), ``max_in_flight`` and ``retries`` are readable attributes.

    TubeMQ has no message keys: a key is carried in the attribute ``mqwire.key`` (read back as
    ``message.key`` by tubemqwire consumers, see :mod:`tubemqwire.keys`) and picks the partition.
    """

    def __init__(self, session: Session, topics: str | Sequence[str], config: ProducerConfig) -> None:
        self._session = session
        self.topics = check_topics(topics)
        self._key_serializer = config.key_serializer
        self._value_serializer = config.value_serializer
        self.max_in_flight = config.max_in_flight
        self.retries = config.retries
        self.retry_backoff = config.retry_backoff
        self.metadata_timeout = config.metadata_timeout
        self._verify = config.checksum
        self._router = PartitionRouter()
        self._slots = asyncio.Semaphore(self.max_in_flight)
        self._inflight: set[asyncio.Future[Receipt]] = set()
        self._membership: ProducerMembership | None = None
        self._sender: Sender | None = None
        self._lifecycle = Lifecycle("TubeMQ producer")
        self._affinity = session.affinity
        self._client_id = ""
        self._sent_addr = 0

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Register with the master, wait until every topic has partitions, connect to their brokers."""
        self._affinity.check()
        await self._lifecycle.start(self._start)

    async def _start(self) -> None:
        session = self._session
        await session.start()
        self._client_id = identity.producer_id(session.host)
        self._sent_addr = identity.address_id(session.host)
        member = session.member(self._client_id, self.topics, session.credentials())
        membership = ProducerMembership(session.master, member, on_update=self._metadata_changed)
        self._membership = membership
        await membership.start()
        try:
            await self._wait_for_partitions()
        except BaseException:
            await membership.stop(timeout=session.request_timeout)
            raise
        self._sender = Sender(
            client_id=self._client_id,
            sent_addr=self._sent_addr,
            brokers=session.brokers,
            credentials=membership.credentials,
            partitions=lambda topic: membership.partitions.get(topic, ()),
            router=self._router,
            retries=self.retries,
            retry_backoff=self.retry_backoff,
            spawn=self._lifecycle.tasks.spawn,
        )
        await session.brokers.connect_all(p.broker.address for parts in membership.partitions.values() for p in parts)

    async def _wait_for_partitions(self) -> None:
        membership = self._membership
        assert membership is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.metadata_timeout
        backoff = Backoff(initial=0.5, maximum=3.0)
        while True:
            missing = [topic for topic in self.topics if not membership.partitions.get(topic)]
            if not missing:
                return
            if loop.time() >= deadline:
                raise TopicNoPartitionError(
                    f"the master places no partition of {', '.join(missing)} on a broker: "
                    "is the topic deployed and accepting messages?",
                    code=444,
                )
            await asyncio.sleep(min(backoff.next_delay(), max(0.0, deadline - loop.time())))
            with contextlib.suppress(RetriableError):
                await membership.heartbeat()

    def _metadata_changed(self) -> None:
        membership = self._membership
        if membership is None or self._sender is None or self._lifecycle.closed:
            return
        brokers = self._session.brokers
        addresses = {p.broker.address for parts in membership.partitions.values() for p in parts}
        missing = [address for address in addresses if brokers.ready(address) is None]
        if missing:
            # New brokers are connected ahead of the first message sent to them.
            self._lifecycle.tasks.spawn(brokers.connect_all(missing), name="connect brokers")

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every message enqueued so far is acknowledged or has failed; raises RequestTimeoutError
        (a TimeoutError) if ``timeout`` seconds pass first (the sends still outstanding go on; their futures
        settle later)."""
        self._affinity.check()
        pending = list(self._inflight)
        if pending:
            # wait() rather than gather(): cancelling a flush must not cancel the sends.
            _, late = await asyncio.wait(pending, timeout=timeout)
            if late:
                raise RequestTimeoutError(f"flush: {len(late)} sends not acknowledged within {timeout} s")

    async def close(self) -> None:
        """Wait for the outstanding sends, then deregister from the master. In a process forked after the
        client was made it does nothing (the sends and the registration are the parent's)."""
        if not self._affinity.may_close():
            return
        await self._lifecycle.close(self._close)

    async def _close(self) -> None:
        session = self._session
        pending = list(self._inflight)
        if pending:
            _, late = await asyncio.wait(pending, timeout=session.request_timeout * (self.retries + 1))
            if late:
                log.warning("TubeMQ producer: closing with %d sends still outstanding", len(late))
        for future in list(self._inflight):
            future.cancel()
        if self._membership is not None:
            await self._membership.stop(timeout=session.request_timeout)
        session.release(self)

    @property
    def partitions(self) -> dict[str, tuple[PartitionInfo, ...]]:
        """Where each topic's partitions are, as the master last said."""
        return dict(self._membership.partitions) if self._membership is not None else {}

    def stats(self) -> ProducerStats:
        """Messages and payload bytes acknowledged, send requests, retries, errors, sends outstanding and send
        latency. TubeMQ sends each message in its own request, so ``batches_sent`` equals ``records_sent`` and
        the messages outstanding are in flight rather than buffered (``buffered_bytes`` stays 0)."""
        counters = self._sender.counters if self._sender is not None else ProducerCounters()
        topic = self.topics[0] if len(self.topics) == 1 else None
        outstanding = len(self._inflight)
        return counters.snapshot(
            "tubemq", topic, in_flight=outstanding, buffered_records=outstanding, buffered_bytes=0
        )

    # ------------------------------------------------------------------------------------ sending
    async def send(
        self,
        value: Any,
        /,
        *,
        key: Any = None,
        headers: Mapping[str, bytes | str] | None = None,
        msg_type: str | None = None,
        msg_time: datetime | str | int | None = None,
        topic: str | None = None,
    ) -> Receipt:
        """Send one message and wait for the broker's acknowledgement (see ``enqueue``)."""
        future = await self.enqueue(value, key=key, headers=headers, msg_type=msg_type, msg_time=msg_time, topic=topic)
        return await future

    async def enqueue(
        self,
        value: Any,
        /,
        *,
        key: Any = None,
        headers: Mapping[str, bytes | str] | None = None,
        msg_type: str | None = None,
        msg_time: datetime | str | int | None = None,
        topic: str | None = None,
    ) -> asyncio.Future[Receipt]:
        """Start sending one message; returns the future of its receipt.

        ``value`` and ``key`` are bytes unless the producer has serializers. ``key`` picks the partition
        and travels in the attribute ``mqwire.key`` (TubeMQ itself stores no key). ``headers`` become the
        message's attributes (text: bytes values must be UTF-8, and neither names nor values may hold
        ``,`` or ``=``); ``msg_type`` is what consumers filter on; ``msg_time`` a datetime, epoch
        milliseconds or ``yyyyMMddHHmm`` (minute precision, local time). ``topic`` names one of the
        producer's topics when it has several.
        """
        self._affinity.check()
        outgoing = self._prepare(value, key, headers, msg_type, msg_time, topic)
        await self._slots.acquire()
        sender = self._sender
        if self._lifecycle.closed or sender is None:
            self._slots.release()
            raise ClosedError("producer is closed")
        future = sender.send(outgoing)
        self._inflight.add(future)
        future.add_done_callback(self._sent)
        return future

    def _sent(self, future: asyncio.Future[Receipt]) -> None:
        self._inflight.discard(future)
        self._slots.release()

    def _prepare(
        self,
        value: object,
        key: object,
        headers: Mapping[str, bytes | str] | None,
        msg_type: object,
        msg_time: datetime | str | int | None,
        topic: object,
    ) -> Outgoing:
        self._lifecycle.check_open()
        if self._sender is None or self._membership is None:
            raise ClosedError("producer is not started: use 'async with client.producer(...)'")
        if topic is None:
            if len(self.topics) != 1:
                raise ValueError(f"this producer publishes {', '.join(self.topics)}: name the topic")
            name = self.topics[0]
        else:
            name = check_topic(topic)
            if name not in self.topics:
                raise ValueError(f"topic {name!r} is not one this producer publishes ({', '.join(self.topics)})")
        # The common case (bytes, no serializer) is checked inline: no call on the hot path.
        data: bytes | None
        if type(value) is bytes and self._value_serializer is None:
            data = value
        else:
            data = to_bytes(value, self._value_serializer, "value")
        if not data:
            raise ValueError("value must not be empty: TubeMQ refuses empty messages")
        pairs = encode_headers(headers) if headers else {}
        key_bytes = None
        if key is not None or self._key_serializer is not None:
            key_bytes = to_bytes(key, self._key_serializer, "key")
            if key_bytes is not None:
                pairs[KEY_ATTRIBUTE] = encode_key(key_bytes)
        if msg_type is not None and not isinstance(msg_type, str):
            raise TypeError(f"msg_type must be a str, not {type(msg_type).__name__}")
        msg_type = msg_type.strip() if msg_type is not None else None
        time_text = msg_time_text(msg_time)
        attribute = format_attributes(pairs, msg_type=msg_type or None, msg_time=time_text)
        limit = self._membership.max_message_size(name)
        size = len(data) + len(attribute.encode("utf-8"))
        if size > limit:
            raise MessageTooLargeError(
                f"message of {size} bytes (data and attributes) exceeds the {limit} bytes allowed for {name!r}",
                code=445,
            )
        flag, payload = encode_payload(data, attribute)
        crc = checksum(payload) if self._verify else CHECKSUM_NOT_SET
        return Outgoing(name, key_bytes, payload, flag, crc, msg_type or None, time_text)
