"""A small asyncio HTTP/1.1 client for JSON REST APIs (Pulsar admin, schema registries), bounded and timed.

Administration calls are rare, so each request opens its own connection (``Connection: close``) rather than
keeping a pool: nothing stays open between calls and a broker restart needs no reconnection logic. Status
line, headers and body are bounded (a peer cannot make us buffer without limit) and the whole exchange runs
under one deadline. Plain ``http://`` and ``https://`` (with the given SSL context) are supported; the body
may be sized by ``Content-Length``, chunked, or end with the connection.
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

from mqwire.common.errors import ConnectError, ConnectionLostError, ProtocolError, RequestTimeoutError

__all__ = ["HttpEndpoint", "Response", "request"]

_MAX_LINE = 8 * 1024
_MAX_HEADERS = 100
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
        """Check ``url`` (named ``option`` in errors): http or https, a host, an optional port and path."""
        if not isinstance(url, str):
            raise TypeError(f"option {option} must be a str, not {type(url).__name__}")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"option {option} must be an http:// or https:// URL with a host, got {url!r}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"option {option} has an invalid port: {url!r}") from None
        tls = parts.scheme == "https"
        return cls(tls, parts.hostname, port or (443 if tls else 80), parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
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
        """The body parsed as JSON (None when empty)."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ProtocolError(f"HTTP {self.status}: the body is not JSON ({exc})") from None

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

    Raises ConnectError when the connection cannot be made, ConnectionLostError when it drops before the
    response is complete, RequestTimeoutError after ``timeout`` and ProtocolError for a malformed or
    oversized response. HTTP error statuses are returned, not raised.
    """
    target = endpoint.prefix + path
    if params:
        target += "?" + urllib.parse.urlencode(params)
    if body is not None and form is not None:
        raise ValueError("a request has a JSON body or a form, not both")
    data = b"" if body is None else json.dumps(body).encode()
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
    lines = [
        f"{method} {target} HTTP/1.1",
        f"Host: {endpoint.host_header}",
        "Accept: application/json",
        "Connection: close",
        f"Content-Length: {len(data)}",
    ]
    if body is not None:
        lines.append("Content-Type: application/json")
    elif form is not None:
        lines.append("Content-Type: application/x-www-form-urlencoded")
    for name, value in (headers or {}).items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError(f"header {name!r} contains a line break")
        lines.append(f"{name}: {value}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    context = (ssl or _ssl.create_default_context()) if endpoint.tls else None
    try:
        async with asyncio.timeout(timeout):
            try:
                reader, writer = await asyncio.open_connection(
                    endpoint.host, endpoint.port, ssl=context, limit=_MAX_LINE + 2
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
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"HTTP line longer than {_MAX_LINE} bytes") from None
    return line.rstrip(b"\r\n")


async def _read_response(reader: asyncio.StreamReader, method: str, max_body: int) -> Response:
    status_line = (await _line(reader)).decode("latin-1")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:100]!r}")
    status = int(code)
    fields: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        line = await _line(reader)
        if not line:
            break
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise ProtocolError(f"malformed HTTP header line: {line[:100]!r}")
        fields[name.strip().lower()] = value.strip()
    else:
        raise ProtocolError(f"more than {_MAX_HEADERS} HTTP header lines")
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Response(status, b"")
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return Response(status, await _chunked(reader, max_body))
    length = fields.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise ProtocolError(f"invalid Content-Length {length[:40]!r}")
        size = int(length)
        if size > max_body:
            raise ProtocolError(f"response body of {size} bytes exceeds the limit of {max_body}")
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
    while True:
        size_text = (await _line(reader)).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(f"invalid chunk size {size_text[:40]!r}") from None
        if size < 0 or len(body) + size > max_body:
            raise ProtocolError(f"response body exceeds the limit of {max_body} bytes")
        if size == 0:
            # Trailer fields, if any, end with an empty line.
            for _ in range(_MAX_HEADERS + 1):
                if not await _line(reader):
                    return bytes(body)
            raise ProtocolError(f"more than {_MAX_HEADERS} HTTP trailer lines")
        body += await reader.readexactly(size)
        if await _line(reader):
            raise ProtocolError("chunk not followed by CRLF")
