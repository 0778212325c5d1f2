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
from collections.abc import Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING

from mqwire.common.errors import ClosedError, MqwireError, RetriableError
from mqwire.common.options import check_bool, check_int_range, check_non_negative, check_positive
from mqwire.common.policy import Backoff
from tubemqwire import identity
from tubemqwire.errors import MessageTooLargeError, TopicNoPartitionError
from tubemqwire.names import check_topic, check_topics
from tubemqwire.producer_membership import ProducerMembership
from tubemqwire.protocol.constants import CHECKSUM_NOT_SET
from tubemqwire.protocol.messages import checksum, encode_payload, format_attributes, format_msg_time, parse_msg_time
from tubemqwire.protocol.metadata import PartitionInfo
from tubemqwire.records import Receipt
from tubemqwire.routing import PartitionRouter
from tubemqwire.sender import Outgoing, Sender

if TYPE_CHECKING:
    from tubemqwire.client import Client

log = logging.getLogger(__name__)


def _as_bytes(value: object, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


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
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping, not {type(headers).__name__}")
    result = {}
    for name, value in headers.items():
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, not {type(name).__name__}")
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


class Producer:
    """Publishes to one or more topics; ``async with client.producer("orders") as producer``.

    Options: ``max_in_flight`` (sends outstanding before ``enqueue`` waits, default 1000), ``retries``
    (default 3), ``retry_backoff_ms`` (default 100), ``metadata_timeout_ms`` (how long opening waits for
    the master to place every topic, default 30000), ``checksum`` (compute the CRC here so the broker
    verifies it; default False: the broker computes it, as the Java producer lets it).
    """

    def __init__(
        self,
        client: Client,
        topics: str | list[str] | tuple[str, ...],
        *,
        max_in_flight: int = 1000,
        retries: int = 3,
        retry_backoff_ms: int = 100,
        metadata_timeout_ms: int = 30_000,
        checksum: bool = False,
    ) -> None:
        self._client = client
        self.topics = check_topics(topics)
        self.max_in_flight = check_int_range("max_in_flight", max_in_flight, 1, 1_000_000)
        self.retries = check_int_range("retries", retries, 0, 1000)
        self.retry_backoff = check_non_negative("retry_backoff_ms", retry_backoff_ms) / 1000
        self.metadata_timeout = check_positive("metadata_timeout_ms", metadata_timeout_ms) / 1000
        self._verify = check_bool("checksum", checksum)
        self._router = PartitionRouter()
        self._slots = asyncio.Semaphore(self.max_in_flight)
        self._inflight: set[asyncio.Future[Receipt]] = set()
        self._membership: ProducerMembership | None = None
        self._sender: Sender | None = None
        self._background: set[asyncio.Task[dict[tuple[str, int], MqwireError]]] = set()
        self._client_id = ""
        self._sent_addr = 0
        self._started = False
        self._closed = False

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Register with the master, wait until every topic has partitions, connect to their brokers."""
        if self._closed:
            raise ClosedError("producer is closed")
        if self._started:
            return
        client = self._client
        await client.start()
        self._client_id = identity.producer_id(client.host)
        self._sent_addr = identity.address_id(client.host)
        membership = ProducerMembership(
            client.master,
            client_id=self._client_id,
            host=client.host,
            topics=self.topics,
            credentials=client.credentials(),
            interval=client.heartbeat_interval,
            request_timeout=client.request_timeout,
            default_broker_port=client.default_broker_port,
            on_update=self._metadata_changed,
        )
        self._membership = membership
        await membership.start()
        self._sender = Sender(
            client_id=self._client_id,
            sent_addr=self._sent_addr,
            brokers=client.brokers,
            credentials=membership.credentials,
            partitions=lambda topic: membership.partitions.get(topic, ()),
            router=self._router,
            retries=self.retries,
            retry_backoff=self.retry_backoff,
        )
        self._started = True
        try:
            await self._wait_for_partitions()
        except BaseException:
            await self.close()
            raise
        await client.brokers.connect_all(p.broker.address for parts in membership.partitions.values() for p in parts)

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
        if membership is None or not self._started:
            return
        brokers = self._client.brokers
        addresses = {p.broker.address for parts in membership.partitions.values() for p in parts}
        missing = [address for address in addresses if brokers.ready(address) is None]
        if missing:
            # New brokers are connected ahead of the first message sent to them.
            task = asyncio.get_running_loop().create_task(brokers.connect_all(missing))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def flush(self) -> None:
        """Wait until every message enqueued so far is acknowledged or has failed."""
        pending = list(self._inflight)
        if pending:
            # wait() rather than gather(): cancelling a flush must not cancel the sends.
            await asyncio.wait(pending)

    async def close(self) -> None:
        """Wait for the outstanding sends, then deregister from the master."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.wait_for(self.flush(), self._client.request_timeout * (self.retries + 1))
        except TimeoutError:
            log.warning("TubeMQ producer: closing with %d sends still outstanding", len(self._inflight))
        for future in list(self._inflight):
            future.cancel()
        if self._membership is not None:
            await self._membership.stop(timeout=self._client.request_timeout)
        self._client._release(self)

    @property
    def partitions(self) -> dict[str, tuple[PartitionInfo, ...]]:
        """Where each topic's partitions are, as the master last said."""
        return dict(self._membership.partitions) if self._membership is not None else {}

    # ------------------------------------------------------------------------------------ sending
    async def send(
        self,
        value: bytes,
        key: bytes | str | None = None,
        headers: Mapping[str, bytes | str] | None = None,
        msg_type: str | None = None,
        msg_time: datetime | str | int | None = None,
        *,
        topic: str | None = None,
    ) -> Receipt:
        """Send one message and wait for the broker's acknowledgement."""
        future = await self.enqueue(value, key, headers, msg_type, msg_time, topic=topic)
        return await future

    async def enqueue(
        self,
        value: bytes,
        key: bytes | str | None = None,
        headers: Mapping[str, bytes | str] | None = None,
        msg_type: str | None = None,
        msg_time: datetime | str | int | None = None,
        *,
        topic: str | None = None,
    ) -> asyncio.Future[Receipt]:
        """Start sending one message; returns the future of its receipt.

        ``key`` only picks the partition (TubeMQ stores no key). ``headers`` become the message's
        attributes (text: bytes values must be UTF-8, and neither names nor values may hold ``,`` or
        ``=``); ``msg_type`` is what consumers filter on; ``msg_time`` a datetime, epoch milliseconds or
        ``yyyyMMddHHmm`` (minute precision, local time).
        """
        outgoing = self._prepare(value, key, headers, msg_type, msg_time, topic)
        await self._slots.acquire()
        if self._closed or self._sender is None:
            self._slots.release()
            raise ClosedError("producer is closed")
        future = self._sender.send(outgoing)
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
        if self._closed:
            raise ClosedError("producer is closed")
        if not self._started or self._membership is None:
            raise ClosedError("producer is not started: use 'async with client.producer(...)'")
        if topic is None:
            if len(self.topics) != 1:
                raise ValueError(f"this producer publishes {', '.join(self.topics)}: name the topic")
            name = self.topics[0]
        else:
            name = check_topic(topic)
            if name not in self.topics:
                raise ValueError(f"topic {name!r} is not one this producer publishes ({', '.join(self.topics)})")
        data = _as_bytes(value, "value")
        if not data:
            raise ValueError("value must not be empty: TubeMQ refuses empty messages")
        if key is not None:
            key = key.encode("utf-8") if isinstance(key, str) else _as_bytes(key, "key")
        if msg_type is not None and not isinstance(msg_type, str):
            raise TypeError(f"msg_type must be a str, not {type(msg_type).__name__}")
        msg_type = msg_type.strip() if msg_type is not None else None
        time_text = msg_time_text(msg_time)
        attribute = format_attributes(encode_headers(headers), msg_type=msg_type or None, msg_time=time_text)
        limit = self._membership.max_message_size(name)
        size = len(data) + len(attribute.encode("utf-8"))
        if size > limit:
            raise MessageTooLargeError(
                f"message of {size} bytes (data and attributes) exceeds the {limit} bytes allowed for {name!r}",
                code=445,
            )
        flag, payload = encode_payload(data, attribute)
        crc = checksum(payload) if self._verify else CHECKSUM_NOT_SET
        return Outgoing(name, key, payload, flag, crc, msg_type or None, time_text)
