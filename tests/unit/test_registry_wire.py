"""The registry's wire format, subject names and the REST client's HTTP handling, without a registry.

The HTTP tests use a one-request fake server (asyncio) that records what the client sent and answers a fixed
status: they check the headers and the error mapping only; the registry itself is exercised for real in
tests/integration/test_kafka_registry.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from mqwire.common.errors import ConfigurationError
from mqwire.registry import RegistryClient, RegistryError, SchemaNotFoundError, WireFormatError
from mqwire.registry.naming import record_name, topic_name, topic_record_name
from mqwire.registry.wire import decode_indexes, encode_indexes, frame, unframe


def test_frame_round_trip_and_bad_headers() -> None:
    data = frame(258, b"body")
    assert data[:5] == b"\x00\x00\x00\x01\x02"
    schema_id, body = unframe(data)
    assert (schema_id, bytes(body)) == (258, b"body")
    with pytest.raises(WireFormatError, match="magic byte 1"):
        unframe(b"\x01" + data[1:])
    with pytest.raises(WireFormatError, match="too short"):
        unframe(b"\x00\x00\x00")


@pytest.mark.parametrize("path", [[0], [1], [0, 2], [3, 0, 70]])
def test_message_indexes_round_trip(path: list[int]) -> None:
    encoded = encode_indexes(path)
    assert decode_indexes(memoryview(encoded + b"rest")) == (path, memoryview(b"rest"))


def test_message_indexes_zigzag_encoding_and_truncation() -> None:
    assert encode_indexes([0]) == b"\x00"  # the common case in one byte
    assert encode_indexes([1]) == b"\x02\x02"  # count 1, index 1, both zigzag
    with pytest.raises(WireFormatError):
        decode_indexes(memoryview(b"\x04\x02"))  # two indexes announced, one given
    with pytest.raises(WireFormatError):
        decode_indexes(memoryview(b"\x80"))


def test_subject_name_strategies() -> None:
    assert topic_name("orders", "value", "shop.Order") == "orders-value"
    assert record_name("orders", "value", "shop.Order") == "shop.Order"
    assert topic_record_name("orders", "key", "shop.Order") == "orders-shop.Order"
    with pytest.raises(ValueError, match="needs option topic"):
        topic_name(None, "value", None)


@asynccontextmanager
async def one_answer(status: int, body: object) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A server on a free port that records each request's head and answers ``status`` with ``body``."""
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(data), data))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"127.0.0.1:{port}", heads


async def test_basic_auth_from_the_url_is_sent_and_never_shown() -> None:
    async with one_answer(200, {"id": 7}) as (address, heads):
        registry = RegistryClient(f"http://alice:s%40cret@{address}/base")
        assert registry.url == f"http://{address}/base"
        assert (await registry.register("t-value", '{"type": "string"}')).schema_id == 7
        assert (await registry.register("t-value", '{"type":"string"}')).schema_id == 7  # from the cache
    assert len(heads) == 1
    head = heads[0].decode()
    assert head.startswith("POST /base/subjects/t-value/versions HTTP/1.1")
    assert "Authorization: Basic " + base64.b64encode(b"alice:s@cret").decode() in head
    with pytest.raises(ConfigurationError, match="not both"):
        RegistryClient(f"http://a:b@{address}", basic_auth="c:d")
    with pytest.raises(ConfigurationError, match="user:password"):
        RegistryClient(f"http://{address}", basic_auth="nocolon")


async def test_error_statuses_are_typed() -> None:
    async with one_answer(404, {"error_code": 40403, "message": "Schema not found"}) as (address, _):
        with pytest.raises(SchemaNotFoundError, match="Schema not found") as missing:
            await RegistryClient(f"http://{address}").schema(99)
    assert missing.value.code == 40403
    async with one_answer(409, {"error_code": 409, "message": "incompatible"}) as (address, _):
        with pytest.raises(RegistryError, match="HTTP 409") as refused:
            await RegistryClient(f"http://{address}").register("s", "{}")
    assert not isinstance(refused.value, SchemaNotFoundError)
