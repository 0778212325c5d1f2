"""A TCP relay on a loopback address that records the first bytes each client sends through it."""

from __future__ import annotations

import asyncio
import contextlib

CHUNK = 65536


class Relay:
    """Passes bytes both ways between clients and ``target``; ``first_bytes`` holds, per connection, what the
    client sent first (up to the first read), and ``from_clients`` everything the clients sent."""

    def __init__(self, target_host: str, target_port: int, listen_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listen_host = listen_host
        self.port = 0
        self.first_bytes: list[bytes] = []
        self.from_clients = bytearray()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._accept, self.listen_host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        for source, sink, first in ((reader, up_writer, True), (up_reader, writer, False)):
            task = asyncio.ensure_future(self._pump(source, sink, first))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bool) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            first = record
            while data := await source.read(CHUNK):
                if record:
                    self.from_clients += data
                if first:
                    self.first_bytes.append(bytes(data))
                    first = False
                sink.write(data)
                await sink.drain()
        sink.close()
