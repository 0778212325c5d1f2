"""Keeping one producer or consumer attached to the broker that serves its topic.

The first attachment happens when the application creates the producer or consumer: retriable errors are
retried within ``operation_timeout`` and anything else is raised to the application. After that, a lost
connection, a broker-initiated close or a protocol hiccup schedules a reattachment in the background: look
the topic up again, connect, and let the subclass re-create its producer or subscription. Retriable
failures wait a growing backoff and try again for as long as the handler is open; a fatal one ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable

from mqwire.common.errors import MqwireError, RetriableError
from mqwire.common.lifecycle import OwnedTasks
from pulsarwire.connection import PulsarConnection
from pulsarwire.protocol.frames import Frame
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand
from pulsarwire.session import Session

log = logging.getLogger(__name__)
# How long before a pending send's timeout the last reconnection attempt is made.
RECONNECT_MARGIN = 0.1


class TopicHandler(ABC):
    """Base of the per-topic producer and consumer: the connection they use and its replacement."""

    def __init__(self, session: Session, topic: str, label: str) -> None:
        self.session = session
        self.topic = topic
        self.label = label
        self.connection: PulsarConnection | None = None
        self._closing = False
        self._failure: MqwireError | None = None
        self._tasks = OwnedTasks(label)
        self._reconnect_task: asyncio.Task[None] | None = None
        self._backoff = session.new_backoff()

    # ------------------------------------------------------------------------------ to implement
    @abstractmethod
    async def _attach(self, connection: PulsarConnection) -> None:
        """Create the producer or subscription on ``connection``; set ``self.connection`` on success."""

    @abstractmethod
    def _detached(self, error: MqwireError) -> None:
        """The connection is gone (or the broker closed us): stop using it until the next attach."""

    @abstractmethod
    def _failed(self, error: MqwireError) -> None:
        """Reattaching failed for good: fail whatever waits."""

    # ----------------------------------------------------------------------------------- attaching
    async def start(self) -> None:
        """The first attachment, retried within the client's ``operation_timeout``."""
        await self.session.retrying(self._connect_once, f"{self.label}: attach")

    async def _connect_once(self) -> None:
        connection = await self.session.connection_for(self.topic)
        await self._attach(connection)

    def connection_lost(self, connection: PulsarConnection | None, error: MqwireError) -> None:
        """Called for the connection that carried us closing, or the broker closing us on it."""
        if self.connection is None or (connection is not None and self.connection is not connection):
            return  # not attached, or an old connection: nothing to do
        self.connection = None
        log.info("%s: detached (%s); reconnecting", self.label, error)
        self._detached(error)
        self.schedule_reconnect()

    def schedule_reconnect(self) -> None:
        if self._closing or self._failure is not None:
            return
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = self._tasks.spawn(self._reconnect(), name="reconnect")

    def _reconnect_deadline(self) -> float | None:
        """Loop time by which the next reconnection attempt should be made (None: no limit)."""
        return None

    def _reconnect_delay(self) -> float:
        """The next backoff delay, cut so that the attempt comes before ``_reconnect_deadline`` (as the Java
        client stops its backoff short of a pending send's timeout), but never below the first delay."""
        delay = self._backoff.next_delay()
        deadline = self._reconnect_deadline()
        if deadline is not None:
            left = deadline - asyncio.get_running_loop().time() - RECONNECT_MARGIN
            delay = min(delay, max(left, self._backoff.initial))
        return delay

    async def _reconnect(self) -> None:
        while not self._closing:
            await asyncio.sleep(self._reconnect_delay())
            if self._closing:
                return
            try:
                await self._connect_once()
            except RetriableError as exc:
                log.info("%s: reconnect failed (%s); trying again", self.label, exc)
                continue
            except MqwireError as exc:
                log.warning("%s: cannot reconnect: %s", self.label, exc)
                self._failure = exc
                self._failed(exc)
                return
            except Exception as exc:
                log.exception("%s: reconnect failed unexpectedly", self.label)
                failure = MqwireError(f"{self.label}: reconnect failed: {exc!r}")
                self._failure = failure
                self._failed(failure)
                return
            self._backoff.reset()
            log.info("%s: reattached", self.label)
            return

    async def _stop_reconnecting(self) -> None:
        self._closing = True
        task = self._reconnect_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def close_remote(
    connection: PulsarConnection, build: Callable[[int, int], BaseCommand], owner_id: int, timeout: float
) -> None:
    """Close a producer or consumer on the broker (``build`` makes the command) without waiting for it."""
    if connection.closed:
        return
    request_id = connection.next_request_id()
    request = connection.request(build(owner_id, request_id), request_id, timeout)
    task = connection.tasks.spawn(request, name="close on the broker", awaited=True)
    task.add_done_callback(_ignore_result)


def _ignore_result(task: asyncio.Future[Frame]) -> None:
    if not task.cancelled():
        task.exception()
