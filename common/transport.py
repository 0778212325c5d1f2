"""A TCP or TLS connection that turns reads into frames and coalesces writes.

Built on ``asyncio.BufferedProtocol`` so that a read lands where the splitter wants it (a large frame
straight in its own buffer) and is split into frames inside the event loop's callback, with no extra task
switch per frame. Small writes made in the same loop iteration leave in one system call; a large one is
handed on alone, never joined. asyncio copies what a send leaves over into a buffer of its own, so that
buffer is kept shallow (``_TRANSPORT_HIGH_WATER``): while it is full, writes wait in this connection's queue
as the objects written, uncopied. ``drain`` waits while that queue is above its high-water mark, so a fast
producer cannot grow memory without bound.

A frame handler that raises ProtocolError closes only this connection; the error is what ``on_close``
receives and what every later call raises.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl as _ssl
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from mqwire.common.errors import (
    ClosedError,
    ConnectError,
    ConnectionLostError,
    MqwireError,
    ProtocolError,
    UnsupportedRuntimeError,
)
from mqwire.common.framing import FrameSplitter

F = TypeVar("F")

log = logging.getLogger(__name__)

Address = tuple[str, int]

# Writes below this size wait for the end of the loop iteration to leave together.
_COALESCE_LIMIT = 64 * 1024
_DEFAULT_HIGH_WATER = 1024 * 1024
# asyncio's own write buffer: about one large frame deep. Filling it, and deleting what was sent from its
# front, cost a 10 KB Pulsar producer more CPU than encoding its messages.
_TRANSPORT_HIGH_WATER = 64 * 1024
# How long a graceful close may wait for queued bytes to leave before the socket is dropped.
_CLOSE_GRACE = 5.0


class Connection(asyncio.BufferedProtocol, Generic[F]):
    """One connection; create it with ``await Connection.open(...)``."""

    def __init__(
        self,
        splitter: FrameSplitter[F],
        on_frame: Callable[[F], None],
        on_close: Callable[[MqwireError], None] | None,
        name: str,
    ) -> None:
        self.name = name
        self._splitter = splitter
        self._on_frame = on_frame
        self._on_close = on_close
        self._transport: asyncio.Transport | None = None
        self._pending: list[bytes | bytearray] = []
        self._pending_size = 0
        self._flush_scheduled = False
        self._high_water = _DEFAULT_HIGH_WATER
        self._transport_full = False  # asyncio's buffer is above _TRANSPORT_HIGH_WATER: writes stay queued
        self._writable = asyncio.Event()
        self._writable.set()
        self._error: MqwireError | None = None
        self._notified = False
        self._closed = asyncio.get_running_loop().create_future()

    # ----------------------------------------------------------------------------------------- opening
    @classmethod
    async def open(
        cls,
        address: Address,
        *,
        splitter: FrameSplitter[F],
        on_frame: Callable[[F], None],
        on_close: Callable[[MqwireError], None] | None = None,
        ssl: _ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        connect_timeout: float = 10.0,
        write_high_water: int = _DEFAULT_HIGH_WATER,
        name: str | None = None,
    ) -> Connection[F]:
        """Connect to ``address``; raise ConnectError within ``connect_timeout`` when that fails."""
        host, port = address
        label = name or f"{host}:{port}"
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_timeout):
                _, protocol = await loop.create_connection(
                    lambda: cls(splitter, on_frame, on_close, label),
                    host,
                    port,
                    ssl=ssl,
                    server_hostname=(server_hostname or host) if ssl is not None else None,
                )
        except TimeoutError:
            raise ConnectError(f"{label}: connect timed out after {connect_timeout:g} s") from None
        except _ssl.SSLError as exc:
            raise ConnectError(f"{label}: TLS handshake failed: {exc.reason or exc}") from exc
        except OSError as exc:
            raise ConnectError(f"{label}: {exc.strerror or exc}") from exc
        if protocol.error is not None:
            # connection_made failed: the transport is already aborted.
            raise protocol.error
        protocol.set_write_high_water(write_high_water)
        return protocol

    def set_write_high_water(self, high: int) -> None:
        """Set the size of the queued writes above which ``drain`` waits."""
        self._high_water = high
        self._update_writable()

    # ------------------------------------------------------------------------------ asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio protocol callback: the socket is connected."""
        # uvloop's transports have asyncio.Transport's methods without subclassing it: the type is taken on
        # trust, never checked with isinstance. What this class relies on from any loop: BufferedProtocol
        # (get_buffer / buffer_updated), set_write_buffer_limits with pause_writing / resume_writing, write,
        # close, abort and get_extra_info("socket") (uvloop answers with a socket-like object).
        self._transport = cast(asyncio.Transport, transport)
        try:
            # Resumed only once empty, so that a write after it goes to the socket at once, not into the buffer.
            self._transport.set_write_buffer_limits(high=_TRANSPORT_HIGH_WATER, low=0)
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # asyncio's loop and uvloop both set TCP_NODELAY on TCP connections already; asked for here
                # too, so that small frames never wait on Nagle whatever another loop's default is.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except Exception as exc:
            # Raised here, the loop would only log it and the caller would wait for a timeout instead.
            self._fail_in_callback("connection_made", exc, ConnectError)

    def get_buffer(self, sizehint: int) -> memoryview:
        """asyncio protocol callback: where the next read goes (the splitter decides)."""
        if self._error is not None:
            return memoryview(bytearray(65536))  # closing: what is read now is dropped
        try:
            return self._splitter.get_buffer(sizehint)
        except Exception as exc:
            self._fail_in_callback("get_buffer", exc, ConnectionLostError)
            # The loop needs somewhere to read into; what lands here after the failure is never looked at.
            return memoryview(bytearray(65536))

    def buffer_updated(self, nbytes: int) -> None:
        """asyncio protocol callback: split what was read into frames and hand them on."""
        if self._error is not None:
            return
        try:
            for frame in self._splitter.buffer_updated(nbytes):
                self._on_frame(frame)
                if self._error is not None:
                    return
        except ProtocolError as exc:
            log.warning("%s: closing after malformed input: %s", self.name, exc)
            self._shut(exc, abort=True, in_callback=True)
        except Exception as exc:
            # A handler bug must not leave the connection half alive.
            self._fail_in_callback("frame handler", exc, ConnectionLostError)

    def data_received(self, data: bytes) -> None:
        """Called only by an event loop without ``asyncio.BufferedProtocol`` support: the connection fails with
        ``UnsupportedRuntimeError`` naming the loop, at the first bytes received (the replies never arrive)."""
        if self._error is not None:
            return
        kind = type(asyncio.get_running_loop())
        error = UnsupportedRuntimeError(
            f"{self.name}: event loop {kind.__module__}.{kind.__qualname__} hands reads to data_received: it does"
            " not support asyncio.BufferedProtocol (get_buffer / buffer_updated), which the connections read"
            " through. mqwire runs on asyncio's own event loops and on uvloop"
        )
        log.error("%s", error)
        self._shut(error, abort=True, in_callback=True)

    def eof_received(self) -> bool | None:
        """asyncio protocol callback: the peer closed its side."""
        return False

    def pause_writing(self) -> None:
        """asyncio protocol callback: the transport's write buffer is full; later writes stay queued here."""
        self._transport_full = True

    def resume_writing(self) -> None:
        """asyncio protocol callback: the transport's write buffer drained; the queued writes go on."""
        self._transport_full = False
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio protocol callback: the connection ended; waiters fail with ConnectionLostError."""
        if self._error is None:
            try:
                pending = self._splitter.pending_bytes()
            except Exception as failure:
                log.exception("%s: reading the unfinished frame's size failed", self.name)
                pending, exc = 0, exc or failure
            if pending:
                reason = f"peer closed mid-frame with {pending} bytes of an incomplete frame"
            elif exc is not None:
                reason = f"connection lost: {exc}"
            else:
                reason = "connection closed by peer"
            self._error = ConnectionLostError(f"{self.name}: {reason}")
            self._error.__cause__ = exc
        self._finish()

    def _fail_in_callback(self, callback: str, exc: Exception, kind: type[MqwireError]) -> None:
        """End the connection at once because a transport callback raised; the error names the callback and
        carries ``exc`` as its cause, for the caller of ``open`` and every waiter on the connection."""
        log.error("%s: %s failed: %r", self.name, callback, exc, exc_info=exc)
        error = kind(f"{self.name}: {callback} failed: {exc!r}")
        error.__cause__ = exc
        self._shut(error, abort=True, in_callback=True)

    # ----------------------------------------------------------------------------------------- writing
    @property
    def closed(self) -> bool:
        """Whether the connection is closed."""
        return self._error is not None

    @property
    def error(self) -> MqwireError | None:
        """Why the connection closed, or None while it is open."""
        return self._error

    def write(self, data: bytes | bytearray) -> None:
        """Queue ``data`` (not copied: a bytearray must not change afterwards); it leaves with the other writes of
        this loop iteration."""
        if self._error is not None:
            raise self._error
        self._pending.append(data)
        self._pending_size += len(data)
        if self._pending_size > self._high_water:
            self._writable.clear()
        if self._transport_full:
            return  # resume_writing sends it
        if self._pending_size >= _COALESCE_LIMIT:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    async def drain(self) -> None:
        """Wait until the kernel buffer has room again (backpressure); raise if the connection closed."""
        if self._error is not None:
            raise self._error
        if not self._writable.is_set():
            waiter = asyncio.ensure_future(self._writable.wait())
            await asyncio.wait((waiter, self._closed), return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if self._error is not None:
                raise self._error

    async def send(self, data: bytes | bytearray) -> None:
        """``write`` then ``drain``."""
        self.write(data)
        await self.drain()

    def _flush(self, everything: bool = False) -> None:
        """Hand queued writes to the transport until its buffer is full (``everything``: all of them)."""
        self._flush_scheduled = False
        transport = self._transport
        if not self._pending or transport is None or self._error is not None:
            return
        pending = self._pending
        taken = 0
        while taken < len(pending) and (everything or not self._transport_full):
            # A large write goes alone; a run of small ones leaves joined, in one system call.
            end = taken + 1
            if len(pending[taken]) < _COALESCE_LIMIT:
                while end < len(pending) and len(pending[end]) < _COALESCE_LIMIT:
                    end += 1
            chunk = pending[taken] if end == taken + 1 else b"".join(pending[taken:end])
            taken = end
            self._pending_size -= len(chunk)
            transport.write(chunk)  # may call pause_writing
        del pending[:taken]
        self._update_writable()

    def _update_writable(self) -> None:
        if self._pending_size > self._high_water and self._error is None:
            self._writable.clear()
        else:
            self._writable.set()

    # ----------------------------------------------------------------------------------------- closing
    def close(self, error: MqwireError | None = None) -> None:
        """Close after flushing queued writes; pending work fails with ``error`` (ClosedError by default)."""
        self._shut(error or ClosedError(f"{self.name}: connection closed"), abort=False)

    def abort(self, error: MqwireError | None = None) -> None:
        """Drop the connection at once, discarding queued writes."""
        self._shut(error or ClosedError(f"{self.name}: connection aborted"), abort=True)

    async def wait_closed(self) -> None:
        """Wait until the connection is fully closed."""
        await asyncio.shield(self._closed)

    def _shut(self, error: MqwireError, *, abort: bool, in_callback: bool = False) -> None:
        if self._error is not None:
            return
        if not abort:
            self._flush(everything=True)
        self._error = error
        self._writable.set()
        self._notify_closed()
        transport = self._transport
        if transport is None:
            self._finish()
        elif abort and in_callback:
            # uvloop crashes when a transport is aborted inside its own read callbacks (get_buffer,
            # buffer_updated): the abort waits for the next loop turn; the error above already stops reading.
            asyncio.get_running_loop().call_soon(transport.abort)
        elif abort:
            transport.abort()
        else:
            transport.close()
            # A peer that stops reading must not keep a graceful close pending forever.
            asyncio.get_running_loop().call_later(_CLOSE_GRACE, transport.abort)

    def _notify_closed(self) -> None:
        # Runs once, as soon as the connection is known to be unusable, so waiters fail promptly.
        if self._notified:
            return
        self._notified = True
        if self._on_close is not None and self._error is not None:
            try:
                self._on_close(self._error)
            except Exception:
                log.exception("%s: close handler failed", self.name)

    def _finish(self) -> None:
        self._pending.clear()
        self._notify_closed()
        if not self._closed.done():
            self._closed.set_result(None)
