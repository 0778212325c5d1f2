"""The admin HTTP client against a server that answers with malformed responses, and callers passing line breaks.

The fake server answers each connection with fixed bytes (no HTTP library could produce them: they are what a
hostile or broken server sends). Every malformed answer must end in the library's ProtocolError, never a bare
ValueError or RecursionError, and a request that could be split must be refused before a connection is made.
The callers that decode JSON bodies themselves (the registry's error statuses, OAuth2) are checked the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import pytest

from mqwire.common.errors import AuthenticationError, ConfigurationError, ProtocolError
from mqwire.common.http import HttpEndpoint, request
from mqwire.registry import RegistryClient, RegistryError
from pulsarwire.oauth2 import _json_object


@dataclass
class FakeServer:
    """A server on a free loopback port: counts connections and answers each with ``answer``."""

    answer: bytes
    connections: int = 0
    server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await reader.readuntil(b"\r\n\r\n")
        writer.write(self.answer)
        await writer.drain()
        writer.close()

    @property
    def endpoint(self) -> HttpEndpoint:
        assert self.server is not None
        return HttpEndpoint.parse(f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}")


@asynccontextmanager
async def serving(answer: bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") -> AsyncIterator[FakeServer]:
    """A FakeServer answering ``answer``, started on the test's own event loop and closed after."""
    made = FakeServer(answer)
    made.server = await asyncio.start_server(made.handle, "127.0.0.1", 0)
    async with made.server:
        yield made


OK = b"HTTP/1.1 200 OK\r\n"


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        # Content-Length: a Latin-1 superscript two passes str.isdigit but is no decimal digit.
        (OK + b"Content-Length: \xb2\r\n\r\nab", "Content-Length"),
        # Thousands of digits: more than int() converts, and more than any limit.
        (OK + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", "exceeds"),
        # Two different lengths: which one frames the body is ambiguous (response splitting).
        (OK + b"Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", "differing"),
        (OK + b"Content-Length: 3, 5\r\n\r\nabcde", "differing"),
        # A chunk size is hex digits only: no 0x prefix, sign or underscore.
        (OK + b"Transfer-Encoding: chunked\r\n\r\n0x10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", "chunk size"),
        (OK + b"Transfer-Encoding: chunked\r\n\r\n+10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", "chunk size"),
        (OK + b"Transfer-Encoding: chunked\r\n\r\n1_0\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", "chunk size"),
        # Both framings at once, or a coding the client does not decode.
        (OK + b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nab\r\n0\r\n\r\n", "both"),
        (OK + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", "Transfer-Encoding"),
        # A header section of 120 KB in lines of 2 KB: each line is short, the whole is not.
        (OK + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 2000) for i in range(60)) + b"\r\n", "section longer"),
        # Control characters, folded lines and space before the colon in field lines.
        (OK + b"X-A: a\x00b\r\nContent-Length: 2\r\n\r\nab", "malformed HTTP header"),
        (OK + b"X-A: a\rContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "malformed HTTP header"),
        (OK + b"X-A: a\r\n b: c\r\nContent-Length: 2\r\n\r\nab", "malformed HTTP header"),
        (OK + b"Content-Length : 2\r\n\r\nab", "malformed HTTP header"),
        # A status code of superscript digits.
        (b"HTTP/1.1 \xb2\xb2\xb2 OK\r\nContent-Length: 2\r\n\r\nab", "status line"),
        # A trailer section with a malformed line.
        (OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nno colon\r\n\r\n", "trailer"),
    ],
)
async def test_malformed_answers_raise_protocol_error(answer: bytes, match: str) -> None:
    async with serving(answer) as fake:
        with pytest.raises(ProtocolError, match=match):
            await request(fake.endpoint, "GET", "/", timeout=5, max_body=1024)


@pytest.mark.parametrize("depth", [100, 100_000])
async def test_deeply_nested_json_is_a_protocol_error(depth: int) -> None:
    body = b"[" * depth + b"]" * depth
    async with serving(OK + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)) as fake:
        reply = await request(fake.endpoint, "GET", "/", timeout=5)
    with pytest.raises(ProtocolError, match="deeper than 64"):
        reply.json()


async def test_identical_repeated_lengths_frame_the_body() -> None:
    async with serving(OK + b"Content-Length: 2\r\nContent-Length: 2, 2\r\n\r\nokTRAILING") as fake:
        assert (await request(fake.endpoint, "GET", "/", timeout=5)).body == b"ok"


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/admin\r\nX-Injected: 1", {}),
        ("GET", "/admin\nGET /other HTTP/1.1", {}),
        ("GET", "/a b", {}),
        ("GET", "/a\x00b", {}),
        ("GET /x HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "/", {}),
        ("GET", "/", {"Authorization": "Bearer secret\r\nX-Injected: 1"}),
        ("GET", "/", {"Authorization": "Bearer secret\nX-Injected: 1"}),
        ("GET", "/", {"Authorization": "Bearer secret\x00"}),
        ("GET", "/", {"X-Injected: 1\r\nAuthorization": "Bearer secret"}),
        ("GET", "/", {"Bad Name": "secret"}),
    ],
)
async def test_line_breaks_are_refused_before_anything_is_sent(method: str, path: str, headers: dict[str, str]) -> None:
    async with serving() as fake:
        with pytest.raises(ConfigurationError) as refused:
            await request(fake.endpoint, method, path, headers=headers, timeout=5)
        assert "secret" not in str(refused.value)  # a header's value may be a credential
        # The request was not sent: a connection made would have been accepted before the answer was read.
        assert fake.connections == 0


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/a b", "http://127.0.0.1:1/a\x00b", "http://h\x00st:1/"])
def test_base_urls_that_would_split_a_request_are_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="admin_url"):
        HttpEndpoint.parse(url)


async def test_the_registry_reads_a_deep_error_body_as_text() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    async with serving(b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)) as fake:
        registry = RegistryClient(f"http://127.0.0.1:{fake.endpoint.port}")
        with pytest.raises(RegistryError, match=r"HTTP 500: \[\[\["):
            await registry.schema(1)


def test_oauth2_reads_a_deep_answer_as_a_provider_error() -> None:
    with pytest.raises(AuthenticationError, match="other than JSON"):
        _json_object(b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
