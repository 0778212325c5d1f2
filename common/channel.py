"""A connection paired with its correlation table: the request/response machinery of every protocol.

The protocol package says how to find the request id in a frame (``correlation_id_of``); frames without
one (pushes such as Pulsar's MESSAGE or a broker-initiated CLOSE) go to ``on_unsolicited``. The request
is registered before its bytes are written, and when the connection closes every pending request fails
with the connection's error, so a caller never waits beyond its timeout or the connection's life.
"""

from __future__ import annotations

import logging
import ssl as _ssl
from collections.abc import Callable
from typing import Generic, TypeVar

from mqwire.common.correlation import CorrelationTable
from mqwire.common.errors import MqwireError
from mqwire.common.framing import FrameSplitter
from mqwire.common.transport import Address, Connection

F = TypeVar("F")

log = logging.getLogger(__name__)


class Channel(Generic[F]):
    """Request/response over one connection; open it with ``await Channel.open(...)``."""

    def __init__(
        self,
        name: str,
        correlation_id_of: Callable[[F], int | None],
        on_unsolicited: Callable[[F], None] | None,
        on_close: Callable[[MqwireError], None] | None,
        first_id: int = 0,
    ) -> None:
        self.name = name
        self.table: CorrelationTable[F] = CorrelationTable(name, first_id=first_id)
        self._correlation_id_of = correlation_id_of
        self._on_unsolicited = on_unsolicited
        self._on_close = on_close
        self._connection: Connection[F] | None = None

    @classmethod
    async def open(
        cls,
        address: Address,
        *,
        splitter: FrameSplitter[F],
        correlation_id_of: Callable[[F], int | None],
        on_unsolicited: Callable[[F], None] | None = None,
        on_close: Callable[[MqwireError], None] | None = None,
        ssl: _ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        connect_timeout: float = 10.0,
        first_id: int = 0,
        name: str | None = None,
    ) -> Channel[F]:
        """Connect to ``address`` and start reading frames; the channel's requests can be sent at once."""
        label = name or f"{address[0]}:{address[1]}"
        channel = cls(label, correlation_id_of, on_unsolicited, on_close, first_id)
        channel._connection = await Connection.open(
            address,
            splitter=splitter,
            on_frame=channel._frame_received,
            on_close=channel._connection_closed,
            ssl=ssl,
            server_hostname=server_hostname,
            connect_timeout=connect_timeout,
            name=label,
        )
        return channel

    @property
    def connection(self) -> Connection[F]:
        """The transport connection under this channel."""
        assert self._connection is not None
        return self._connection

    @property
    def closed(self) -> bool:
        """Whether the channel is closed (by either side)."""
        return self.connection.closed

    @property
    def error(self) -> MqwireError | None:
        """Why the channel closed, if it closed on an error."""
        return self.connection.error

    @property
    def pending(self) -> int:
        """Requests sent and still waiting for their response."""
        return len(self.table)

    def next_id(self) -> int:
        """A fresh request id for this channel."""
        return self.table.next_id()

    async def request(
        self, request_id: int, data: bytes | bytearray | list[bytes | bytearray], timeout: float | None
    ) -> F:
        """Send ``data`` (which carries ``request_id``; a frame, or a frame's pieces in order) and wait for the
        frame that answers it."""
        connection = self.connection
        if connection.error is not None:
            raise connection.error
        future = self.table.register(request_id, timeout)
        try:
            self.send(data)
            await connection.drain()
        except BaseException:
            future.cancel()
            raise
        return await future

    def send(self, data: bytes | bytearray | list[bytes | bytearray]) -> None:
        """Send a frame that expects no response (or whose answer arrives unsolicited); a frame given as its
        pieces is written in one go, so nothing else comes between them."""
        connection = self.connection
        if isinstance(data, list):
            for piece in data:
                connection.write(piece)
        else:
            connection.write(data)

    async def drain(self) -> None:
        """Wait while the socket's write buffer is over its high-water mark."""
        await self.connection.drain()

    def close(self, error: MqwireError | None = None) -> None:
        """Close after the bytes already written; pending requests fail with ``error``."""
        if self._connection is not None:
            self._connection.close(error)

    def abort(self, error: MqwireError | None = None) -> None:
        """Close at once, dropping unwritten bytes; pending requests fail with ``error``."""
        if self._connection is not None:
            self._connection.abort(error)

    async def wait_closed(self) -> None:
        """Wait until the connection is fully closed."""
        if self._connection is not None:
            await self._connection.wait_closed()

    def _frame_received(self, frame: F) -> None:
        request_id = self._correlation_id_of(frame)
        if request_id is not None:
            self.table.resolve(request_id, frame)
        elif self._on_unsolicited is not None:
            self._on_unsolicited(frame)
        else:
            log.warning("%s: dropping a frame that answers no request", self.name)

    def _connection_closed(self, error: MqwireError) -> None:
        self.table.fail_all(error)
        if self._on_close is not None:
            self._on_close(error)
