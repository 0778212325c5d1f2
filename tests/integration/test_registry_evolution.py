"""Schema evolution through a real schema registry: payloads written by confluent-kafka's serializers and by
``mqwire.registry``'s at two registered versions, read with each version as the reader (and with none) by
both clients. Every value mqwire reads equals what confluent-kafka reads from the same bytes, or both raise
(mqwire with SchemaResolutionError naming both schema ids).

No broker: the registry's wire format is the same bytes whatever carries them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as TheirAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as TheirAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as TheirJsonDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as TheirJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as TheirProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as TheirProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict

from mqwire.registry import (
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    RegistryUnreachableError,
    SchemaNotFoundError,
    SchemaResolutionError,
    UnknownSchemaIdError,
    WireFormatError,
)
from mqwire.testing.endpoints import SchemaRegistry

pytestmark = pytest.mark.integration


def _record(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "Order", "namespace": "shop", "fields": list(fields)}


ID = {"name": "id", "type": "string"}
QTY = {"name": "qty", "type": "int"}


@dataclass(frozen=True)
class Evolution:
    """Two versions of a schema and values of each (dicts as the writers take them)."""

    name: str
    v1: dict[str, Any]
    v2: dict[str, Any]
    values1: list[dict[str, Any]]
    values2: list[dict[str, Any]]


AVRO_EVOLUTIONS = [
    Evolution(
        "field added with a default",
        _record(ID, QTY),
        _record(ID, QTY, {"name": "note", "type": "string", "default": "n/a"}),
        [{"id": "a", "qty": 1}, {"id": "b", "qty": -2}],
        [{"id": "c", "qty": 3, "note": "x"}, {"id": "d", "qty": 4, "note": ""}],
    ),
    Evolution(
        "field removed",
        _record(ID, QTY, {"name": "legacy", "type": "string"}),
        _record(ID, QTY),
        [{"id": "a", "qty": 1, "legacy": "old"}],
        [{"id": "c", "qty": 3}],
    ),
    Evolution(
        "field renamed with an alias",
        _record(ID, QTY),
        _record(ID, {"name": "quantity", "type": "int", "aliases": ["qty"]}),
        [{"id": "a", "qty": 7}],
        [{"id": "c", "quantity": 8}],
    ),
    Evolution(
        "int promoted to long",
        _record(ID, QTY),
        _record(ID, {"name": "qty", "type": "long"}),
        [{"id": "a", "qty": 2**31 - 1}, {"id": "b", "qty": -(2**31)}],
        [{"id": "c", "qty": 5}, {"id": "d", "qty": 2**40}],
    ),
]

JSON_V1 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["id", "qty"],
    "additionalProperties": False,
}
JSON_V2 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "number"}, "note": {"type": "string", "default": "n/a"}},
    "required": ["id"],
}
JSON_EVOLUTION = Evolution(
    "field added with a default, integer widened to number, a field made optional",
    JSON_V1,
    JSON_V2,
    [{"id": "a", "qty": 1}, {"id": "b", "qty": 2}],
    [{"id": "c", "qty": 1.5, "note": "x"}, {"id": "d", "qty": 4}, {"id": "e"}],
)

Outcome = tuple[str, Any]  # ("value", the value) or ("raises", None)


def outcome(read: Callable[..., Any], *args: Any) -> Outcome:
    try:
        return "value", read(*args)
    except Exception:
        return "raises", None


def subject_topic() -> str:
    return f"evolution-{uuid.uuid4().hex[:10]}"


def their_bytes(url: str, kind: str, topic: str, schema: dict[str, Any], values: list[dict[str, Any]]) -> list[bytes]:
    sr = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if kind == "avro":
        ser: Any = TheirAvroSerializer(sr, json.dumps(schema))
    else:
        ser = TheirJsonSerializer(json.dumps(schema), sr)
    return [ser(value, ctx) for value in values]


def their_reads(url: str, kind: str, topic: str, reader: dict[str, Any] | None, payloads: list[bytes]) -> list[Outcome]:
    sr = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    text = None if reader is None else json.dumps(reader)
    de: Any = (
        TheirAvroDeserializer(sr, text) if kind == "avro" else TheirJsonDeserializer(text, schema_registry_client=sr)
    )
    return [outcome(de, p, ctx) for p in payloads]


async def check_matrix(url: str, kind: str, evolution: Evolution) -> tuple[int, int]:
    """Both writers at both versions, both readers at v1, v2 and none; returns how many payloads were compared
    and how many of them both clients refused."""
    topic = subject_topic()
    registry = RegistryClient(url)
    payloads: list[tuple[str, list[bytes]]] = []
    for version, schema, values in (("v1", evolution.v1, evolution.values1), ("v2", evolution.v2, evolution.values2)):
        payloads.append(
            (f"confluent-kafka {version}", await asyncio.to_thread(their_bytes, url, kind, topic, schema, values))
        )
        ser: Any = (AvroSerializer if kind == "avro" else JsonSchemaSerializer)(registry, schema, topic=topic)
        await ser.prepare()
        payloads.append((f"mqwire {version}", [ser(value) for value in values]))
    compared = refused = 0
    for reader_name, reader in (("v1", evolution.v1), ("v2", evolution.v2), ("none", None)):
        ours: Any = (AvroDeserializer if kind == "avro" else JsonSchemaDeserializer)(registry, reader, topic=topic)
        await ours.prepare()
        for writer_name, written in payloads:
            theirs = await asyncio.to_thread(their_reads, url, kind, topic, reader, written)
            for data, their in zip(written, theirs, strict=True):
                try:
                    mine: Outcome = "value", ours(data)
                except SchemaResolutionError as err:
                    mine = "raises", None
                    assert err.writer_id == int.from_bytes(data[1:5], "big")
                    assert err.reader_id == ours.reader_schema_id is not None
                assert mine == their, f"{evolution.name}: {writer_name} read with reader {reader_name}"
                compared += 1
                refused += mine[0] == "raises"
    return compared, refused


@pytest.mark.parametrize("evolution", AVRO_EVOLUTIONS, ids=[e.name for e in AVRO_EVOLUTIONS])
async def test_avro_versions_resolve_as_confluent_kafka_resolves_them(
    schema_registry: SchemaRegistry, evolution: Evolution
) -> None:
    compared, refused = await check_matrix(schema_registry.url, "avro", evolution)
    assert compared == 3 * 2 * (len(evolution.values1) + len(evolution.values2))
    # v1 read as v2 always resolves; v2 read as v1 only when v1's fields are all still there
    assert refused == (0 if evolution is AVRO_EVOLUTIONS[0] else 2 * len(evolution.values2))


async def test_avro_resolution_both_ways_reads_defaults_aliases_and_promotions(
    schema_registry: SchemaRegistry,
) -> None:
    # The matrix compares with confluent-kafka; this pins what both read, so the matrix cannot pass by both
    # raising everywhere.
    evolution = AVRO_EVOLUTIONS[0]
    topic = subject_topic()
    registry = RegistryClient(schema_registry.url)
    [old] = await asyncio.to_thread(
        their_bytes, schema_registry.url, "avro", topic, evolution.v1, evolution.values1[:1]
    )
    newer = AvroDeserializer(registry, evolution.v2, topic=topic)
    await newer.prepare()
    assert newer(old) == {"id": "a", "qty": 1, "note": "n/a"}
    renamed, promoted = AVRO_EVOLUTIONS[2], AVRO_EVOLUTIONS[3]
    for evo, expected in ((renamed, {"id": "a", "quantity": 7}), (promoted, {"id": "a", "qty": 2**31 - 1})):
        topic = subject_topic()
        writer = AvroSerializer(registry, evo.v1, topic=topic)
        await writer.prepare()
        reader = AvroDeserializer(registry, evo.v2, topic=topic)
        await reader.prepare()
        assert reader(writer(evo.values1[0])) == expected
        newer_writer = AvroSerializer(registry, evo.v2, topic=topic)
        await newer_writer.prepare()
        back = AvroDeserializer(registry, evo.v1, topic=topic)
        await back.prepare()
        with pytest.raises(SchemaResolutionError) as caught:
            back(newer_writer(evo.values2[0]))
        assert (caught.value.writer_id, caught.value.reader_id) == (newer_writer.schema_id, writer.schema_id)
        assert (caught.value.writer_version, caught.value.reader_version) == (newer_writer.schema_id, writer.schema_id)
        assert f"id {newer_writer.schema_id}" in str(caught.value) and f"id {writer.schema_id}" in str(caught.value)


async def test_json_schema_versions_resolve_as_confluent_kafka_resolves_them(schema_registry: SchemaRegistry) -> None:
    compared, refused = await check_matrix(schema_registry.url, "json", JSON_EVOLUTION)
    assert compared == 3 * 2 * (len(JSON_EVOLUTION.values1) + len(JSON_EVOLUTION.values2))
    assert refused == 2 * 2  # two of v2's values read with v1 (a note and a float, no qty), from both writers


# ------------------------------------------------------------------------------------------------- Protobuf
def _proto(version: int) -> Any:
    """shop.Order v1 {id = 1, qty = 2 int32, legacy = 3}; v2 {id = 1, quantity = 2 int64, note = 4}."""
    kind = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name=f"evolution_v{version}.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=kind.TYPE_STRING)
    if version == 1:
        message.field.add(name="qty", number=2, type=kind.TYPE_INT32)
        message.field.add(name="legacy", number=3, type=kind.TYPE_STRING)
    else:
        message.field.add(name="quantity", number=2, type=kind.TYPE_INT64)
        message.field.add(name="note", number=4, type=kind.TYPE_STRING)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


ProtoV1, ProtoV2 = _proto(1), _proto(2)


def their_proto_bytes(url: str, topic: str, messages: list[Any]) -> list[bytes]:
    sr = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = TheirProtobufSerializer(type(messages[0]), sr, {"use.deprecated.format": False})
    return [ser(m, ctx) for m in messages]


def as_dict(deserializer: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """The deserialized message as a dict, for comparing messages of two classes."""
    return MessageToDict(deserializer(*args))


def their_proto_reads(reader: Any, topic: str, payloads: list[bytes]) -> list[Outcome]:
    de = TheirProtobufDeserializer(reader, {"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [outcome(as_dict, de, p, ctx) for p in payloads]


async def test_protobuf_versions_are_read_by_field_number_as_confluent_kafka_reads_them(
    schema_registry: SchemaRegistry,
) -> None:
    url = schema_registry.url
    registry = RegistryClient(url)
    topic = subject_topic()
    v1 = [ProtoV1(id="a", qty=-3, legacy="old")]
    v2 = [ProtoV2(id="c", quantity=2**40, note="x")]
    payloads: list[bytes] = []
    for messages in (v1, v2):
        payloads += await asyncio.to_thread(their_proto_bytes, url, topic, messages)
        ser = ProtobufSerializer(registry, type(messages[0]), topic=topic)
        await ser.prepare()
        payloads += [ser(m) for m in messages]
    for reader in (ProtoV1, ProtoV2):
        ours = ProtobufDeserializer(registry, reader, topic=topic)
        await ours.prepare()
        theirs = await asyncio.to_thread(their_proto_reads, reader, topic, payloads)
        assert [outcome(as_dict, ours, p) for p in payloads] == theirs
    newer = ProtobufDeserializer(registry, ProtoV2, topic=topic)
    await newer.prepare()
    assert MessageToDict(newer(payloads[0])) == {"id": "a", "quantity": str(-3)}  # field 2 by number


# ------------------------------------------------------------------------------------------------ bad input
async def test_unknown_ids_and_short_payloads_raise_typed_errors(schema_registry: SchemaRegistry) -> None:
    registry = RegistryClient(schema_registry.url)
    topic = subject_topic()
    evolution = AVRO_EVOLUTIONS[3]
    writer = AvroSerializer(registry, evolution.v2, topic=topic)
    schema_id = await writer.prepare()
    reader = AvroDeserializer(registry, evolution.v1, topic=topic)
    assert await reader.prepare() == [schema_id]
    good = writer({"id": "abc", "qty": 5})
    plain = AvroDeserializer(registry, topic=topic)
    await plain.prepare()
    assert plain(good) == {"id": "abc", "qty": 5}
    for cut in range(5, len(good)):  # every payload shorter than the record, header kept
        with pytest.raises(WireFormatError):
            plain(good[:cut])
    unknown = 2**31 - 7
    with pytest.raises(UnknownSchemaIdError) as caught:
        reader(bytes([0]) + unknown.to_bytes(4, "big") + good[5:])
    assert caught.value.schema_id == unknown
    with pytest.raises(SchemaNotFoundError):
        await reader.load(unknown)  # the registry does not know it either

    json_reader = JsonSchemaDeserializer(registry, JSON_V1, topic=f"{topic}-json")
    json_writer = JsonSchemaSerializer(registry, JSON_V1, topic=f"{topic}-json")
    await json_writer.prepare()
    await json_reader.prepare()
    whole = json_writer({"id": "a", "qty": 1})
    with pytest.raises(WireFormatError):
        json_reader(whole[:-1])

    silent = RegistryClient("http://127.0.0.1:9", timeout=5)  # nothing listens on the discard port
    async with asyncio.timeout(15):
        with pytest.raises(RegistryUnreachableError):
            await AvroDeserializer(silent, evolution.v1, topic=topic).prepare()
        with pytest.raises(RegistryUnreachableError):
            await AvroDeserializer(silent).load(schema_id)
