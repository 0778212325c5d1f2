"""The admin HTTP client against local peers that answer well, oddly, too much or not at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from mqwire.common.errors import ConnectionLostError, ProtocolError, RequestTimeoutError
from mqwire.common.http import HttpEndpoint, request

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def serve(answer: bytes | None, seen: list[bytes] | None = None, *, hang: bool = False) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length")), 0)
        body = await reader.readexactly(length)
        if seen is not None:
            seen.append(head + body)
        if hang:
            await reader.read()  # until the client gives up and closes
        if answer is not None:
            writer.write(answer)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


# The servers live in the test's own loop, so their teardown must run there too (from 3.12 on, wait_closed
# really waits for the server's connections).
@pytest_asyncio.fixture(loop_scope="function")
async def servers() -> AsyncIterator[list[asyncio.Server]]:
    made: list[asyncio.Server] = []
    yield made
    for server in made:
        server.close()
        await server.wait_closed()


def endpoint(server: asyncio.Server, prefix: str = "") -> HttpEndpoint:
    port = server.sockets[0].getsockname()[1]
    return HttpEndpoint.parse(f"http://127.0.0.1:{port}{prefix}")


async def test_json_request_and_content_length_response(servers: list[asyncio.Server]) -> None:
    seen: list[bytes] = []
    body = json.dumps(["a", "b"]).encode()
    servers.append(await serve(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), seen))
    reply = await request(endpoint(servers[0], "/base"), "PUT", "/x/y", body=3, params={"force": "true"}, timeout=5)
    assert reply.ok and reply.json() == ["a", "b"]
    sent = seen[0]
    assert sent.startswith(b"PUT /base/x/y?force=true HTTP/1.1\r\n")
    assert b"Content-Type: application/json" in sent and sent.endswith(b"\r\n\r\n3")


async def test_chunked_and_close_delimited_bodies(servers: list[asyncio.Server]) -> None:
    chunked = (
        b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n{"re\r\n9;x=1\r\nason": 1}\r\n0\r\n\r\n'
    )
    servers.append(await serve(chunked))
    reply = await request(endpoint(servers[0]), "GET", "/", timeout=5)
    assert (reply.status, reply.json()) == (409, {"reason": 1})
    servers.append(await serve(b"HTTP/1.0 204 No Content\r\n\r\n"))
    assert (await request(endpoint(servers[1]), "DELETE", "/", timeout=5)).body == b""
    servers.append(await serve(b"HTTP/1.1 200 OK\r\n\r\nuntil the end"))
    assert (await request(endpoint(servers[2]), "GET", "/", timeout=5)).body == b"until the end"


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (b"SMTP ready\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n", "exceeds"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffff\r\n", "exceeds"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 200 + b"\r\n", "header lines"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 10_000 + b"\r\n\r\n", "longer than"),
        (b"HTTP/1.1 200 OK\r\n\r\n" + b"z" * 2048, "exceeds"),
    ],
)
async def test_malformed_or_oversized_answers(servers: list[asyncio.Server], answer: bytes, match: str) -> None:
    servers.append(await serve(answer))
    with pytest.raises(ProtocolError, match=match):
        await request(endpoint(servers[0]), "GET", "/", timeout=5, max_body=1024)


async def test_truncated_answer_and_timeout(servers: list[asyncio.Server]) -> None:
    servers.append(await serve(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
    with pytest.raises(ConnectionLostError):
        await request(endpoint(servers[0]), "GET", "/", timeout=5)
    servers.append(await serve(None, hang=True))
    with pytest.raises(RequestTimeoutError):
        await request(endpoint(servers[1]), "GET", "/", timeout=0.2)


def test_endpoint_parsing() -> None:
    assert HttpEndpoint.parse("http://h:8080/") == HttpEndpoint(False, "h", 8080, "")
    assert HttpEndpoint.parse("https://h/p").port == 443
    assert HttpEndpoint.parse("http://[::1]:80").host_header == "[::1]"
    for bad in ("pulsar://h:6650", "http://", "http://h:port"):
        with pytest.raises(ValueError, match="admin_url"):
            HttpEndpoint.parse(bad)


async def test_header_values_cannot_break_lines(servers: list[asyncio.Server]) -> None:
    servers.append(await serve(b"HTTP/1.1 200 OK\r\n\r\n"))
    with pytest.raises(ValueError, match="line break"):
        await request(endpoint(servers[0]), "GET", "/", headers={"Authorization": "Bearer x\r\nEvil: 1"}, timeout=5)
