"""A TCP proxy on loopback that passes, drops, stalls or black-holes traffic on command.

It runs in the test's event loop, between a client and a real broker:

- ``drop()`` resets every open connection (the peer sees a reset, as when a host reboots);
- ``stall()`` keeps connections open but delivers nothing until ``heal()`` (a frozen path; what was held
  back is delivered then);
- ``blackhole()`` keeps connections open and accepts new ones, but discards everything (a dead host
  behind a live load balancer);
- ``refuse()`` resets every open connection and then every new one at once, without connecting it
  upstream (a broker that is down: each attempt fails immediately, so only the client's backoff spaces
  its attempts);
- ``heal()`` passes traffic again.

``accepted`` counts connections ever made through it, so a test can tell a reconnect from a storm;
``arrivals`` holds the loop time of each, so a test can check how attempts are spread over time.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

CHUNK = 65536


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, listen_port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.listen_port = listen_port  # 0: any free port
        self.accepted = 0
        self.arrivals: list[float] = []
        self.mode = "pass"
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.listen_port)
        port: int = self._server.sockets[0].getsockname()[1]
        self.port = port
        return port

    async def close(self) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------ commands
    def drop(self) -> None:
        for client, upstream in list(self._pairs):
            for writer in (client, upstream):
                _reset(writer)
        self._pairs.clear()

    def stall(self) -> None:
        self.mode = "stall"
        self._flowing.clear()

    def blackhole(self) -> None:
        self.mode = "blackhole"
        self._flowing.set()

    def refuse(self) -> None:
        self.mode = "refuse"
        self._flowing.set()
        self.drop()

    def heal(self) -> None:
        self.mode = "pass"
        self._flowing.set()

    # ------------------------------------------------------------------------------------ plumbing
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.arrivals.append(asyncio.get_running_loop().time())
        if self.mode == "refuse":
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(writer)
            return
        if self.mode == "refuse":  # refused while this one was connecting upstream
            _reset(writer)
            _reset(up_writer)
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.ensure_future(self._pump(source, sink, pair))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
    ) -> None:
        try:
            while True:
                data = await source.read(CHUNK)
                if not data:
                    break
                await self._flowing.wait()
                if self.mode == "blackhole":
                    continue
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if pair in self._pairs:
                self._pairs.discard(pair)
                for writer in pair:
                    _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST rather than FIN, like a connection that died rather than one that ended."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    transport = writer.transport
    transport.abort()


def assert_backed_off(
    attempts: list[float], *, window: float, maximum: float, retriers: int, per_retry: int = 1
) -> None:
    """Check the schedule of connection attempts (seconds since the refusal began) seen over ``window``.

    A client that backs off retries fast at first and then, once its delay has grown to ``maximum``, at most
    once per ``maximum`` less the jitter, in each of its ``retriers`` independent retry loops (each making up to
    ``per_retry`` connection attempts per retry). Without backoff every refusal is followed by another
    attempt at once: hundreds a second on loopback.
    """
    assert attempts, "no connection attempt while the broker refused: the client never noticed"
    assert attempts[0] < 1.0, f"the first retry came only after {attempts[0]:.2f} s"
    # Jitter may take up to a fifth off the maximum delay; a retry loop's attempts in the later part of the
    # window (past the ramp from the first delay up to the maximum) are bounded by that shortest delay.
    later_from = window / 2
    later = [t for t in attempts if later_from <= t < window]
    bound = retriers * per_retry * (int((window - later_from) / (0.8 * maximum)) + 1)
    assert len(later) <= bound, (
        f"{len(later)} connection attempts in the last {window - later_from:.1f} s of {window:.1f} s of refusal "
        f"(at most {bound} with a {maximum:.2f} s maximum backoff): {[round(t, 3) for t in attempts[:40]]}"
    )
