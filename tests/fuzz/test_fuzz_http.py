"""Property tests over the admin HTTP client's response reader and JSON decoder: only typed errors may escape.

Responses are random bytes and mutations of real answers (Content-Length, chunked, close-delimited), read the
way ``request`` reads them: a truncated answer may end in IncompleteReadError (which ``request`` reports as
ConnectionLostError), anything else malformed in ProtocolError. ``MQWIRE_FUZZ_EXAMPLES`` sets the examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from hypothesis import example, given
from hypothesis import strategies as st

from mqwire.common import bounded_json, http_syntax
from mqwire.common.errors import ProtocolError
from mqwire.common.http import Response, _read_response
from tests.fuzz.test_fuzz_decoders import FUZZ, wire_input

_BODY = json.dumps({"reason": "Topic not found", "list": [1, [2, {"x": None}]]}).encode()
RESPONSES = [
    b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\n"
    + _BODY[:5]
    + b"\r\n%x\r\n" % (len(_BODY) - 5)
    + _BODY[5:]
    + b"\r\n0\r\nX-Trailer: 1\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\n" + _BODY,
    b"HTTP/1.1 204 No Content\r\n\r\n",
]


def _read(data: bytes) -> Response | None:
    async def read() -> Response | None:
        reader = asyncio.StreamReader(limit=http_syntax.MAX_LINE + 2)
        reader.feed_data(data)
        reader.feed_eof()
        try:
            return await _read_response(reader, "GET", 4096)
        except (ProtocolError, asyncio.IncompleteReadError):
            return None

    return asyncio.run(read())


@FUZZ
@given(data=wire_input(RESPONSES))
@example(data=b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nab")
@example(data=b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n")
@example(data=b"HTTP/1.1 \xb2\xb2\xb2 OK\r\n\r\n")
def test_http_response_reader(data: bytes) -> None:
    reply = _read(data)
    if reply is not None:
        assert len(reply.body) <= 4096
        with contextlib.suppress(ProtocolError):
            reply.json()


@FUZZ
@given(data=st.one_of(wire_input([_BODY, b"[" * 70 + b"]" * 70]), st.binary(max_size=256)))
@example(data=b"[" * 100_000 + b"]" * 100_000)
def test_bounded_json(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        bounded_json.loads(data)
