"""One connection to a Pulsar broker (or proxy): CONNECT handshake, keep-alive, request ids, dispatch.

Responses that carry a ``request_id`` complete the matching request through the correlation table.
Pushes for a producer or consumer (receipts, messages, broker-initiated closes) go to the handler
registered for that producer or consumer id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as _ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mqwire.common.channel import Channel
from mqwire.common.errors import (
    AuthenticationError,
    ChecksumError,
    ConfigurationError,
    ConnectionLostError,
    MqwireError,
)
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.transport import Address
from mqwire.common.version import __version__
from pulsarwire import errors
from pulsarwire.protocol import commands
from pulsarwire.protocol.frames import FRAME_SIZE_PADDING, Frame, PulsarFrameSplitter, encode_command
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, CommandTopicMigrated

log = logging.getLogger(__name__)

# The largest message this client accepts unless told otherwise: Pulsar's default maximum message size
# (5 MiB) with room to spare. CONNECTED may lower it, never raise it: the broker does not decide how much
# memory one frame of ours may take.
DEFAULT_MAX_MESSAGE_SIZE = 8 * 1024 * 1024

T = BaseCommand.Type
# Push commands, routed by the producer or consumer id they name.
_PRODUCER_PUSHES = {T.SEND_RECEIPT, T.SEND_ERROR, T.CLOSE_PRODUCER, T.TOPIC_MIGRATED}
_CONSUMER_PUSHES = {T.MESSAGE, T.CLOSE_CONSUMER, T.ACTIVE_CONSUMER_CHANGE, T.REACHED_END_OF_TOPIC}

PushHandler = Callable[[int, Any, Frame], None]
CloseListener = Callable[[MqwireError], None]


class PulsarConnection:
    """Open with ``await PulsarConnection.open(address)``; the handshake is complete on return."""

    def __init__(self, name: str, keepalive_interval: float, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.name = name
        self.keepalive_interval = keepalive_interval
        # The client's limit, lowered by the broker's at CONNECTED: the largest message sent or received.
        self.max_message_size = max_message_size
        self.server_version = ""
        self.protocol_version = 0
        self.feature_flags: Any = None
        self._channel: Channel[Frame] | None = None
        self._splitter = PulsarFrameSplitter(max_message_size + FRAME_SIZE_PADDING)
        self._connected: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pongs: list[asyncio.Future[None]] = []
        self._last_received = time.monotonic()
        # Its background work: the keep-alive, credential refreshes, requests nobody waits for.
        self.tasks = OwnedTasks(name)
        self._producers: dict[int, PushHandler] = {}
        self._consumers: dict[int, PushHandler] = {}
        self._close_listeners: list[CloseListener] = []
        self._watchers: dict[int, PushHandler] = {}
        # Told once when the connection closes, for as long as their producer or consumer is registered.
        self._owner_listeners: dict[tuple[str, int], CloseListener] = {}
        self._credentials: tuple[str, str | None, bytes | None] = ("", None, None)
        self._auth_refresh: Callable[[], Awaitable[bytes]] | None = None
        self._refreshing: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        address: Address,
        *,
        ssl: _ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        connect_timeout: float = 10.0,
        keepalive_interval: float = 30.0,
        client_version: str = f"mqwire-{__version__}",
        auth_method: str | None = None,
        auth_data: bytes | None = None,
        auth_refresh: Callable[[], Awaitable[bytes]] | None = None,
        proxy_to_broker_url: str | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> PulsarConnection:
        """Connect and complete the CONNECT handshake.

        ``max_message_size`` bounds every frame received (plus room for its command and metadata) before
        anything is buffered for it; the broker's CONNECTED may only lower it.
        """
        if max_message_size <= 0:
            raise ConfigurationError(f"max_message_size must be positive, not {max_message_size}")
        name = f"pulsar {address[0]}:{address[1]}"
        connection = cls(name, keepalive_interval, max_message_size)
        connection._credentials = (client_version, auth_method, auth_data)
        connection._auth_refresh = auth_refresh
        connection._channel = await Channel.open(
            address,
            splitter=connection._splitter,
            correlation_id_of=connection._request_id_of,
            on_unsolicited=connection._dispatch,
            on_close=connection._closed,
            ssl=ssl,
            server_hostname=server_hostname,
            connect_timeout=connect_timeout,
            name=name,
        )
        try:
            connection._channel.send(
                encode_command(
                    commands.connect(
                        client_version=client_version,
                        auth_method_name=auth_method,
                        auth_data=auth_data,
                        proxy_to_broker_url=proxy_to_broker_url,
                    )
                )
            )
            async with asyncio.timeout(connect_timeout):
                connected = await connection._connected
        except TimeoutError:
            connection._channel.abort()
            raise ConnectionLostError(f"{name}: no CONNECTED within {connect_timeout:g} s") from None
        except BaseException:
            connection._channel.abort()
            raise
        connection.server_version = connected.server_version
        connection.protocol_version = connected.protocol_version
        connection.feature_flags = connected.feature_flags if connected.HasField("feature_flags") else None
        if connected.HasField("max_message_size") and 0 < connected.max_message_size < connection.max_message_size:
            connection.max_message_size = connected.max_message_size
            connection._splitter.max_frame_size = connected.max_message_size + FRAME_SIZE_PADDING
        connection.tasks.spawn(connection._keep_alive(), name="keep-alive")
        # The method's name only: the credentials themselves never reach a log line.
        log.debug(
            "%s: connected to %s, protocol %d, authentication %s",
            name, connection.server_version, connection.protocol_version, auth_method or "none",
        )
        return connection

    # ------------------------------------------------------------------------------------ properties
    @property
    def channel(self) -> Channel[Frame]:
        assert self._channel is not None
        return self._channel

    @property
    def closed(self) -> bool:
        return self.channel.closed

    # -------------------------------------------------------------------------------------- requests
    def next_request_id(self) -> int:
        return self.channel.next_id()

    async def request(self, command: BaseCommand, request_id: int, timeout: float | None) -> Frame:
        """Send a command carrying ``request_id``; return the response frame, raising on ERROR."""
        frame = await self.channel.request(request_id, encode_command(command), timeout)
        if frame.command.type == T.ERROR:
            raise errors.error_for(frame.command.error.error, frame.command.error.message)
        return frame

    def send(self, data: bytes | bytearray) -> None:
        """Send an already-encoded frame (SEND, ACK, FLOW ...); a bytearray must not change afterwards."""
        self.channel.send(data)

    async def drain(self) -> None:
        await self.channel.drain()

    async def ping(self, timeout: float = 10.0) -> float:
        """Send PING and wait for PONG; return the round trip in seconds."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs.append(waiter)
        started = time.monotonic()
        self.channel.send(encode_command(commands.ping()))
        try:
            async with asyncio.timeout(timeout):
                await waiter
        finally:
            if waiter in self._pongs:
                self._pongs.remove(waiter)
        return time.monotonic() - started

    # ----------------------------------------------------------------------------- push registration
    def register_producer(self, producer_id: int, handler: PushHandler, closed: CloseListener | None = None) -> None:
        """Route the pushes for ``producer_id`` to ``handler``; ``closed`` hears of the connection closing."""
        self._producers[producer_id] = handler
        if closed is not None:
            self._owner_listeners["p", producer_id] = closed

    def unregister_producer(self, producer_id: int) -> None:
        self._producers.pop(producer_id, None)
        self._owner_listeners.pop(("p", producer_id), None)

    def register_consumer(self, consumer_id: int, handler: PushHandler, closed: CloseListener | None = None) -> None:
        """Route the pushes for ``consumer_id`` to ``handler``; ``closed`` hears of the connection closing."""
        self._consumers[consumer_id] = handler
        if closed is not None:
            self._owner_listeners["c", consumer_id] = closed

    def unregister_consumer(self, consumer_id: int) -> None:
        self._consumers.pop(consumer_id, None)
        self._owner_listeners.pop(("c", consumer_id), None)

    def on_close(self, listener: CloseListener) -> None:
        self._close_listeners.append(listener)

    @property
    def supports_topic_watchers(self) -> bool:
        return bool(self.feature_flags is not None and self.feature_flags.supports_topic_watchers)

    def register_watcher(self, watcher_id: int, handler: PushHandler) -> None:
        """Route the WATCH_TOPIC_UPDATE pushes of topic-list watcher ``watcher_id`` to ``handler``."""
        self._watchers[watcher_id] = handler

    def unregister_watcher(self, watcher_id: int) -> None:
        self._watchers.pop(watcher_id, None)

    # --------------------------------------------------------------------------------------- closing
    def close(self, error: MqwireError | None = None) -> None:
        self.channel.close(error)

    async def wait_closed(self) -> None:
        await self.channel.wait_closed()

    # -------------------------------------------------------------------------------------- internals
    def _request_id_of(self, frame: Frame) -> int | None:
        self._last_received = time.monotonic()
        if not self._connected.done() and frame.command.type == T.ERROR:
            return None  # the handshake's refusal answers no request (its request id is -1)
        return commands.response_request_id(frame.command)

    def _dispatch(self, frame: Frame) -> None:
        command = frame.command
        kind = command.type
        if kind == T.PING:
            self.channel.send(encode_command(commands.pong()))
        elif kind == T.PONG:
            if self._pongs:
                waiter = self._pongs.pop(0)
                if not waiter.done():
                    waiter.set_result(None)
        elif kind == T.CONNECTED:
            if not self._connected.done():
                self._connected.set_result(command.connected)
        elif kind == T.ERROR and not self._connected.done():
            # An ERROR before CONNECTED is the broker refusing the handshake (most often authentication).
            refused: MqwireError = errors.error_for(command.error.error, command.error.message)
            if not isinstance(refused, AuthenticationError):
                refused = AuthenticationError(f"{self.name}: handshake refused: {command.error.message}")
            log.info("%s: handshake refused: %s", self.name, refused)
            self._connected.set_exception(refused)
        elif kind == T.AUTH_CHALLENGE:
            log.debug("%s: the broker asks for fresh credentials", self.name)
            self._answer_challenge()
        elif kind in _PRODUCER_PUSHES or kind in _CONSUMER_PUSHES:
            self._route(kind, command, frame)
        elif kind == T.WATCH_TOPIC_UPDATE:
            watcher = self._watchers.get(command.watchTopicUpdate.watcher_id)
            if watcher is None:
                log.debug("%s: update for unknown topic-list watcher dropped", self.name)
            else:
                watcher(kind, command.watchTopicUpdate, frame)
        else:
            log.warning("%s: dropping unexpected %s", self.name, T.Name(kind))

    def _answer_challenge(self) -> None:
        # A broker re-checks credentials now and then; static credentials answer with themselves,
        # a credentials callback is asked again.
        client_version, method, data = self._credentials
        if method is None or data is None:
            log.warning("%s: the broker asks for credentials and none are configured", self.name)
            return
        if self._auth_refresh is None:
            self.channel.send(encode_command(commands.auth_response(client_version, method, data)))
        elif self._refreshing is None or self._refreshing.done():
            self._refreshing = self.tasks.spawn(self._refresh_credentials(client_version, method), name="credentials")

    async def _refresh_credentials(self, client_version: str, method: str) -> None:
        assert self._auth_refresh is not None
        try:
            data = await self._auth_refresh()
        except Exception as exc:
            log.error("%s: the credentials callback failed (%s); the broker will close the connection", self.name, exc)
            return
        self._credentials = (client_version, method, data)
        with contextlib.suppress(MqwireError):
            self.channel.send(encode_command(commands.auth_response(client_version, method, data)))

    def _route(self, kind: BaseCommand.Type.ValueType, command: BaseCommand, frame: Frame) -> None:
        _, body = commands.unwrap(command)
        if kind == T.TOPIC_MIGRATED:
            # The one push that names its owner by resource id and type rather than by a producer id.
            owner_id = body.resource_id
            is_producer = body.resource_type == CommandTopicMigrated.Producer
            handlers = self._producers if is_producer else self._consumers
        elif kind in _PRODUCER_PUSHES:
            owner_id, handlers = body.producer_id, self._producers
        else:
            owner_id, handlers = body.consumer_id, self._consumers
        handler = handlers.get(owner_id)
        if handler is None and frame.checksum_mismatch:
            raise ChecksumError(f"{self.name}: a corrupt MESSAGE (checksum mismatch) for unknown consumer {owner_id}")
        if handler is None:
            log.warning("%s: %s for unknown id %d dropped", self.name, T.Name(kind), owner_id)
            return
        handler(kind, body, frame)

    def _closed(self, error: MqwireError) -> None:
        if not self._connected.done():
            self._connected.set_exception(error)
        for waiter in self._pongs:
            if not waiter.done():
                waiter.set_exception(error)
        self._pongs.clear()
        self.tasks.cancel()  # the keep-alive, and a credentials refresh under way
        owners, self._owner_listeners = list(self._owner_listeners.values()), {}
        self._producers.clear()
        self._consumers.clear()
        self._watchers.clear()
        for listener in [*owners, *self._close_listeners]:
            try:
                listener(error)
            except Exception:
                log.exception("%s: close listener failed", self.name)

    async def _keep_alive(self) -> None:
        # Ping when idle; a peer silent for two intervals is presumed dead and the connection dropped.
        interval = self.keepalive_interval
        with contextlib.suppress(MqwireError):
            while not self.closed:
                await asyncio.sleep(interval)
                silent_for = time.monotonic() - self._last_received
                if silent_for >= 2 * interval:
                    self.channel.abort(ConnectionLostError(f"{self.name}: no traffic for {silent_for:.0f} s"))
                    return
                if silent_for >= interval:
                    self.channel.send(encode_command(commands.ping()))

