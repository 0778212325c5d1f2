"""A small asyncio HTTP/1.1 client for JSON REST APIs (Pulsar admin, schema registries, OAuth2), bounded and timed.

Administration calls are rare, so each request opens its own connection (``Connection: close``) rather than
keeping a pool: nothing stays open between calls and a broker restart needs no reconnection logic. The whole
exchange runs under one deadline. Plain ``http://`` and ``https://`` (with the given SSL context) are
supported; the body may be sized by ``Content-Length``, chunked, or end with the connection.

The client is written here rather than taken from h11 or httpx on purpose: it reads one response per connection
and nothing else (no keep-alive, pipelining, upgrades or content codings), a few hundred lines whose grammar is
checked strictly in ``mqwire.common.http_syntax``; the limits a hostile server must not get past (header section,
body, JSON nesting) and the typed errors are this library's either way; and the three clients' base install
keeps its short list of dependencies, each argued, for a feature few applications use.

What a caller passes is checked before connecting: a method, path or header that could end a line early (CR,
LF, NUL or another control character) raises ConfigurationError and nothing is sent. What the server answers
is read strictly: anything malformed or over a limit raises ProtocolError, and a claimed length is compared
with the limit before anything is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl as _ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mqwire.common import bounded_json, http_syntax
from mqwire.common.errors import (
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    ProtocolError,
    RequestTimeoutError,
)

__all__ = ["HttpEndpoint", "Response", "request"]

_DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class HttpEndpoint:
    """Where requests go: scheme, host, port and the path prefix of a base URL such as ``http://host:8080``."""

    tls: bool
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, url: str, option: str = "admin_url") -> HttpEndpoint:
        """Check ``url`` (named ``option`` in errors): http or https, a host, an optional port and path.

        Raises ConfigurationError (a ValueError) when it is not such a URL or its host or path holds a space,
        a control character or non-ASCII text (percent-encode the path; give an IDN host in its ASCII form).
        """
        if not isinstance(url, str):
            raise TypeError(f"option {option} must be a str, not {type(url).__name__}")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"option {option} must be an http:// or https:// URL with a host, got {url!r}")
        try:
            port = parts.port
        except ValueError:
            raise ConfigurationError(f"option {option} has an invalid port: {url!r}") from None
        http_syntax.check_target(parts.hostname, f"the host of option {option}")
        prefix = parts.path.rstrip("/")
        if prefix:
            http_syntax.check_target(prefix, f"the path of option {option}")
        tls = parts.scheme == "https"
        return cls(tls, parts.hostname, port or (443 if tls else 80), prefix)

    @property
    def host_header(self) -> str:
        """The value of the ``Host`` header: the host (bracketed if IPv6), with the port unless it is the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.tls else 80) else f"{host}:{self.port}"


@dataclass(frozen=True)
class Response:
    """A status code and the body as received."""

    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        """Whether the status is a 2xx."""
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body parsed as JSON (None when empty); ProtocolError when it is not JSON or nests too deep."""
        if not self.body:
            return None
        return bounded_json.loads(self.body, what=f"the body of the HTTP {self.status} response")

    def text(self, limit: int = 500) -> str:
        """The start of the body as text, for error messages."""
        return self.body[:limit].decode("utf-8", errors="replace")


async def request(
    endpoint: HttpEndpoint,
    method: str,
    path: str,
    *,
    body: Any = None,
    form: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float,
    ssl: _ssl.SSLContext | None = None,
    max_body: int = _DEFAULT_MAX_BODY,
) -> Response:
    """Send one request (``body`` as JSON, or ``form`` URL-encoded, when given); read the whole response within
    ``timeout`` seconds.

    Raises ConfigurationError, before connecting, when ``method``, ``path`` (already percent-encoded) or a
    header name or value holds a space where none may be, a line break, NUL or other control character;
    ConnectError when the connection cannot be made, ConnectionLostError when it drops before the response is
    complete, RequestTimeoutError after ``timeout`` and ProtocolError for a malformed or oversized response.
    HTTP error statuses are returned, not raised.
    """
    target = endpoint.prefix + path or "/"
    if params:
        target += "?" + urllib.parse.urlencode(params)
    if body is not None and form is not None:
        raise ConfigurationError("a request has a JSON body or a form, not both")
    data = b"" if body is None else json.dumps(body).encode()
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
    fields = [
        ("Host", endpoint.host_header),
        ("Accept", "application/json"),
        ("Connection", "close"),
        ("Content-Length", str(len(data))),
    ]
    if body is not None:
        fields.append(("Content-Type", "application/json"))
    elif form is not None:
        fields.append(("Content-Type", "application/x-www-form-urlencoded"))
    fields.extend((headers or {}).items())
    head = http_syntax.request_head(method, target, fields)
    context = (ssl or _ssl.create_default_context()) if endpoint.tls else None
    try:
        async with asyncio.timeout(timeout):
            try:
                reader, writer = await asyncio.open_connection(
                    endpoint.host, endpoint.port, ssl=context, limit=http_syntax.MAX_LINE + 2
                )
            except OSError as exc:
                raise ConnectError(f"cannot connect to {endpoint.host}:{endpoint.port}: {exc}") from exc
            try:
                writer.write(head + data)
                await writer.drain()
                return await _read_response(reader, method, max_body)
            except (OSError, asyncio.IncompleteReadError) as exc:
                raise ConnectionLostError(f"{method} {target}: connection lost: {exc!r}") from exc
            finally:
                writer.close()
                with contextlib.suppress(OSError, asyncio.TimeoutError):
                    await writer.wait_closed()
    except TimeoutError:
        raise RequestTimeoutError(f"{method} {target}: no complete response within {timeout:g} s") from None


async def _line(reader: asyncio.StreamReader) -> bytes:
    """One line without its ending (CRLF, or a bare LF as RFC 9112 lets a recipient accept)."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"HTTP line longer than {http_syntax.MAX_LINE} bytes") from None
    return line[:-2] if line.endswith(b"\r\n") else line[:-1]


async def _section(reader: asyncio.StreamReader, what: str) -> http_syntax.FieldSection:
    """Field lines up to the empty line that ends them."""
    fields = http_syntax.FieldSection(what)
    while line := await _line(reader):
        fields.add(line)
    return fields


async def _read_response(reader: asyncio.StreamReader, method: str, max_body: int) -> Response:
    status = http_syntax.status_code(await _line(reader))
    fields = await _section(reader, "header")
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Response(status, b"")
    if http_syntax.is_chunked(fields):
        return Response(status, await _chunked(reader, max_body))
    size = http_syntax.body_length(fields, max_body)
    if size is not None:
        return Response(status, await reader.readexactly(size))
    # Neither: the body ends with the connection (we asked for Connection: close).
    data = await reader.read(max_body + 1)
    body = bytearray(data)
    while data and len(body) <= max_body:
        data = await reader.read(max_body + 1 - len(body))
        body += data
    if len(body) > max_body:
        raise ProtocolError(f"response body exceeds the limit of {max_body} bytes")
    return Response(status, bytes(body))


async def _chunked(reader: asyncio.StreamReader, max_body: int) -> bytes:
    body = bytearray()
    extensions = 0  # ignored, but not without bound
    while True:
        size, extension = http_syntax.chunk_size(await _line(reader))
        extensions += extension
        if extensions > http_syntax.MAX_SECTION:
            raise ProtocolError(f"chunk extensions longer than {http_syntax.MAX_SECTION} bytes in all")
        if len(body) + size > max_body:
            raise ProtocolError(f"response body exceeds the limit of {max_body} bytes")
        if size == 0:
            await _section(reader, "trailer")
            return bytes(body)
        body += await reader.readexactly(size)
        if await _line(reader):
            raise ProtocolError("chunk not followed by CRLF")
