"""Reading one Kafka offset range into Arrow batches: what the batch and the streaming sources share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import InputPartition

import kafkawire
from sparkwire import options as opts
from sparkwire.batches import Rows
from sparkwire.options import ConnectOptions

ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("headers", pa.map_(pa.string(), pa.binary())),
    ]
)
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
                for batch in rows.extend(messages):
                    yield batch
        finally:
            await consumer.close()
    if len(rows):
        yield rows.take()


def _size_of(message: Any) -> int:
    return len(message.value or b"") + len(message.key or b"")


def _to_batch(messages: Sequence[Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key for m in messages], pa.binary()),
            pa.array([m.value for m in messages], pa.binary()),
            pa.array([m.topic for m in messages], pa.string()),
            pa.array([m.partition for m in messages], pa.int32()),
            pa.array([m.offset for m in messages], pa.int64()),
            pa.array([m.timestamp * 1000 for m in messages], pa.timestamp("us", tz="UTC")),
            # Most records have no headers: their empty map costs no dict.
            pa.array(
                [list(m.headers.items()) if m.raw_headers else () for m in messages], pa.map_(pa.string(), pa.binary())
            ),
        ],
        schema=ARROW_SCHEMA,
    )


async def kafka_topics(admin: kafkawire.Admin, options: dict[str, str]) -> list[str]:
    """The topics of ``subscribe``, or those that ``subscribePattern`` matches now."""
    wanted = opts.pattern(options)
    if wanted is None:
        return opts.topics(options)
    return opts.matching(await admin.list_topics(), wanted)
