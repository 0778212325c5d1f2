"""The TubeMQ consumer, balanced by the master (the reference client's pull consumer).

The master assigns partitions through rebalance instructions carried by heartbeat answers; the consumer
claims them at their brokers, fetches batch after batch, and confirms each batch once the application
has acknowledged all its messages (``await consumer.ack(message)``). Unacknowledged batches are given back
after ``confirm_timeout_ms`` and served again, to this consumer or another member of the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

from mqwire.common.errors import ClosedError, MqwireError
from mqwire.common.options import check_choice, check_positive
from tubemqwire import identity
from tubemqwire.assignment import Assignment
from tubemqwire.consumer_membership import ConsumerMembership
from tubemqwire.fetcher import Batch, FetchSettings
from tubemqwire.master import Membership
from tubemqwire.names import check_group, check_msg_types, check_topics
from tubemqwire.protocol.consumer import RebalanceEvent
from tubemqwire.records import Message

if TYPE_CHECKING:
    from tubemqwire.client import Client

log = logging.getLogger(__name__)

START_POSITIONS = ("earliest", "latest")


def _msg_type_filters(msg_types: object, topics: Sequence[str]) -> dict[str, frozenset[str]]:
    """``msg_types`` for every topic, or a mapping of topic to types (topics left out are not filtered)."""
    if isinstance(msg_types, Mapping):
        filters = {}
        for topic, types in msg_types.items():
            if topic not in topics:
                raise ValueError(f"option msg_types names topic {topic!r}, which is not consumed")
            filters[topic] = check_msg_types(types, f"msg_types[{topic!r}]")
        return {topic: types for topic, types in filters.items() if types}
    types = check_msg_types(msg_types)
    return {topic: types for topic in topics} if types else {}


class Consumer:
    """Consumes ``topics`` as a member of ``group``; ``async with client.consumer(...) as consumer``.

    Options: ``group`` (required), ``start`` ("earliest" or "latest", default "latest": where a group
    without a stored position begins), ``msg_types`` (consume only messages of these types: a str, an
    iterable, or a mapping of topic to types), ``confirm_timeout_ms`` (default 60000),
    ``msg_not_found_wait_ms`` (pause after an empty fetch, default 400), ``rebalance_confirm_wait_ms``
    (how long a partition being taken away waits for its batch to be acknowledged, default 3000).
    """

    def __init__(
        self,
        client: Client,
        topics: str | list[str] | tuple[str, ...],
        *,
        group: str,
        start: str = "latest",
        msg_types: str | Iterable[str] | Mapping[str, Iterable[str]] | None = None,
        confirm_timeout_ms: int = 60_000,
        msg_not_found_wait_ms: int = 400,
        rebalance_confirm_wait_ms: int = 3_000,
    ) -> None:
        self._client = client
        self.topics = check_topics(topics)
        self.group = check_group(group)
        self.start_position = check_choice("start", start, START_POSITIONS)
        self.msg_types = _msg_type_filters(msg_types, self.topics)
        self.confirm_timeout = check_positive("confirm_timeout_ms", confirm_timeout_ms) / 1000
        self.no_data_wait = check_positive("msg_not_found_wait_ms", msg_not_found_wait_ms) / 1000
        self.rebalance_wait = check_positive("rebalance_confirm_wait_ms", rebalance_confirm_wait_ms) / 1000
        # Fetched messages in order; ``_arrived`` wakes a waiting reader for new messages or a changed state
        # (closed or failed). A batch goes in at once: the per-message path stays a deque pop.
        self._ready: deque[Message] = deque()
        self._arrived = asyncio.Event()
        self._events: asyncio.Queue[RebalanceEvent] = asyncio.Queue()
        self._settings: FetchSettings | None = None
        self._assignment: Assignment | None = None
        self._membership: Membership | None = None
        self._rebalancer: asyncio.Task[None] | None = None
        self._rebalancing = False
        self._failure: MqwireError | None = None
        self._started = False
        self._closed = False
        self.client_id = ""

    # ---------------------------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Register with the master; partitions follow as the master balances the group."""
        if self._closed:
            raise ClosedError("consumer is closed")
        if self._started:
            return
        client = self._client
        await client.start()
        self.client_id = identity.consumer_id(self.group, client.host)
        credentials = client.credentials()
        settings = FetchSettings(
            client_id=self.client_id,
            group=self.group,
            brokers=client.brokers,
            credentials=credentials,
            request_timeout=client.request_timeout,
            no_data_wait=self.no_data_wait,
            confirm_timeout=self.confirm_timeout,
        )
        self._settings = settings
        assignment = Assignment(
            settings,
            start=self.start_position,
            msg_types=self.msg_types,
            deliver=self._deliver,
            on_change=self._assignment_changed,
            heartbeat_interval=client.heartbeat_interval,
            release_wait=self.rebalance_wait,
        )
        self._assignment = assignment
        await self._join(assignment)
        assignment.start()
        self._started = True

    async def _join(self, assignment: Assignment) -> None:
        """Register with the master and follow its rebalance instructions."""
        client = self._client
        membership = ConsumerMembership(
            client.master,
            client_id=self.client_id,
            group=self.group,
            host=client.host,
            topics=self.topics,
            filters=self.msg_types,
            credentials=assignment.settings.credentials,
            interval=client.heartbeat_interval,
            request_timeout=client.request_timeout,
            subscriptions=assignment.subscriptions,
            on_event=self._events.put_nowait,
            on_failure=self._fail,
            default_broker_port=client.default_broker_port,
        )
        self._membership = membership
        await membership.start()
        self._rebalancer = asyncio.get_running_loop().create_task(
            self._rebalance(assignment, membership), name="tubemq rebalance"
        )

    async def close(self) -> None:
        """Release the partitions (unacknowledged batches go back to the group) and leave the group."""
        if self._closed:
            return
        self._closed = True
        self._arrived.set()
        task, self._rebalancer = self._rebalancer, None
        if task is not None:
            if self._rebalancing:
                # A claim cut short would leave the broker holding a partition for us that we never release.
                await asyncio.wait({task}, timeout=self._client.request_timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._assignment is not None:
            await self._assignment.stop()
            await self._assignment.release_all(wait=0)
        if self._membership is not None:
            await self._membership.stop(timeout=self._client.request_timeout)
        self._client._release(self)

    @property
    def assignment(self) -> frozenset[str]:
        """Keys (``brokerId:topic:partitionId``) of the partitions this consumer holds now."""
        return self._assignment.partition_keys if self._assignment is not None else frozenset()

    # ----------------------------------------------------------------------------------- internals
    async def _rebalance(self, assignment: Assignment, membership: ConsumerMembership) -> None:
        while not self._closed:
            event = await self._events.get()
            self._rebalancing = True
            try:
                outcome = await assignment.handle(event)
            finally:
                self._rebalancing = False
            membership.report(outcome)

    def _assignment_changed(self) -> None:
        # The master learns what we hold from our heartbeats: tell it soon.
        if self._membership is not None:
            self._membership.wake()

    def _deliver(self, messages: Sequence[Message]) -> None:
        self._ready.extend(messages)
        self._arrived.set()

    def _fail(self, error: MqwireError) -> None:
        self._failure = error
        self._arrived.set()

    # ------------------------------------------------------------------------------------- reading
    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.getone()
        except ClosedError:
            if self._closed:
                raise StopAsyncIteration from None
            raise

    async def getone(self, timeout: float | None = None) -> Message:
        """The next message; TimeoutError after ``timeout`` seconds, ClosedError once closed."""
        if not self._started and not self._closed:
            raise ClosedError("consumer is not started: use 'async with client.consumer(...)'")
        message = self._take()
        if message is not None:
            return message  # the common case: no timer, no wait
        async with asyncio.timeout(timeout):
            while True:
                message = self._take()
                if message is not None:
                    return message
                self._arrived.clear()
                await self._arrived.wait()

    def _take(self) -> Message | None:
        """The next message still valid (its batch not given back), or None; raises once failed or closed."""
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise ClosedError("consumer is closed")
        ready = self._ready
        while ready:
            message = ready.popleft()
            batch = message.batch
            if isinstance(batch, Batch) and batch.valid:
                return message
        return None

    async def ack(self, message: Message) -> None:
        """Acknowledge ``message``; the last acknowledgement of a fetched batch confirms it to the broker.

        Acknowledging a message twice, or one whose batch was already given back, does nothing.
        """
        if not isinstance(message, Message):
            raise TypeError(f"ack takes a Message, not {type(message).__name__}")
        batch = message.batch
        if not isinstance(batch, Batch) or batch.owner is not self._settings:
            raise ValueError("this message was not received by this consumer")
        if self._closed:
            raise ClosedError("consumer is closed")
        await batch.ack(message.index)
