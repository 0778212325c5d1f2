"""Reading one Kafka offset range into Arrow batches: what the batch and the streaming sources share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import InputPartition

import kafkawire
from sparkwire import options as opts
from sparkwire.batches import Rows
from sparkwire.options import ConnectOptions
from sparkwire.read_columns import LONG, read_schema

ARROW_SCHEMA = read_schema([("offset", LONG)])
FETCH_TIMEOUT_MS = 1000
# A fetch that keeps coming back empty before the end offset means the range can no longer be read.
MAX_EMPTY_FETCHES = 30


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Records ``[start, end)`` of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


async def read_range(
    url: str, part: OffsetRange, options: ConnectOptions | None = None
) -> AsyncIterator[pa.RecordBatch]:
    """The records of ``part`` as Arrow batches of bounded size (:mod:`sparkwire.batches`), each handed over
    as soon as it is full, read with a client of its own."""
    rows = Rows(_to_batch, _size_of)
    async with kafkawire.connect(url, **(options or {})) as client:
        consumer = client.consumer(part.topic, partitions=[(part.topic, part.partition)], enable_auto_commit=False)
        try:
            await consumer.start()
            consumer.seek((part.topic, part.partition), part.start)
            position, empty = part.start, 0
            while position < part.end:
                messages = await consumer.getmany(timeout_ms=FETCH_TIMEOUT_MS)
                if not messages:
                    empty += 1
                    if empty >= MAX_EMPTY_FETCHES:
                        raise TimeoutError(f"{part.topic}/{part.partition}: offset {position} never arrived")
                    continue
                empty = 0
                position = messages[-1].offset + 1
                # A fetch is in order: only its ends can lie outside the range.
                if messages[0].offset < part.start or messages[-1].offset >= part.end:
                    messages = [m for m in messages if part.start <= m.offset < part.end]
                for batch in rows.extend(messages, _sizes(messages)):
                    yield batch
        finally:
            await consumer.close()
    if len(rows):
        yield rows.take()


def _size_of(message: Any) -> int:
    return len(message.value or b"") + len(message.key or b"")


def _sizes(messages: Sequence[Any]) -> list[int]:
    """``_size_of`` of each message, counted over the whole fetch without a call per message."""
    values = list(map(_VALUE, messages))
    try:
        sizes = list(map(len, values))
    except TypeError:  # a tombstone (null value) among them
        sizes = [len(value or b"") for value in values]
    keys = list(map(_KEY, messages))
    if keys.count(None) == len(keys):
        return sizes
    return [size + len(key or b"") for size, key in zip(sizes, keys, strict=True)]


_KEY = attrgetter("key")
_VALUE = attrgetter("value")
_OFFSET = attrgetter("offset")
_TIMESTAMP = attrgetter("timestamp")
_RAW_HEADERS = attrgetter("raw_headers")
_HEADERS_TYPE = pa.map_(pa.string(), pa.binary())


def _to_batch(messages: Sequence[Any]) -> pa.RecordBatch:
    # Column by column with map() rather than a comprehension per column; the columns that are the same in
    # every row of a range (topic, partition) or empty in most (key, headers) are built without a list.
    count, first = len(messages), messages[0]
    keys = list(map(_KEY, messages))
    return pa.RecordBatch.from_arrays(
        [
            pa.nulls(count, pa.binary()) if keys.count(None) == count else pa.array(keys, pa.binary()),
            pa.array(list(map(_VALUE, messages)), pa.binary()),
            pa.repeat(pa.scalar(first.topic, pa.string()), count),
            pa.repeat(pa.scalar(first.partition, pa.int32()), count),
            pa.array(list(map(_OFFSET, messages)), pa.int64()),
            pa.array(list(map(_TIMESTAMP, messages)), pa.timestamp("ms", tz="UTC")).cast(_TIMESTAMP_US),
            _headers(messages),
        ],
        schema=ARROW_SCHEMA,
    )


def _headers(messages: Sequence[Any]) -> pa.Array:
    raw = list(map(_RAW_HEADERS, messages))
    if raw.count(()) == len(raw):  # most topics: no record has headers, so every map is empty
        return pa.MapArray.from_arrays(pa.repeat(_ZERO, len(raw) + 1), _NO_NAMES, _NO_VALUES)
    return pa.array([list(m.headers.items()) if m.raw_headers else () for m in messages], _HEADERS_TYPE)


_TIMESTAMP_US = pa.timestamp("us", tz="UTC")
_ZERO = pa.scalar(0, pa.int32())  # every map starts and ends at item 0: all empty
_NO_NAMES = pa.array([], pa.string())
_NO_VALUES = pa.array([], pa.binary())


async def kafka_topics(admin: kafkawire.Admin, options: dict[str, str]) -> list[str]:
    """The topics of ``subscribe``, or those that ``subscribePattern`` matches now."""
    wanted = opts.pattern(options)
    if wanted is None:
        return opts.topics(options)
    return opts.matching(await admin.list_topics(), wanted)
