"""Connection, Channel and pool against loopback servers written for each case."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from mqwire.common.channel import Channel
from mqwire.common.errors import ClosedError, ConnectError, ConnectionLostError, FrameTooLargeError, RequestTimeoutError
from mqwire.common.framing import LengthPrefixedSplitter
from mqwire.common.pool import ConnectionPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def frame(request_id: int, body: bytes = b"") -> bytes:
    payload = struct.pack(">i", request_id) + body
    return struct.pack(">I", len(payload)) + payload


def request_id_of(data: bytes | bytearray) -> int | None:
    value: int = struct.unpack_from(">i", data)[0]
    return None if value < 0 else value


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">I", await reader.readexactly(4))
    return await reader.readexactly(size)


async def serve(handler: Handler) -> AsyncIterator[tuple[str, int]]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    address = server.sockets[0].getsockname()[:2]
    try:
        yield address
    finally:
        server.close()


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # Answers every request, in reverse order of each burst, to prove matching is by id.
    try:
        while True:
            data = await read_frame(reader)
            writer.write(struct.pack(">I", len(data)) + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def open_channel(address: tuple[str, int], **kwargs: object) -> Channel[bytearray]:
    return await Channel.open(
        address,
        splitter=LengthPrefixedSplitter(1 << 20),
        correlation_id_of=request_id_of,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_requests_are_matched_by_id() -> None:
    async for address in serve(echo):
        channel = await open_channel(address)
        ids = [channel.next_id() for _ in range(50)]
        replies = await asyncio.gather(*(channel.request(i, frame(i, b"x%d" % i), 5) for i in ids))
        assert [r[4:] for r in replies] == [b"x%d" % i for i in ids]
        channel.close()
        await channel.wait_closed()


async def test_a_request_in_pieces_goes_out_whole_and_unmixed_with_others() -> None:
    async for address in serve(echo):
        channel = await open_channel(address)
        large = bytes(range(256)) * 400  # past the size written alone, between two small pieces
        requests = []
        for _ in range(20):
            request_id = channel.next_id()
            whole = frame(request_id, b"head" + large + b"tail")
            end = 12 + len(large)
            pieces: list[bytes | bytearray] = [whole[:12], bytearray(whole[12:end]), whole[end:]]
            requests.append(channel.request(request_id, pieces, 5))
            small_id = channel.next_id()
            requests.append(channel.request(small_id, frame(small_id, b"small"), 5))
        replies = await asyncio.gather(*requests)
        assert [bytes(r[4:]) for r in replies] == [b"head" + large + b"tail", b"small"] * 20
        channel.close()
        await channel.wait_closed()


async def test_unsolicited_frames_reach_the_handler() -> None:
    async def push(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frame(-1, b"push"))
        await writer.drain()
        await reader.read()

    received: list[bytes] = []
    async for address in serve(push):
        channel = await open_channel(address, on_unsolicited=received.append)
        for _ in range(100):
            if received:
                break
            await asyncio.sleep(0.01)
        assert received == [struct.pack(">i", -1) + b"push"]
        channel.close()


async def test_connection_loss_fails_every_pending_request() -> None:
    async def read_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(3):
            await read_frame(reader)
        writer.close()

    closes: list[BaseException] = []
    async for address in serve(read_then_drop):
        channel = await open_channel(address, on_close=closes.append)
        results = await asyncio.gather(*(channel.request(i, frame(i), 30) for i in range(3)), return_exceptions=True)
        assert all(isinstance(r, ConnectionLostError) for r in results)
        assert channel.pending == 0
        assert len(closes) == 1
        with pytest.raises(ConnectionLostError):
            await channel.request(7, frame(7), 1)


async def test_peer_closing_mid_frame_fails_pending_with_connection_lost() -> None:
    async def half_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(struct.pack(">I", 100) + b"\0\0\0\1partial")
        await writer.drain()
        writer.close()

    async for address in serve(half_answer):
        channel = await open_channel(address)
        with pytest.raises(ConnectionLostError, match="mid-frame"):
            await channel.request(1, frame(1), 30)


async def test_oversize_frame_closes_only_that_connection() -> None:
    async def liar(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(struct.pack(">I", 2**31 - 1) + b"\0\0\0\1")
        await writer.drain()
        await reader.read()

    async for bad_address in serve(liar):
        async for good_address in serve(echo):
            bad = await open_channel(bad_address)
            good = await open_channel(good_address)
            with pytest.raises(FrameTooLargeError):
                await bad.request(1, frame(1), 30)
            assert bad.closed and not good.closed
            assert (await good.request(2, frame(2, b"ok"), 5))[4:] == b"ok"
            assert bad.connection._splitter.pending_bytes() == 0  # nothing of the claimed size was kept
            good.close()


async def test_request_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async for address in serve(silent):
        channel = await open_channel(address)
        with pytest.raises(RequestTimeoutError):
            await channel.request(1, frame(1), 0.05)
        assert channel.pending == 0 and not channel.closed
        channel.close()


async def test_connect_to_closed_port_is_a_typed_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectError) as caught:
        await open_channel(("127.0.0.1", port), connect_timeout=2)
    # Refused at once by the kernel, not given up on when the connect timeout ran out.
    assert "timed out" not in str(caught.value)


async def test_connect_timeout_to_unanswering_peer() -> None:
    # The kernel completes the TCP handshake into the backlog, but nothing ever answers the TLS hello, so
    # the connection is never established and only the connect timeout can end the wait.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        started = time.monotonic()
        # Liveness only: without its connect timeout the handshake would wait 60 s, ten times more than this.
        async with asyncio.timeout(6):
            with pytest.raises(ConnectError, match=r"timed out after 0\.3 s"):
                await open_channel(listener.getsockname(), connect_timeout=0.3, ssl=ssl.create_default_context())
        assert time.monotonic() - started >= 0.3


async def test_close_fails_pending_with_closed_error() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async for address in serve(silent):
        channel = await open_channel(address)
        pending = asyncio.ensure_future(channel.request(1, frame(1), 30))
        await asyncio.sleep(0.01)
        channel.close()
        with pytest.raises(ClosedError):
            await pending
        await asyncio.wait_for(channel.wait_closed(), 6)


async def test_small_writes_are_coalesced() -> None:
    chunks: list[int] = []

    async def count_reads(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1 << 20):
            chunks.append(len(data))

    async for address in serve(count_reads):
        channel = await open_channel(address)
        for i in range(100):
            channel.send(frame(i))
        await channel.drain()
        await asyncio.sleep(0.1)
        assert sum(chunks) == 100 * 8
        assert len(chunks) < 10
        channel.close()


async def test_pool_opens_once_and_closes_idle() -> None:
    opened: list[int] = []

    class Fake:
        closed = False

        def close(self) -> None:
            self.closed = True

    async def factory(key: int) -> Fake:
        opened.append(key)
        await asyncio.sleep(0.01)
        return Fake()

    clock = [0.0]
    pool: ConnectionPool[int, Fake] = ConnectionPool(factory, idle_timeout=10, clock=lambda: clock[0])
    first, second = await asyncio.gather(pool.get(1), pool.get(1))
    assert first is second and opened == [1]
    clock[0] = 11
    assert pool.close_idle() == 1 and first.closed
    third = await pool.get(1)
    assert third is not first and opened == [1, 1]
    await pool.close()
    assert third.closed
    with pytest.raises(ClosedError):
        await pool.get(1)


async def test_backpressure_holds_writers_while_the_peer_does_not_read() -> None:
    release = asyncio.Event()

    async def stalled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        while await reader.read(1 << 20):
            pass

    async for address in serve(stalled):
        channel = await open_channel(address)
        channel.connection.set_write_high_water(64 * 1024)
        chunk = frame(-1, b"x" * 65536)
        blocked = False
        for _ in range(2000):  # at most ~128 MiB: far beyond any socket buffer
            channel.send(chunk)
            try:
                await asyncio.wait_for(channel.drain(), 0.05)
            except TimeoutError:
                blocked = True
                break
        assert blocked, "drain never waited although the peer read nothing"
        release.set()
        await asyncio.wait_for(channel.drain(), 10)
        channel.close()


async def test_while_the_peer_is_slow_writes_wait_uncopied_and_arrive_whole_in_order() -> None:
    release = asyncio.Event()
    received = bytearray()

    async def stalled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        while data := await reader.read(1 << 20):
            received.extend(data)

    async for address in serve(stalled):
        channel = await open_channel(address)
        connection = channel.connection
        transport = connection._transport
        assert transport is not None
        sent = bytearray()
        # Large and small writes mixed, far more than the socket buffers hold.
        for i in range(300):
            data = frame(-1, bytes([i % 251]) * (100_000 if i % 3 == 0 else 50 + i))
            channel.send(data)
            sent += data
            # asyncio's own buffer stays about one large write deep; the rest waits in the connection's queue.
            assert transport.get_write_buffer_size() <= 64 * 1024 + 100_008
        assert connection._pending_size > 1_000_000
        release.set()
        await asyncio.wait_for(channel.drain(), 10)
        channel.close()
        await asyncio.wait_for(channel.wait_closed(), 6)
        for _ in range(100):
            if len(received) >= len(sent):
                break
            await asyncio.sleep(0.05)
        assert received == sent
