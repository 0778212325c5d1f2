"""Schemas that evolve: each value read with its writer's schema resolved to the reader's, as pulsar-client reads.

Every value pulsarwire reads is compared with what pulsar-client reads from the same topic; where pulsar-client
cannot read a message, pulsarwire raises SchemaResolutionError (and goes on only when skipped).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pulsar
import pytest
from pulsar.schema import AvroSchema as TheirAvro
from pulsar.schema import CustomEnum, Long, Record, String
from pulsar.schema import JsonSchema as TheirJson

import pulsarwire
from mqwire.testing import rest
from mqwire.testing.endpoints import PulsarBroker
from mqwire.testing.pulsar_admin import create_namespace
from pulsarwire.schema import AutoConsumeSchema, AvroSchema, Int32, JsonSchema, Schema, avro_definition

pytestmark = pytest.mark.integration

ERROR = "SchemaResolutionError"  # what a reader that cannot read a message gives in place of its value


@pytest.fixture(scope="module")
def namespace(pulsar_broker: PulsarBroker) -> str:
    """A namespace whose broker accepts every schema change: the clients' resolution is what is tested."""
    name = "public/evolution"
    create_namespace(pulsar_broker.admin_url, name)
    reply = rest.request(
        "PUT", f"{pulsar_broker.admin_url}/admin/v2/namespaces/{name}/schemaCompatibilityStrategy",
        body="ALWAYS_COMPATIBLE",
    )
    assert reply.ok, reply.text()
    return name


def topic(namespace: str) -> str:
    return f"persistent://{namespace}/evolve-{uuid.uuid4().hex[:10]}"


async def our_values(url: str, name: str, schema: Schema[Any], count: int) -> list[Any]:
    """What a pulsarwire reader with ``schema`` reads, as dicts; ERROR for a message it cannot resolve."""
    out: list[Any] = []
    async with pulsarwire.connect(url) as client, client.reader(name, start="earliest", schema=schema) as reader:
        while len(out) < count:
            try:
                message = await reader.receive(timeout=30)
            except pulsarwire.SchemaResolutionError as error:
                assert error.position == error.message.message_id and error.writer_version is not None
                with pytest.raises(pulsarwire.SchemaResolutionError):
                    await reader.receive(timeout=5)  # held: nothing goes on until the application skips it
                reader.skip(error.message)
                out.append(ERROR)
                continue
            out.append(dataclasses.asdict(message.value))
    return out


class _Failures(logging.Handler):
    """Counts pulsar-client's "Failed to decode" warnings: it then decodes with its own schema instead."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Failed to decode"):
            self.count += 1


def their_values(url: str, name: str, schema: Any, count: int) -> list[Any]:
    """What a pulsar-client reader with ``schema`` reads (dicts or records as dicts); ERROR where it cannot
    resolve the writer's schema (it raises, or logs the failure and falls back to reading with its own)."""
    client = pulsar.Client(url)
    failures = _Failures()
    logging.getLogger().addHandler(failures)
    try:
        reader = client.create_reader(name, pulsar.MessageId.earliest, schema=schema)
        out: list[Any] = []
        for _ in range(count):
            message = reader.read_next(timeout_millis=30_000)
            before = failures.count
            try:
                value = message.value()
            except Exception:
                out.append(ERROR)
                continue
            if failures.count != before:
                out.append(ERROR)
                continue
            if not isinstance(value, dict):
                value = {f["name"]: getattr(value, f["name"]) for f in type(value).schema()["fields"]}
            out.append(value)
        return out
    finally:
        logging.getLogger().removeHandler(failures)
        client.close()


def their_write(url: str, name: str, schema: Any, values: list[Any]) -> None:
    client = pulsar.Client(url)
    try:
        producer = client.create_producer(name, schema=schema)
        for value in values:
            producer.send(value)
        producer.close()
    finally:
        client.close()


# ---------------------------------------------------------------------- the review's case
class TheirItem(Record):
    a = String(required=True)
    b = Long(default=0, required=True, required_default=True)
    c = String(required=True)


# pulsar-client's reader record: named as the writer's, without field b.
TheirItemAC: Any = type("Item", (Record,), {"a": String(required=True), "c": String(required=True)})


@dataclass
class ItemAC:
    a: str
    c: str


async def test_a_consumer_without_a_field_reads_the_fields_after_it(pulsar_broker: PulsarBroker) -> None:
    # The default namespace: its compatibility strategy accepts the reader without field b.
    name = topic("public/default")
    url = pulsar_broker.url
    await asyncio.to_thread(their_write, url, name, TheirAvro(TheirItem), [TheirItem(a="hello", b=3, c="xyz")] * 2)
    reader_schema = AvroSchema(ItemAC, definition={**avro_definition(ItemAC), "name": "Item"})
    async with (
        pulsarwire.connect(url) as client,
        client.consumer(name, group="g", start="earliest", schema=reader_schema) as consumer,
    ):
        ours = [dataclasses.asdict((await consumer.receive(timeout=30)).value) for _ in range(2)]
    theirs = await asyncio.to_thread(their_values, url, name, TheirAvro(TheirItemAC), 2)
    assert ours == theirs == [{"a": "hello", "c": "xyz"}] * 2


# ---------------------------------------------------------------------- v1 and v2 of one record
@dataclass
class LineV1:
    name: str
    n: Int32
    gone: str = "g"


@dataclass
class LineV2:
    title: str
    n: int  # promoted from int to long
    extra: str = "dflt"  # added, with a default


V1 = {**avro_definition(LineV1), "name": "Line"}
V2 = {
    "type": "record",
    "name": "Line",
    "fields": [
        {"name": "title", "type": "string", "aliases": ["name"]},  # renamed, the old name an alias
        {"name": "n", "type": "long"},
        {"name": "extra", "type": "string", "default": "dflt"},
    ],
}


async def test_writers_at_v1_and_v2_read_by_readers_of_each_version_as_pulsar_client_reads(
    pulsar_broker: PulsarBroker, namespace: str
) -> None:
    name = topic(namespace)
    url = pulsar_broker.url
    ours_v1, ours_v2 = AvroSchema(LineV1, definition=V1), AvroSchema(LineV2, definition=V2)
    async with pulsarwire.connect(url) as client:
        async with client.producer(name, schema=ours_v1) as producer:
            await producer.send(LineV1("one", 1, "x"))
            await producer.send(LineV1("two", 2**31 - 1, "y"))
        async with client.producer(name, schema=ours_v2) as producer:
            await producer.send(LineV2("three", 2**40, "z"))
    await asyncio.to_thread(their_write, url, name, TheirAvro(None, V1), [{"name": "four", "n": 4, "gone": "w"}])
    await asyncio.to_thread(their_write, url, name, TheirAvro(None, V2), [{"title": "five", "n": 5, "extra": "e"}])
    count = 5
    read_v2 = await our_values(url, name, ours_v2, count)
    assert read_v2 == await asyncio.to_thread(their_values, url, name, TheirAvro(None, V2), count)
    assert read_v2 == [
        {"title": "one", "n": 1, "extra": "dflt"},
        {"title": "two", "n": 2**31 - 1, "extra": "dflt"},
        {"title": "three", "n": 2**40, "extra": "z"},
        {"title": "four", "n": 4, "extra": "dflt"},
        {"title": "five", "n": 5, "extra": "e"},
    ]
    # A v1 reader cannot read v2's messages (no field "name", a long is no int): pulsarwire raises where
    # pulsar-client fails to resolve them (and then reads them with its own schema: wrong values).
    read_v1 = await our_values(url, name, ours_v1, count)
    assert read_v1 == await asyncio.to_thread(their_values, url, name, TheirAvro(None, V1), count)
    assert read_v1 == [
        {"name": "one", "n": 1, "gone": "x"},
        {"name": "two", "n": 2**31 - 1, "gone": "y"},
        ERROR,
        {"name": "four", "n": 4, "gone": "w"},
        ERROR,
    ]


async def test_auto_consume_reads_each_message_with_its_own_writers_schema(
    pulsar_broker: PulsarBroker, namespace: str
) -> None:
    name = topic(namespace)
    url = pulsar_broker.url
    second = {"title": "two", "n": 2, "extra": "e"}
    async with (
        pulsarwire.connect(url) as client,
        client.consumer(name, group="g", start="earliest", schema=AutoConsumeSchema()) as consumer,
    ):
        async with client.producer(name, schema=AvroSchema(LineV1, definition=V1)) as producer:
            await producer.send(LineV1("one", 1, "x"))
        await asyncio.to_thread(their_write, url, name, TheirAvro(None, V2), [second])
        got = [(await consumer.receive(timeout=30)).value for _ in range(2)]
    assert got == [{"name": "one", "n": 1, "gone": "x"}, second]


# ---------------------------------------------------------------------- JSON enums
class Color(enum.Enum):
    red = 1
    green = 2


class TheirPaint(Record):
    name = String(required=True)
    color = CustomEnum(Color, required=True)


@dataclass
class Paint:
    name: str
    color: Color


async def test_json_enums_both_ways_with_pulsar_client(pulsar_broker: PulsarBroker, namespace: str) -> None:
    name = topic(namespace)
    url = pulsar_broker.url
    await asyncio.to_thread(their_write, url, name, TheirJson(TheirPaint), [TheirPaint(name="a", color=Color.green)])
    async with pulsarwire.connect(url) as client, client.producer(name, schema=JsonSchema(Paint)) as producer:
        await producer.send(Paint("b", Color.red))
    ours = await our_values(url, name, JsonSchema(Paint), 2)
    theirs = await asyncio.to_thread(their_values, url, name, TheirJson(TheirPaint), 2)
    assert ours == theirs == [{"name": "a", "color": Color.green}, {"name": "b", "color": Color.red}]
