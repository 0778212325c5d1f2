"""The registry's wire format and the REST client's failures, without a broker."""

from __future__ import annotations

import pytest

from mqwire.registry import RegistryClient, WireFormatError
from mqwire.registry.errors import SchemaNotFoundError
from mqwire.registry.naming import record_name, topic_name, topic_record_name
from mqwire.registry.wire import decode_indexes, encode_indexes, frame, unframe
from mqwire.testing.registry import RestSubsetRegistry


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


async def test_basic_auth_and_lookup_through_the_rest_subset_stand_in() -> None:
    with RestSubsetRegistry(basic_auth="alice:secret") as server:
        host = server.url.removeprefix("http://")
        refused = RegistryClient(server.url)
        with pytest.raises(Exception, match="HTTP 401"):
            await refused.subjects()
        registry = RegistryClient(f"http://alice:secret@{host}")
        assert registry.url == server.url  # credentials are not kept in the URL shown in errors
        first = await registry.register("t-value", '{"type": "string"}')
        again = await registry.register("u-value", '{"type":"string"}')
        assert first.schema_id == again.schema_id
        found = await registry.lookup("t-value", '{"type": "string"}')
        assert (found.schema_id, found.version) == (first.schema_id, 1)
        assert (await registry.latest("u-value")).schema_id == first.schema_id
        with pytest.raises(SchemaNotFoundError):
            await registry.schema(99)
