"""One RPC connection to a TubeMQ master or broker: serial numbers matched through the correlation table."""

from __future__ import annotations

import asyncio
import ssl as _ssl

from google.protobuf.message import Message

from mqwire.common.channel import Channel
from mqwire.common.errors import MqwireError, ProtocolError
from mqwire.common.transport import Address
from tubemqwire.protocol import rpc
from tubemqwire.protocol.frames import TubeFrame, TubeFrameSplitter

# The server drops a request that waited longer than the timeout it carries; 10 s is the Java default.
DEFAULT_RPC_TIMEOUT_MS = 10_000


class TubeConnection:
    """Open with ``await TubeConnection.open(address)``; ``call`` sends one RPC and returns its answer."""

    def __init__(self, channel: Channel[TubeFrame], request_timeout: float) -> None:
        self.channel = channel
        self.request_timeout = request_timeout

    @classmethod
    async def open(
        cls,
        address: Address,
        *,
        ssl: _ssl.SSLContext | None = None,
        connect_timeout: float = 10.0,
        request_timeout: float = DEFAULT_RPC_TIMEOUT_MS / 1000,
        name: str | None = None,
    ) -> TubeConnection:
        channel: Channel[TubeFrame] = await Channel.open(
            address,
            splitter=TubeFrameSplitter(),
            correlation_id_of=lambda frame: frame.serial,
            ssl=ssl,
            connect_timeout=connect_timeout,
            first_id=1,
            name=name or f"tubemq {address[0]}:{address[1]}",
        )
        return cls(channel, request_timeout)

    @property
    def closed(self) -> bool:
        return self.channel.closed

    def close(self, error: MqwireError | None = None) -> None:
        """Close; calls still waiting fail with ``error`` (default: ClosedError)."""
        self.channel.close(error)

    async def wait_closed(self) -> None:
        await self.channel.wait_closed()

    def start_call(
        self, service_type: int, method: int, request: Message, *, timeout: float | None = None
    ) -> asyncio.Future[TubeFrame]:
        """Send ``request`` without waiting; the future gets the answer frame (read it with ``body_of``).

        Nothing here waits for the socket to drain: callers that pipeline bound how much they keep in
        flight themselves. Raises the connection's error at once when it is closed.
        """
        channel = self.channel
        if channel.error is not None:
            raise channel.error
        wait = self.request_timeout if timeout is None else timeout
        serial = channel.next_id()
        data = rpc.encode_request(serial, service_type, method, request, timeout_ms=max(1, int(wait * 1000)))
        future = channel.table.register(serial, wait)
        try:
            channel.send(data)
        except BaseException:
            future.cancel()
            raise
        return future

    @staticmethod
    def body_of(frame: TubeFrame) -> bytes:
        """The success body of an answer frame; an exception body is raised as its typed error."""
        return rpc.decode_response(frame).data

    async def call(self, service_type: int, method: int, request: Message, *, timeout: float | None = None) -> bytes:
        """Send ``request`` to ``method`` of ``service_type`` and return the serialized success body.

        An exception body from the server is raised as the typed error its class name maps to.
        """
        wait = self.request_timeout if timeout is None else timeout
        serial = self.channel.next_id()
        data = rpc.encode_request(serial, service_type, method, request, timeout_ms=max(1, int(wait * 1000)))
        frame = await self.channel.request(serial, data, wait)
        try:
            return rpc.decode_response(frame).data
        except ProtocolError as err:
            # An unreadable answer means the stream can no longer be trusted: drop this connection only.
            self.channel.abort(err)
            raise
