"""The producer's sender: each message in a request of its own to the broker of the partition it is routed
to, its receipt from the answer, and on a failure a retry can fix, a pause and another partition (a keyed
message keeps its partition).

The path is callbacks, not coroutines: a send is written at once on the broker's open connection and its
answer settles the message's future from the frame callback. Only the first message to a broker not yet
connected goes through a task that opens the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from mqwire.common.errors import MqwireError
from mqwire.common.stats import ProducerCounters
from tubemqwire.auth import Credentials
from tubemqwire.brokers import BrokerConnections
from tubemqwire.connection import TubeConnection
from tubemqwire.errors import error_for_code
from tubemqwire.message import Receipt
from tubemqwire.protocol import broker as proto
from tubemqwire.protocol.constants import Method, ServiceType
from tubemqwire.protocol.frames import TubeFrame
from tubemqwire.protocol.metadata import PartitionInfo
from tubemqwire.routing import PartitionRouter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message ready for the wire, whatever partition it ends up on."""

    topic: str
    key: bytes | None
    payload: bytes
    flag: int
    checksum: int
    msg_type: str | None
    msg_time: str | None


@dataclass(slots=True)
class _Attempt:
    message: Outgoing
    future: asyncio.Future[Receipt]
    number: int
    # Partition keys this message already failed on.
    failed: tuple[str, ...]
    # The loop time of the first attempt, for the send latency.
    started: float = 0.0


class Sender:
    """Sends each message on its own, retrying elsewhere on failures a retry can fix."""

    def __init__(
        self,
        *,
        client_id: str,
        sent_addr: int,
        brokers: BrokerConnections,
        credentials: Credentials,
        partitions: Callable[[str], tuple[PartitionInfo, ...]],
        router: PartitionRouter,
        retries: int,
        retry_backoff: float,
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]],
    ) -> None:
        self._client_id = client_id
        self._sent_addr = sent_addr
        self._brokers = brokers
        self._credentials = credentials
        self._partitions = partitions
        self._router = router
        self._retries = retries
        self._retry_backoff = retry_backoff
        # Runs the connect-then-write tasks as the producer's own, so that none outlives it.
        self._spawn = spawn
        # TubeMQ sends each message in its own request: a message is a batch of one here.
        self.counters = ProducerCounters()
        self._loop = asyncio.get_running_loop()

    def send(self, message: Outgoing) -> asyncio.Future[Receipt]:
        """Start sending ``message``; the future settles with its receipt or error."""
        loop = self._loop
        future: asyncio.Future[Receipt] = loop.create_future()
        self._try(_Attempt(message, future, 0, (), loop.time()))
        return future

    def _try(self, attempt: _Attempt) -> None:
        if attempt.future.done():
            return
        message = attempt.message
        try:
            partition = self._router.choose(
                message.topic, self._partitions(message.topic), message.key, avoid=attempt.failed
            )
        except MqwireError as exc:
            # No partition to send to (e.g. right after a master failover, before the brokers have
            # registered with the new master): retriable, so it takes the same retries as a failed write.
            self._failed(attempt, None, exc)
            return
        connection = self._brokers.ready(partition.broker.address)
        if connection is not None:
            self._write(connection, attempt, partition)
            return
        self._spawn(self._connect_then_write(attempt, partition))

    async def _connect_then_write(self, attempt: _Attempt, partition: PartitionInfo) -> None:
        try:
            connection = await self._brokers.get(partition.broker.address)
        except MqwireError as exc:
            self._failed(attempt, partition, exc)
            return
        self._write(connection, attempt, partition)

    def _write(self, connection: TubeConnection, attempt: _Attempt, partition: PartitionInfo) -> None:
        message = attempt.message
        request = proto.send_message_request(
            self._client_id,
            message.topic,
            partition.partition_id,
            message.payload,
            message.flag,
            self._sent_addr,
            msg_type=message.msg_type,
            msg_time=message.msg_time,
            auth=self._credentials.producer_broker_auth(),
            checksum=message.checksum,
        )
        try:
            reply = connection.start_call(ServiceType.BROKER_WRITE, Method.BROKER_PRODUCER_SEND_MESSAGE, request)
            self.counters.requests += 1
        except MqwireError as exc:
            self._failed(attempt, partition, exc)
            return
        reply.add_done_callback(partial(self._answered, attempt, partition))

    def _answered(self, attempt: _Attempt, partition: PartitionInfo, reply: asyncio.Future[TubeFrame]) -> None:
        future = attempt.future
        if future.done():
            return
        if reply.cancelled():
            future.cancel()
            return
        error = reply.exception()
        if error is None:
            try:
                answer = proto.parse_send_response(TubeConnection.body_of(reply.result()))
            except MqwireError as exc:
                error = exc
            else:
                if answer.success:
                    self.counters.acknowledged(1, len(attempt.message.payload), self._loop.time() - attempt.started)
                    message_id = answer.message_id if answer.message_id is not None else -1
                    future.set_result(
                        Receipt(
                            attempt.message.topic,
                            partition.partition_id,
                            partition.broker.broker_id,
                            message_id,
                            answer.append_time,
                            answer.append_offset,
                        )
                    )
                    return
                error = error_for_code(answer.err_code, answer.err_msg)
        if isinstance(error, MqwireError):
            self._failed(attempt, partition, error)
        else:
            future.set_exception(error)

    def _failed(self, attempt: _Attempt, partition: PartitionInfo | None, error: MqwireError) -> None:
        if attempt.future.done():
            return
        counters = self.counters
        counters.error(error)
        if not error.retriable or attempt.number >= self._retries:
            counters.records_failed += 1
            attempt.future.set_exception(error)
            return
        counters.retries += 1
        failed = attempt.failed
        if partition is not None:
            self._router.penalize(partition)
            failed = (*failed, partition.key)
        where = partition.key if partition is not None else attempt.message.topic
        log.debug("TubeMQ send to %s failed (%s); retrying", where, error)
        retry = _Attempt(attempt.message, attempt.future, attempt.number + 1, failed, attempt.started)
        asyncio.get_running_loop().call_later(self._retry_backoff * retry.number, self._try, retry)
