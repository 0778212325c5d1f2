"""sparkwire's writers without brokers: rows grouped into bulk calls carry exactly what one enqueue per row
would have sent, in order, and a failed call fails the task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from pyspark.sql import Row

from sparkwire.row_columns import column_chunks, group_by_topic, row_columns
from sparkwire.writing import ProducersByTopic, as_bytes, as_headers, send_chunks

Sent = tuple[str, bytes | None, bytes | None, dict[str, bytes] | None]


class RecordingProducer:
    """Stands in for a started producer: remembers each bulk call's records."""

    def __init__(self, topic: str, calls: list[list[Sent]]) -> None:
        self.topic = topic
        self.calls = calls

    async def __aenter__(self) -> RecordingProducer:
        return self

    async def close(self) -> None:
        return None


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[list[Sent]] = []

    def producer(self, topic: str) -> RecordingProducer:
        return RecordingProducer(topic, self.calls)


def rows(count: int) -> list[Row]:
    make = Row("key", "value", "topic", "headers")
    return [
        make(
            None if i % 4 == 0 else bytearray(b"k%d" % i),
            None if i % 9 == 0 else bytearray(b"v%d" % i),
            "a" if i % 3 else "b",
            None if i % 2 else {"n": bytearray(b"%d" % i)},
        )
        for i in range(count)
    ]


def per_row(given: list[Row], default_topic: str | None) -> list[Sent]:
    """What the one-enqueue-per-row writer sends for ``given``, in order."""
    out: list[Sent] = []
    for row in given:
        fields = row.asDict()
        topic = default_topic or fields["topic"]
        out.append((topic, as_bytes(fields["key"]), as_bytes(fields["value"]), as_headers(fields["headers"])))
    return out


async def record_many(
    producer: Any,
    values: list[bytes | None],
    keys: list[bytes | None] | None,
    headers: list[dict[str, bytes] | None] | None,
) -> Awaitable[Any]:
    count = len(values)
    assert keys is None or len(keys) == count
    assert headers is None or len(headers) == count
    producer.calls.append(
        [
            (producer.topic, None if keys is None else keys[i], values[i], None if headers is None else headers[i])
            for i in range(count)
        ]
    )
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


@pytest.mark.parametrize("default_topic", [None, "c"])
def test_chunks_carry_what_one_enqueue_per_row_sends(default_topic: str | None) -> None:
    given = rows(2_500)
    client = RecordingClient()
    written = asyncio.run(
        send_chunks(column_chunks(iter(given), 1_000), default_topic, ProducersByTopic(client), record_many)  # type: ignore[arg-type]
    )
    assert written == len(given)
    # One call per topic per chunk: 3 chunks, two topics by column or one by option.
    assert len(client.calls) == (3 if default_topic else 6)
    assert all(len(call) <= 1_000 for call in client.calls)
    sent = [record for call in client.calls for record in call]
    expected = per_row(given, default_topic)
    for topic in {t for t, *_ in expected}:
        assert [r for r in sent if r[0] == topic] == [r for r in expected if r[0] == topic]


def test_a_chunk_without_keys_or_headers_sends_none_for_them() -> None:
    given = [Row(value=bytearray(b"x"), key=None)] * 5
    client = RecordingClient()
    seen: list[tuple[Any, Any]] = []

    async def check(producer: Any, values: Any, keys: Any, headers: Any) -> Awaitable[Any]:
        seen.append((keys, headers))
        return await record_many(producer, values, keys, headers)

    asyncio.run(send_chunks(column_chunks(iter(given)), "t", ProducersByTopic(client), check))  # type: ignore[arg-type]
    assert seen == [(None, None)]


def test_empty_for_null_and_no_topic() -> None:
    groups = group_by_topic(row_columns([Row(value=None, topic="t")]), None, empty_for_null=True)
    assert groups["t"].values == [b""]
    assert group_by_topic(row_columns([Row(value=None, topic="t")]), None)["t"].values == [None]
    with pytest.raises(ValueError, match="no topic"):
        group_by_topic(row_columns([Row(value=b"x")]), None)
    with pytest.raises(ValueError, match="no topic"):
        group_by_topic(row_columns([Row(value=b"x", topic="t"), Row(value=b"y", topic=None)]), None)


def test_arrow_batches_give_what_rows_give() -> None:
    given = rows(2_500)
    schema = pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("headers", pa.map_(pa.string(), pa.binary())),
        ]
    )
    table = pa.Table.from_pylist([row.asDict() for row in given], schema=schema)
    batches = table.to_batches(max_chunksize=700)
    from_rows = [group_by_topic(c, None) for c in column_chunks(iter(given), 700)]
    from_batches = [group_by_topic(c, None) for c in column_chunks(iter(batches), 700)]
    assert from_batches == from_rows
    assert sum(len(g.values) for groups in from_batches for g in groups.values()) == len(given)


def test_a_failed_call_fails_the_task() -> None:
    client = RecordingClient()

    async def failing(producer: Any, values: Any, keys: Any, headers: Any) -> Awaitable[Any]:
        failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        failed.set_exception(RuntimeError("delivery failed"))
        return failed

    with pytest.raises(RuntimeError, match="delivery failed"):
        asyncio.run(send_chunks(column_chunks(iter(rows(10))), "t", ProducersByTopic(client), failing))  # type: ignore[arg-type]
