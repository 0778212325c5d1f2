"""Pulsar schemas against the broker's registry and pulsar-client: AVRO and JSON both ways, refusal, GetSchema."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

import pulsar
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from pulsar.schema import AvroSchema as TheirAvro
from pulsar.schema import Double, Integer, Record, String
from pulsar.schema import JsonSchema as TheirJson
from pulsar.schema import ProtobufNativeSchema as TheirProtobufNative

import pulsarwire
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.schema import (
    AvroSchema,
    Int32,
    JsonSchema,
    KeyValueSchema,
    ProtobufNativeSchema,
    ProtobufSchema,
    SchemaType,
    StringSchema,
)

pytestmark = pytest.mark.integration


def _proto_order() -> Any:
    file = descriptor_pb2.FileDescriptorProto(name="pulsar_schema_order.proto", package="shop", syntax="proto3")
    message = file.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    message.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


ProtoOrder = _proto_order()


@dataclass
class Order:
    id: str
    amount: float
    qty: Int32
    note: str | None = None


# pulsar-client's record of the same shape: required fields, and a nullable note.
TheirOrder: Any = type(
    "Order",
    (Record,),
    {"id": String(required=True), "amount": Double(required=True), "qty": Integer(required=True), "note": String()},
)

ORDERS = [Order(f"o-{i}", i * 1.5, i, None if i % 2 else f"note {i}") for i in range(5)]


def topic() -> str:
    return f"persistent://public/default/schema-{uuid.uuid4().hex[:10]}"


def their_schema(kind: str) -> Any:
    return TheirAvro(TheirOrder) if kind == "avro" else TheirJson(TheirOrder)


def our_schema(kind: str) -> Any:
    return AvroSchema(Order) if kind == "avro" else JsonSchema(Order)


@pytest.mark.parametrize("kind", ["avro", "json"])
async def test_pulsar_client_writes_pulsarwire_reads(pulsar_broker: PulsarBroker, kind: str) -> None:
    name = topic()

    def produce() -> None:
        theirs = pulsar.Client(pulsar_broker.url)
        try:
            producer = theirs.create_producer(name, schema=their_schema(kind))
            for order in ORDERS:
                producer.send(TheirOrder(id=order.id, amount=order.amount, qty=order.qty, note=order.note))
            producer.close()
        finally:
            theirs.close()

    # Subscribing first creates the topic with our schema; pulsar-client's must then be accepted as the same.
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(name, group="g", schema=our_schema(kind), start="earliest") as consumer,
    ):
        await asyncio.to_thread(produce)
        got = []
        async with asyncio.timeout(30):
            for _ in ORDERS:
                message = await consumer.receive()
                got.append(message.value)
                await consumer.ack(message)
    assert got == ORDERS


@pytest.mark.parametrize("kind", ["avro", "json"])
async def test_pulsarwire_writes_pulsar_client_reads(pulsar_broker: PulsarBroker, kind: str) -> None:
    name = topic()
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        consumer = await asyncio.to_thread(theirs.subscribe, name, "g", schema=their_schema(kind))
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.producer(name, schema=our_schema(kind)) as producer,
        ):
            for order in ORDERS:
                await producer.send(order)

        def consume() -> list[Any]:
            out = []
            for _ in ORDERS:
                message = consumer.receive(timeout_millis=30_000)
                value = message.value()
                out.append(Order(value.id, value.amount, value.qty, value.note))
                consumer.acknowledge(message)
            return out

        got = await asyncio.to_thread(consume)
    finally:
        theirs.close()
    assert got == ORDERS


@dataclass
class OrderV2:
    id: int  # was a string: no compatibility strategy but ALWAYS_COMPATIBLE accepts this
    amount: float


async def test_incompatible_schema_is_refused_at_creation_and_nothing_is_written(pulsar_broker: PulsarBroker) -> None:
    name = topic()
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(name, schema=AvroSchema(Order)) as producer:
            await producer.send(ORDERS[0])
        incompatible = AvroSchema(OrderV2, definition={**AvroSchema(OrderV2).definition, "name": "Order"})
        with pytest.raises(pulsarwire.IncompatibleSchemaError):
            async with client.producer(name, schema=incompatible) as refused:
                await refused.send(OrderV2(1, 2.0))
        # Only the one message of the compatible producer is on the topic.
        async with client.reader(name, start="earliest", schema=AvroSchema(Order)) as reader:
            first = await reader.receive(timeout=10)
            assert first.value == ORDERS[0]
            with pytest.raises(pulsarwire.ReceiveTimeoutError):
                await reader.receive(timeout=2)


async def test_get_schema_returns_the_writers_schema_and_its_version(pulsar_broker: PulsarBroker) -> None:
    name = topic()
    async with pulsarwire.connect(pulsar_broker.url) as client:
        assert await client.get_schema(name) is None
        schema = AvroSchema(Order)
        async with client.producer(name, schema=schema) as producer:
            await producer.send(ORDERS[1])
        async with client.reader(name, start="earliest") as reader:
            written = await reader.receive(timeout=10)
        assert written.schema_version == 0  # the version travels with the message
        registered = await client.get_schema(name, version=written.schema_version)
        assert registered is not None
        assert registered.info.type is SchemaType.AVRO
        assert json.loads(registered.info.data) == schema.definition
        assert registered.version == 0
        again = await client.get_schema(name, version=0)
        assert again == registered
        assert await client.get_schema(name, version=7) is None


async def test_string_and_key_value_schemas_round_trip_through_the_broker(pulsar_broker: PulsarBroker) -> None:
    name, pairs = topic(), topic()
    kv = KeyValueSchema(StringSchema(), JsonSchema(Order))
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with (
            client.consumer(name, group="g", schema=StringSchema(), start="earliest") as strings,
            client.consumer(pairs, group="g", schema=kv, start="earliest") as kvs,
        ):
            async with client.producer(name, schema=StringSchema()) as producer:
                await producer.send("héllo")
            async with client.producer(pairs, schema=kv) as producer:
                await producer.send(("k", ORDERS[2]))
            assert (await strings.receive(timeout=20)).value == "héllo"
            assert (await kvs.receive(timeout=20)).value == ("k", ORDERS[2])
        registered = await client.get_schema(pairs)
        assert registered is not None and registered.info.type is SchemaType.KEY_VALUE


async def test_protobuf_native_both_ways_with_pulsar_client(pulsar_broker: PulsarBroker) -> None:
    name = topic()
    orders = [ProtoOrder(id=f"o-{i}", qty=i) for i in range(3)]
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        their_consumer = await asyncio.to_thread(theirs.subscribe, name, "g", schema=TheirProtobufNative(ProtoOrder))
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.consumer(name, group="ours", schema=ProtobufNativeSchema(ProtoOrder), start="earliest") as ours,
        ):
            async with client.producer(name, schema=ProtobufNativeSchema(ProtoOrder)) as producer:
                await producer.send(orders[0])

            def exchange() -> Any:
                message = their_consumer.receive(timeout_millis=30_000)
                their_consumer.acknowledge(message)
                producer = theirs.create_producer(name, schema=TheirProtobufNative(ProtoOrder))
                producer.send(orders[1])
                producer.close()
                return message.value()

            assert await asyncio.to_thread(exchange) == orders[0]
            got = [(await ours.receive(timeout=20)).value for _ in range(2)]
        assert got == orders[:2]
    finally:
        theirs.close()


async def test_protobuf_schema_round_trip_through_the_broker(pulsar_broker: PulsarBroker) -> None:
    name = topic()
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(name, group="g", schema=ProtobufSchema(ProtoOrder), start="earliest") as consumer,
    ):
        async with client.producer(name, schema=ProtobufSchema(ProtoOrder)) as producer:
            await producer.send(ProtoOrder(id="p", qty=7))
        assert (await consumer.receive(timeout=20)).value == ProtoOrder(id="p", qty=7)
        registered = await client.get_schema(name)
        assert registered is not None and registered.info.type is SchemaType.PROTOBUF


async def test_a_body_the_schema_cannot_decode_raises_with_its_position_and_is_held(
    pulsar_broker: PulsarBroker,
) -> None:
    name = topic()
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(name, group="g", schema=AvroSchema(Order), start="earliest") as consumer,
    ):
        # A producer without a schema may still write to the topic (schema validation is not enforced).
        async with client.producer(name) as raw, client.producer(name, schema=AvroSchema(Order)) as typed:
            bad = await raw.send(b"\xff\xff\xff")
            await typed.send(ORDERS[3])
        with pytest.raises(pulsarwire.DeserializationError) as caught:
            await consumer.receive(timeout=20)
        assert caught.value.position == bad.message_id and caught.value.topic == name
        with pytest.raises(pulsarwire.DeserializationError):
            await consumer.receive(timeout=5)  # held until skipped
        consumer.skip(caught.value.message)
        assert (await consumer.receive(timeout=20)).value == ORDERS[3]
