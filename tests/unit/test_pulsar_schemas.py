"""Pulsar schemas without a broker: definitions from dataclasses, encoding, and the schema option's checks."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

import pytest
from google.protobuf import descriptor_pb2

from pulsarwire.options import ConsumerConfig, ProducerConfig
from pulsarwire.protocol import commands
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field, schema_version_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata
from pulsarwire.schema import (
    AvroSchema,
    BytesSchema,
    Float32,
    Int32,
    JsonSchema,
    KeyValueSchema,
    ProtobufNativeSchema,
    ProtobufSchema,
    SchemaInfo,
    SchemaType,
    StringSchema,
    avro_definition,
)


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


@dataclass
class Line:
    sku: str
    count: Int32


@dataclass
class Order:
    id: str
    total: float
    ratio: Float32
    colour: Colour
    lines: list[Line]
    tags: dict[str, int]
    blob: bytes
    note: str | None = None
    urgent: bool = False
    extra: list[str] = field(default_factory=list)


ORDER = Order("o-1", 9.5, 0.5, Colour.BLUE, [Line("a", 2), Line("b", 3)], {"x": 1}, b"\x00\xff", None, True)


def test_a_dataclass_becomes_an_avro_record_definition() -> None:
    definition = avro_definition(Order, namespace="shop")
    assert definition["name"] == "Order" and definition["namespace"] == "shop"
    types = {f["name"]: f["type"] for f in definition["fields"]}
    assert types["id"] == "string" and types["total"] == "double" and types["ratio"] == "float"
    assert types["colour"] == {"type": "enum", "name": "Colour", "symbols": ["RED", "BLUE"]}
    assert types["lines"]["items"]["fields"][1] == {"name": "count", "type": "int"}
    assert types["tags"] == {"type": "map", "values": "long"}
    assert types["note"] == ["null", "string"]
    defaults = {f["name"]: f.get("default", "none") for f in definition["fields"]}
    assert defaults["note"] is None and defaults["urgent"] is False and defaults["id"] == "none"


@pytest.mark.parametrize("schema", [AvroSchema(Order), JsonSchema(Order)])
def test_records_round_trip(schema: AvroSchema[Order] | JsonSchema[Order]) -> None:
    assert schema.decode(schema.encode(ORDER)) == ORDER
    assert json.loads(schema.info.data) == schema.definition
    with pytest.raises(TypeError, match="cannot encode"):
        schema.encode(Line("a", 1))  # type: ignore[arg-type]


def test_a_class_that_is_not_a_dataclass_is_refused() -> None:
    with pytest.raises(TypeError, match="must be a dataclass"):
        AvroSchema(dict)
    with pytest.raises(TypeError, match="no Avro type"):

        @dataclass
        class Bad:
            when: complex

        JsonSchema(Bad)


def test_string_bytes_and_key_value() -> None:
    assert StringSchema().decode(StringSchema().encode("héllo")) == "héllo"
    assert BytesSchema().encode(bytearray(b"ab")) == b"ab"
    kv = KeyValueSchema(StringSchema(), JsonSchema(Line))
    payload = kv.encode(("k", Line("a", 1)))
    assert payload[:5] == b"\x00\x00\x00\x01k"
    assert kv.decode(payload) == ("k", Line("a", 1))
    assert kv.decode(kv.encode((None, Line("b", 2)))) == (None, Line("b", 2))  # type: ignore[arg-type]
    assert kv.info.type is SchemaType.KEY_VALUE and kv.info.properties["value.schema.type"] == "JSON"
    with pytest.raises(ValueError, match="ends inside"):
        kv.decode(payload[:-2])


def _proto_class() -> type:
    from google.protobuf import descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto(name="unit_order.proto", package="unit", syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    message.field.add(
        name="qty",
        number=2,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("unit.Order"))


def test_protobuf_definitions() -> None:
    cls = _proto_class()
    native = ProtobufNativeSchema(cls)
    definition = json.loads(native.info.data)
    assert definition["rootMessageTypeName"] == "unit.Order"
    assert definition["rootFileDescriptorName"] == "unit_order.proto"
    assert native.decode(native.encode(cls(id="a", qty=[1, 2]))) == cls(id="a", qty=[1, 2])
    shaped = json.loads(ProtobufSchema(cls).info.data)
    assert shaped["namespace"] == "unit"
    assert shaped["fields"][1] == {"name": "qty", "type": {"type": "array", "items": "long"}, "default": []}


def test_schema_option_checks_and_open_commands() -> None:
    schema = AvroSchema(Line)
    with pytest.raises(ValueError, match="schema or value_serializer"):
        ProducerConfig.build({"schema": schema, "value_serializer": bytes})
    with pytest.raises(TypeError, match=r"pulsarwire\.schema\.Schema"):
        ConsumerConfig.build({"group": "g", "schema": "AVRO"})
    info = ProducerConfig.build({"schema": schema}).schema_info
    assert isinstance(info, SchemaInfo)
    command = commands.producer("t", 1, 2, schema=info)
    assert command.producer.schema.type == SchemaType.AVRO and command.producer.schema.schema_data == info.data
    subscribe = commands.subscribe(
        "t", "s", 0, 1, 2, schema=ConsumerConfig.build({"group": "g", "schema": schema}).schema_info
    )
    assert SchemaInfo.from_proto(subscribe.subscribe.schema) == info


def test_the_schema_version_travels_in_the_metadata() -> None:
    version = (3).to_bytes(8, "big")
    raw = encode_message_metadata(producer_name_field("p") + schema_version_field(version), 7, 1000)
    parsed = MessageMetadata.FromString(raw)
    assert (parsed.producer_name, parsed.schema_version, parsed.sequence_id) == ("p", version, 7)
    assert schema_version_field(b"") == b""


@dataclass
class LineV2:
    sku: str
    count: Int32
    price: float = 0.0


def test_avro_reads_an_older_writer_with_its_schema() -> None:
    old, new = AvroSchema(Line), AvroSchema(LineV2, definition={**avro_definition(LineV2), "name": "Line"})
    data = old.encode(Line("a", 3))
    assert new.decode_with(data, old.info) == LineV2("a", 3, 0.0)
    with pytest.raises(ValueError, match="AVRO"):
        new.decode_with(data, StringSchema().info)
