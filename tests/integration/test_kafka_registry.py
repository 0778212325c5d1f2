"""Registry serializers on a real Kafka broker and a real schema registry (Apicurio Registry, the
``schema_registry`` fixture), proven against confluent-kafka's own serializers both ways."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as TheirAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as TheirAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as TheirJsonDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as TheirJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as TheirProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as TheirProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import kafkawire
from mqwire.common.errors import DeserializationError
from mqwire.registry import (
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    RegistryUnreachableError,
    UnknownSchemaIdError,
    WireFormatError,
)
from mqwire.testing.endpoints import KafkaBroker, SchemaRegistry

pytestmark = pytest.mark.integration


@dataclasses.dataclass
class Order:
    id: str
    qty: int


ORDERS = [Order(f"o-{i}", i) for i in range(4)]
AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
}
JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["id", "qty"],
}


def _proto_order() -> Any:
    file = descriptor_pb2.FileDescriptorProto(name="mqwire_test_order.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    message.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


ProtoOrder = _proto_order()


def as_proto(order: Order) -> Any:
    return ProtoOrder(id=order.id, qty=order.qty)


def from_proto(message: Any) -> Order:
    return Order(message.id, message.qty)


@pytest_asyncio.fixture(loop_scope="function")
async def client(kafka_broker: KafkaBroker) -> AsyncIterator[kafkawire.Client]:
    async with kafkawire.connect(kafka_broker.url) as connected:
        yield connected


async def new_topic(client: kafkawire.Client) -> str:
    name = f"registry-{uuid.uuid4().hex[:10]}"
    async with client.admin() as admin:
        await admin.create_topic(name, partitions=1)
    return name


async def through_kafka(
    client: kafkawire.Client,
    topic: str,
    values: list[Any],
    serializer: Callable[[Any], bytes],
    deserializer: Any = None,
) -> list[Any]:
    """``values`` written with ``serializer`` and read back with ``deserializer`` (raw bytes without one)."""
    async with client.producer(topic, value_serializer=serializer) as producer:
        for value in values:
            await producer.send(value)
    out = []
    async with client.consumer(topic, start="earliest", value_deserializer=deserializer) as consumer:
        async with asyncio.timeout(30):
            while len(out) < len(values):
                out.append((await consumer.receive()).value)
    return out


def theirs(registry_url: str, kind: str, topic: str) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """confluent-kafka's serializer and deserializer of ``kind``, bound to ``topic``'s value."""
    sr = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if kind == "avro":
        ser = TheirAvroSerializer(sr, json.dumps(AVRO), lambda o, c: dataclasses.asdict(o))
        de = TheirAvroDeserializer(sr, from_dict=lambda d, c: Order(**d))
    elif kind == "json":
        ser = TheirJsonSerializer(json.dumps(JSON_SCHEMA), sr, lambda o, c: dataclasses.asdict(o))
        de = TheirJsonDeserializer(json.dumps(JSON_SCHEMA), from_dict=lambda d, c: Order(**d))
    else:
        ser = TheirProtobufSerializer(ProtoOrder, sr, {"use.deprecated.format": False})
        proto_de = TheirProtobufDeserializer(ProtoOrder, {"use.deprecated.format": False})

        def de(data: bytes, c: Any = None) -> Any:
            return from_proto(proto_de(data, ctx))

        return lambda o: ser(as_proto(o), ctx), de
    return (lambda o: ser(o, ctx)), (lambda data: de(data, ctx))


def ours(registry: RegistryClient, kind: str, topic: str) -> tuple[Any, Any]:
    if kind == "avro":
        return (
            AvroSerializer(registry, AVRO, topic=topic, to_dict=dataclasses.asdict),
            AvroDeserializer(registry, topic=topic, from_dict=lambda d: Order(**d)),
        )
    if kind == "json":
        return (
            JsonSchemaSerializer(registry, JSON_SCHEMA, topic=topic, to_dict=dataclasses.asdict),
            JsonSchemaDeserializer(registry, topic=topic, from_dict=lambda d: Order(**d)),
        )
    return ProtobufSerializer(registry, ProtoOrder, topic=topic), ProtobufDeserializer(
        registry, ProtoOrder, topic=topic
    )


@pytest.mark.parametrize("kind", ["avro", "json", "protobuf"])
async def test_confluent_serializer_to_kafkawire_deserializer(
    client: kafkawire.Client, schema_registry: SchemaRegistry, kind: str
) -> None:
    topic = await new_topic(client)
    their_ser, _ = await asyncio.to_thread(theirs, schema_registry.url, kind, topic)
    encoded = [await asyncio.to_thread(their_ser, o) for o in ORDERS]
    _, deserializer = ours(RegistryClient(schema_registry.url), kind, topic)
    assert await deserializer.prepare()  # the id confluent-kafka registered
    got = await through_kafka(client, topic, encoded, bytes, deserializer)
    if kind == "protobuf":
        got = [from_proto(m) for m in got]
    assert got == ORDERS


@pytest.mark.parametrize("kind", ["avro", "json", "protobuf"])
async def test_kafkawire_serializer_to_confluent_deserializer(
    client: kafkawire.Client, schema_registry: SchemaRegistry, kind: str
) -> None:
    topic = await new_topic(client)
    serializer, _ = ours(RegistryClient(schema_registry.url), kind, topic)
    await serializer.prepare()
    values = [as_proto(o) for o in ORDERS] if kind == "protobuf" else ORDERS
    raw = await through_kafka(client, topic, values, serializer)
    _, their_de = await asyncio.to_thread(theirs, schema_registry.url, kind, topic)
    got = [await asyncio.to_thread(their_de, data) for data in raw]
    assert got == ORDERS


async def test_bad_payloads_raise_with_the_position_and_are_held(
    client: kafkawire.Client, schema_registry: SchemaRegistry
) -> None:
    topic = await new_topic(client)
    registry = RegistryClient(schema_registry.url)
    serializer, deserializer = ours(registry, "avro", topic)
    await serializer.prepare()
    good = serializer(ORDERS[0])
    other = AvroSerializer(registry, {**AVRO, "name": "Other"}, topic=f"{topic}-other", to_dict=dataclasses.asdict)
    await other.prepare()
    payloads = [b"\x01" + good[1:], other(ORDERS[1]), good[:5] + b"\xff", good]
    async with client.producer(topic) as producer:
        for payload in payloads:
            await producer.send(payload)
    await deserializer.prepare()  # loads the topic's subject only: the other subject's id stays unknown
    async with client.consumer(topic, start="earliest", value_deserializer=deserializer) as consumer:
        causes: list[type[BaseException]] = []
        for offset in range(3):
            with pytest.raises(DeserializationError) as caught:
                await consumer.receive(timeout=30)
            error = caught.value
            assert (error.topic, error.partition, error.position) == (topic, 0, offset)
            causes.append(type(error.__cause__))
            if offset == 1:
                assert isinstance(error.__cause__, UnknownSchemaIdError)
                await deserializer.load(error.__cause__.schema_id)  # then the held message decodes
                assert (await consumer.receive(timeout=5)).value == ORDERS[1]
                continue
            consumer.skip(error.message)
        # the third ends inside its first field: the library's own error, not the decoder's EOFError
        assert causes == [WireFormatError, UnknownSchemaIdError, WireFormatError]
        assert (await consumer.receive(timeout=10)).value == ORDERS[0]


async def test_unreachable_registry_fails_fast_naming_the_url_without_credentials() -> None:
    registry = RegistryClient("http://alice:s3cret@127.0.0.1:9/prefix", timeout=5)
    serializer = AvroSerializer(registry, AVRO, topic="t")
    async with asyncio.timeout(10):
        with pytest.raises(RegistryUnreachableError) as caught:
            await serializer.prepare()
    assert "http://127.0.0.1:9/prefix" in str(caught.value)
    assert "s3cret" not in str(caught.value) and "alice" not in str(caught.value)
