"""Registry deserializers without a registry: the writer's schema by the payload's id resolved to the reader's,
and typed errors for what cannot be read (the registry's own tests are in tests/integration)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from mqwire.registry import (
    AvroDeserializer,
    JsonSchemaDeserializer,
    ProtobufDeserializer,
    RegisteredSchema,
    RegistryClient,
    SchemaNotFoundError,
    SchemaResolutionError,
    WireFormatError,
)
from mqwire.registry.wire import frame

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}
V2 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "quantity", "type": "long", "aliases": ["qty"]},
        {"name": "note", "type": "string", "default": "n/a"},
    ],
}


class Held(RegistryClient):
    """A registry client answering ``schema(id)`` from a dict."""

    def __init__(self, schemas: dict[int, RegisteredSchema]) -> None:
        super().__init__("http://127.0.0.1:9")
        self.held = schemas

    async def schema(self, schema_id: int) -> RegisteredSchema:
        if schema_id not in self.held:
            raise SchemaNotFoundError(f"schema {schema_id} not found", status=404, code=40403)
        return self.held[schema_id]


def avro(schema: dict[str, Any], value: dict[str, Any], schema_id: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return frame(schema_id, out.getvalue())


REGISTRY = Held({1: RegisteredSchema(1, json.dumps(V1)), 2: RegisteredSchema(2, json.dumps(V2))})


async def test_avro_writer_schema_is_resolved_to_the_reader_schema() -> None:
    newer = AvroDeserializer(REGISTRY, V2)
    await newer.load(1)
    assert newer(avro(V1, {"id": "a", "qty": 7}, 1)) == {"id": "a", "quantity": 7, "note": "n/a"}
    older = AvroDeserializer(REGISTRY, V1)
    await older.load(2)
    with pytest.raises(SchemaResolutionError) as caught:
        older(avro(V2, {"id": "a", "quantity": 7, "note": "x"}, 2))  # v1's qty is in no field of v2's
    assert (caught.value.writer_id, caught.value.reader_id) == (2, None)
    assert "writer schema id 2" in str(caught.value)
    plain = AvroDeserializer(REGISTRY)
    await plain.load(2)
    assert plain(avro(V2, {"id": "a", "quantity": 7, "note": "x"}, 2)) == {"id": "a", "quantity": 7, "note": "x"}


async def test_avro_payload_shorter_than_its_record_is_a_wire_format_error() -> None:
    reader = AvroDeserializer(REGISTRY, V2)
    await reader.load(1)
    whole = avro(V1, {"id": "abcdef", "qty": 300}, 1)
    for cut in range(5, len(whole)):
        with pytest.raises(WireFormatError):
            reader(whole[:cut])
    with pytest.raises(SchemaNotFoundError):
        await reader.load(3)


async def test_json_values_are_validated_against_the_reader_schema() -> None:
    writer = {"type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "number"}}}
    reader_schema = {**writer, "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}}}
    registry = Held({5: RegisteredSchema(5, json.dumps(writer), "JSON")})
    reader = JsonSchemaDeserializer(registry, reader_schema)
    await reader.load(5)
    assert reader(frame(5, b'{"id":"a","qty":2}')) == {"id": "a", "qty": 2}
    with pytest.raises(SchemaResolutionError) as caught:
        reader(frame(5, b'{"id":"a","qty":2.5}'))
    assert caught.value.writer_id == 5 and "2.5" in caught.value.reason
    with pytest.raises(WireFormatError):
        reader(frame(5, b'{"id":"a","qty":2'))


async def test_protobuf_payload_that_does_not_parse_is_a_wire_format_error() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="resolution_order.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    registry = Held({9: RegisteredSchema(9, "", "PROTOBUF")})
    reader = ProtobufDeserializer(registry, order)
    await reader.load(9)
    whole = frame(9, b"\x00" + order(id="abc").SerializeToString())
    assert reader(whole).id == "abc"
    with pytest.raises(WireFormatError):
        reader(whole[:-1])  # the string's length says 3 bytes, 2 follow
