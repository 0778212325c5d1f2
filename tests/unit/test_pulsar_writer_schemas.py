"""Values read with their writer's schema: fetched once per topic and version, resolved, or a typed error."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

import pytest

import pulsarwire
from mqwire.common.serde import Deserializing
from pulsarwire import writer_schemas
from pulsarwire.message import Message, MessageId
from pulsarwire.schema import (
    AutoConsumeSchema,
    AvroSchema,
    Int32,
    JsonSchema,
    KeyValueSchema,
    SchemaInfo,
    SchemaType,
    StringSchema,
    TopicSchema,
    avro_definition,
)
from pulsarwire.writer_schemas import WriterSchemas

TOPIC = "persistent://public/default/evolving"


@dataclass
class Item:
    a: str
    b: int = 0
    c: str = ""


@dataclass
class ItemAC:
    a: str
    c: str


@dataclass
class Needs:
    a: str
    z: int  # no default: not readable from a writer without z


@dataclass
class Count:
    n: Int32


@dataclass
class CountLong:
    n: int


class FakeBroker:
    """GetSchema answers from a table of versions; counts the requests."""

    def __init__(self, versions: dict[int, SchemaInfo]) -> None:
        self.versions = versions
        self.asked: list[int | None] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def fetch(self, session: object, topic: str, version: int | None) -> TopicSchema | None:
        assert topic == TOPIC
        self.asked.append(version)
        await self.gate.wait()
        if version is None:
            version = max(self.versions)
        info = self.versions.get(version)
        return None if info is None else TopicSchema(info, version)


def message(data: bytes, version: int | None, entry: int = 0, partition: int = -1) -> Message:
    name = TOPIC if partition < 0 else f"{TOPIC}-partition-{partition}"
    return Message(TOPIC, name, partition, MessageId(1, entry, -1, partition), data, {}, schema_version=version)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> FakeBroker:
    fake = FakeBroker({0: AvroSchema(Item).info, 1: AvroSchema(ItemAC).info})
    monkeypatch.setattr(writer_schemas, "fetch_schema", fake.fetch)
    return fake


async def test_the_writers_schema_is_fetched_once_however_many_messages_wait(broker: FakeBroker) -> None:
    writers = WriterSchemas(object(), AvroSchema(ItemAC))  # type: ignore[arg-type]
    data = AvroSchema(Item).encode(Item("hello", 3, "xyz"))
    batch = [message(data, 0, entry, partition) for entry in range(5) for partition in (0, 1)]
    broker.gate.clear()
    waiting = [asyncio.ensure_future(writers.prepare(batch[i::2])) for i in range(2)]
    await asyncio.sleep(0)
    broker.gate.set()
    await asyncio.gather(*waiting)
    # Version 0 once (both partitions share the topic's schema), then the reader's own version found as 1.
    assert broker.asked.count(0) == 1
    assert not writers.missing(batch)
    assert [writers.decode(m.value, m) for m in batch] == [ItemAC("hello", "xyz")] * 10


async def test_a_writer_the_reader_cannot_resolve_raises_with_both_versions(broker: FakeBroker) -> None:
    broker.versions[2] = AvroSchema(Needs).info
    writers = WriterSchemas(object(), AvroSchema(Needs))  # type: ignore[arg-type]
    bad = message(AvroSchema(Item).encode(Item("hello", 3, "xyz")), 0, entry=7)
    await writers.prepare([bad])
    with pytest.raises(pulsarwire.SchemaResolutionError) as caught:
        writers.decode(bad.value, bad)
    error = caught.value
    assert (error.writer_version, error.reader_version) == (0, 2)
    assert error.position == MessageId(1, 7, -1, -1) and error.message is bad
    assert isinstance(error, pulsarwire.DeserializationError)


async def test_a_version_the_broker_does_not_know_raises_and_is_held_until_skipped(broker: FakeBroker) -> None:
    writers = WriterSchemas(object(), AvroSchema(ItemAC))  # type: ignore[arg-type]
    gate: Deserializing[Message] = Deserializing(None, writers.decode, lambda m: m.message_id,
                                                 value_sees_message=True)
    good = AvroSchema(ItemAC).encode(ItemAC("x", "y"))
    unknown, after = message(good, 9, entry=1), message(good, 1, entry=2)
    await writers.prepare([unknown, after])
    with pytest.raises(pulsarwire.SchemaResolutionError) as caught:
        gate.many([unknown, after])
    assert caught.value.writer_version == 9 and "knows no schema version 9" in str(caught.value)
    with pytest.raises(pulsarwire.SchemaResolutionError):
        gate.one(gate.take_held(1)[0])  # held: the same error again
    gate.skip(caught.value.message)
    assert [m.value for m in gate.many(gate.take_held())] == [ItemAC("x", "y")]


async def test_int_written_is_read_as_long_and_a_missing_field_takes_its_default(broker: FakeBroker) -> None:
    broker.versions = {0: AvroSchema(Count).info, 1: AvroSchema(CountLong).info}
    writers = WriterSchemas(object(), AvroSchema(CountLong))  # type: ignore[arg-type]
    old = message(AvroSchema(Count).encode(Count(2**31 - 1)), 0)
    await writers.prepare([old])
    assert writers.decode(old.value, old) == CountLong(2**31 - 1)


class Color(enum.Enum):
    red = 1
    green = 2


@dataclass
class Paint:
    name: str
    color: Color


def test_json_reads_enums_by_name_and_by_value_and_writes_names() -> None:
    schema = JsonSchema(Paint)
    assert schema.decode(b'{"name": "x", "color": 2}') == Paint("x", Color.green)
    assert schema.decode(b'{"name": "x", "color": "green"}') == Paint("x", Color.green)
    assert b'"color": "green"' in schema.encode(Paint("x", Color.green))


def test_json_resolution_needs_the_fields_without_defaults() -> None:
    @dataclass
    class Old:
        a: str

    reader = JsonSchema(Needs, definition={**JsonSchema(Needs).definition, "name": "Needs"})
    with pytest.raises(pulsarwire.schema.SchemaMismatchError, match="no field z"):
        reader.decode_with(b'{"a": "x"}', JsonSchema(Old).info)
    assert JsonSchema(Item).decode_with(b'{"a": "x", "gone": 1}', JsonSchema(Old).info) == Item("x")




def test_key_value_resolves_each_part_to_the_readers() -> None:
    writer = KeyValueSchema(StringSchema(), AvroSchema(Item))
    reader = KeyValueSchema(StringSchema(), AvroSchema(ItemAC, definition={**avro_definition(ItemAC), "name": "Item"}))
    data = writer.encode(("k", Item("hello", 3, "xyz")))
    assert reader.decode_with(data, writer.info) == ("k", ItemAC("hello", "xyz"))
    with pytest.raises(pulsarwire.schema.SchemaMismatchError):
        KeyValueSchema(StringSchema(), AvroSchema(Needs)).decode_with(data, writer.info)


def test_auto_consume_reads_each_value_with_its_own_writers_schema() -> None:
    auto = AutoConsumeSchema()
    assert auto.decode_with(AvroSchema(Item).encode(Item("a", 2, "c")), AvroSchema(Item).info) == {
        "a": "a", "b": 2, "c": "c"}
    assert auto.decode_with(JsonSchema(Paint).encode(Paint("p", Color.red)), JsonSchema(Paint).info) == {
        "name": "p", "color": "red"}
    pair = KeyValueSchema(StringSchema(), AvroSchema(Count))
    assert auto.decode_with(pair.encode(("k", Count(5))), pair.info) == ("k", {"n": 5})
    assert auto.decode_with(b"\x00\x00\x00\x07", SchemaInfo("INT32", SchemaType.INT32)) == 7
    assert auto.decode(b"raw") == b"raw"
