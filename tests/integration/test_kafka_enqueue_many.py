"""The Kafka producer's bulk path, ``enqueue_many``, against a real broker: what it writes is read back in order
with the metadata it reported, and it refuses exactly what ``enqueue`` refuses, with the same errors."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

import kafkawire
from kafkawire import Message
from kafkawire.partitioner import partition_for_key
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(loop_scope="function")
async def client(kafka_broker: KafkaBroker) -> AsyncIterator[kafkawire.Client]:
    async with kafkawire.connect(kafka_broker.url) as connected:
        yield connected


async def new_topic(client: kafkawire.Client, partitions: int = 1) -> str:
    name = f"kw-many-{uuid.uuid4().hex[:10]}"
    async with client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)
    return name


async def read_all(client: kafkawire.Client, topic: str, count: int) -> list[Message[bytes]]:
    got: list[Message[bytes]] = []
    async with client.consumer(topic, start="earliest") as consumer:
        while len(got) < count:
            batch = await consumer.getmany(timeout_ms=10_000)
            assert batch, f"read {len(got)} of {count} records"
            got += batch
    return got


def records(count: int) -> tuple[list[bytes | None], list[bytes | None], list[dict[str, bytes] | None]]:
    keys = [None if i % 7 == 0 else b"key-%d" % (i % 13) for i in range(count)]
    values: list[bytes | None] = [None if i % 97 == 5 else (b"value-%d-" % i) * (1 + i % 5) for i in range(count)]
    headers: list[dict[str, bytes] | None] = [None if i % 3 else {"i": str(i).encode()} for i in range(count)]
    return keys, values, headers


async def test_one_partition_in_order_across_batches(client: kafkawire.Client) -> None:
    topic = await new_topic(client)
    keys, values, headers = records(3000)
    # Small batches: the call's records travel in many batches, several per request.
    async with client.producer(topic, batch_size=4096, linger_ms=2) as producer:
        future = await producer.enqueue_many(values, keys=keys, headers=headers)
        single = await producer.enqueue(b"after")
        metadata = await future
        assert (await single).offset == 3000
    assert len(metadata) == 3000
    assert [m.offset for m in metadata] == list(range(3000))
    assert {m.partition for m in metadata} == {0}
    got = await read_all(client, topic, 3001)
    assert [m.value for m in got[:3000]] == values
    assert [m.key for m in got[:3000]] == keys
    assert [dict(m.headers) for m in got[:3000]] == [h or {} for h in headers]
    assert got[3000].value == b"after"
    assert len({m.timestamp for m in got[:3000]}) == 1  # one timestamp per call


async def test_keys_choose_partitions_as_enqueue_does(client: kafkawire.Client) -> None:
    topic = await new_topic(client, partitions=4)
    keys, values, _ = records(2000)
    async with client.producer(topic, linger_ms=2) as producer:
        metadata = await (await producer.enqueue_many(values, keys=keys))
    for key, where in zip(keys, metadata, strict=True):
        if key is not None:
            assert where.partition == partition_for_key(key, 4)
    got = await read_all(client, topic, 2000)
    read = {(m.partition, m.offset): (m.key, m.value) for m in got}
    assert len(read) == 2000
    for key, value, where in zip(keys, values, metadata, strict=True):
        assert read[(where.partition, where.offset)] == (key, value)


async def test_unkeyed_records_stick_and_move_on(client: kafkawire.Client) -> None:
    topic = await new_topic(client, partitions=3)
    values: list[bytes | None] = [b"%06d" % i for i in range(20_000)]
    async with client.producer(topic, batch_size=16_384, linger_ms=2) as producer:
        futures = [await producer.enqueue_many(values[i : i + 5000]) for i in range(0, 20_000, 5000)]
        metadata = [m for future in futures for m in await future]
    assert len({m.partition for m in metadata}) > 1  # batches completed: the sticky partition moved on
    got = await read_all(client, topic, 20_000)
    assert sorted(m.value for m in got if m.value is not None) == values
    assert {(m.partition, m.offset) for m in got} == {(m.partition, m.offset) for m in metadata}


async def test_explicit_partition_and_serializer(client: kafkawire.Client) -> None:
    topic = await new_topic(client, partitions=2)
    async with client.producer(topic, value_serializer=str.encode, key_serializer=str.encode) as producer:
        metadata = await (await producer.enqueue_many(["a", "b", "c"], keys=["x", "y", "z"], partition=1))
        empty = await (await producer.enqueue_many([]))
    assert len(empty) == 0
    assert [(m.partition, m.offset) for m in metadata] == [(1, 0), (1, 1), (1, 2)]
    got = await read_all(client, topic, 3)
    assert [(m.key, m.value) for m in got] == [(b"x", b"a"), (b"y", b"b"), (b"z", b"c")]


# (enqueue's arguments for one record, the bad record for enqueue_many in the middle of good ones)
BAD: list[dict[str, Any]] = [
    {"value": "text"},
    {"value": 12},
    {"value": b"v", "key": "text key"},
    {"value": b"v", "key": 5},
    {"value": b"v", "headers": {"h": "text"}},
    {"value": b"v", "headers": [("h",)]},
    {"value": b"v", "headers": [(1, b"x")]},
    {"value": b"x" * 2_000_000},
    {"value": b"v", "key": b"k" * 1_500_000, "headers": {"h": b"y" * 600_000}},
]
BAD_CALL: list[dict[str, Any]] = [
    {"timestamp_ms": "now"},
    {"timestamp_ms": 1.5},
    {"partition": 7},
    {"partition": "0"},
    {"topic": ""},
]


async def errors_of(call: Any) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as raised:
        await call
    return type(raised.value), str(raised.value)


@pytest.mark.parametrize("bad", BAD, ids=range(len(BAD)))
async def test_a_bad_record_is_refused_like_enqueue_refuses_it(client: kafkawire.Client, bad: dict[str, Any]) -> None:
    topic = await new_topic(client)
    async with client.producer(topic, max_request_size=1_048_576) as producer:
        alone = await errors_of(producer.enqueue(**bad))
        values = [b"good", bad["value"], b"good"]
        keys = [b"k", bad.get("key", b"k"), b"k"] if "key" in bad else None
        headers = [None, bad["headers"], None] if "headers" in bad else None
        many = await errors_of(producer.enqueue_many(values, keys=keys, headers=headers))
        assert many == alone
        await producer.flush()
        assert producer.stats().records_sent == 0  # refused whole: nothing of the call was buffered


@pytest.mark.parametrize("bad", BAD_CALL, ids=range(len(BAD_CALL)))
async def test_bad_arguments_are_refused_like_enqueue_refuses_them(
    client: kafkawire.Client, bad: dict[str, Any]
) -> None:
    topic = await new_topic(client, partitions=2)
    async with client.producer(topic) as producer:
        alone = await errors_of(producer.enqueue(b"v", **bad))
        many = await errors_of(producer.enqueue_many([b"v", b"w"], **bad))
        assert many == alone


async def test_the_call_shape_is_checked(client: kafkawire.Client) -> None:
    topic = await new_topic(client)
    async with client.producer(topic) as producer:
        with pytest.raises(TypeError, match="values must be a sequence"):
            await producer.enqueue_many(b"not a list")
        with pytest.raises(ValueError, match="keys has 1 entries for 2 values"):
            await producer.enqueue_many([b"a", b"b"], keys=[b"k"])
        with pytest.raises(ValueError, match="headers has 3 entries for 2 values"):
            await producer.enqueue_many([b"a", b"b"], headers=[None, None, None])


# ------------------------------------------------------------------ enqueue's short way for plain records
@pytest.mark.parametrize(
    "bad", BAD + [{"value": b"v", **call} for call in BAD_CALL], ids=range(len(BAD) + len(BAD_CALL))
)
async def test_the_short_way_of_enqueue_refuses_what_the_full_way_refuses(
    client: kafkawire.Client, bad: dict[str, Any]
) -> None:
    """A plain record after a plain record takes enqueue's short way (the open batch of the sticky partition);
    every other record goes the full way. A producer with an open batch must refuse exactly what a fresh one
    refuses, with the same error, and buffer nothing of it. The batch size is above the record limit so that
    the oversize records are refused by the size check, not by the batch being full."""
    topic = await new_topic(client, partitions=2)
    options: dict[str, Any] = {"max_request_size": 1_048_576, "batch_size": 4_000_000, "linger_ms": 60_000}
    async with client.producer(topic, **options) as fresh:
        full_way = await errors_of(fresh.enqueue(**bad))
    async with client.producer(topic, **options) as producer:
        first = await producer.enqueue(b"first")
        assert producer._fast_batch is not None  # the short way is armed
        short_way = await errors_of(producer.enqueue(**bad))
        assert short_way == full_way
        last = await producer.enqueue(b"last")
        await producer.flush()
        assert [first.result().offset, last.result().offset] == [0, 1]  # the refused record took no offset


async def test_the_short_way_takes_a_record_at_the_size_limit_and_refuses_one_byte_more(
    client: kafkawire.Client,
) -> None:
    topic = await new_topic(client)
    async with client.producer(topic, max_request_size=100_000, batch_size=1_000_000) as producer:
        await producer.enqueue(b"first")
        limit = producer._fast_value_limit
        at_limit = await producer.enqueue(b"x" * limit)
        with pytest.raises(kafkawire.MessageTooLargeError):
            await producer.enqueue(b"x" * (limit + 1))
        await producer.flush()
        assert at_limit.result().offset == 1
    got = await read_all(client, topic, 2)
    assert [len(m.value or b"") for m in got] == [5, limit]




async def test_a_call_hands_its_complete_batches_over_a_request_at_a_time(client: kafkawire.Client) -> None:
    # Yielding to the sender after every complete batch cost a turn of the event loop per batch, most of the
    # bulk path's CPU with small batches; a call yields once per max_request_size of batches and at its end.
    topic = await new_topic(client, partitions=4)
    values: list[bytes | None] = [b"%0100d" % i for i in range(10_000)]
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async with client.producer(topic, batch_size=16_384, max_request_size=262_144) as producer:
        await producer.send(b"first")  # metadata and connection ready: the call itself does not wait
        counter = asyncio.create_task(count_turns())
        await asyncio.sleep(0)
        before = turns
        future = await producer.enqueue_many(values)
        during = turns - before
        counter.cancel()
        metadata = await future
    assert len(metadata) == 10_000
    batches = 10_000 * 110 // 16_384  # at least this many complete batches; 16 of them make a request
    assert during <= batches // 16 + 2, f"{during} turns of the loop for about {batches} batches"
