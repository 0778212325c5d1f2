"""Reading TubeMQ topics in Spark tasks: the planned ranges, the batch reader and what the stream reader shares."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceReader,
    InputPartition,
)

import tubemqwire
from sparkwire import options as opts
from sparkwire.batches import Rows, drive, size_of
from sparkwire.read_columns import LONG, STRING, read_schema, spark_ddl
from sparkwire.security import tubemq_connect

ARROW_SCHEMA = read_schema([("partition_key", STRING), ("message_id", LONG)], [("msg_type", STRING)])
SCHEMA = spark_ddl(ARROW_SCHEMA)
RECEIVE_TIMEOUT = 30.0  # seconds without progress before a range that should hold more is given up
POLL = 0.5  # seconds a task waits for a message before it looks at the confirmed position again


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One partition's messages from index offset ``start`` until the confirmed position reaches ``end``."""

    topic: str
    partition_key: str
    start: int
    end: int


def tubemq_url(options: Mapping[str, str]) -> str:
    url = opts.get(options, "url")
    if not url:
        raise ValueError("option url (tubemq://master:port) is required")
    return url


def reading_group(label: str) -> str:
    """A group of its own for one planning or reading step: its position is not kept for anyone."""
    return f"sparkwire_{label}_{secrets.token_hex(6)}"


def connect(options: Mapping[str, str]) -> tubemqwire.Client:
    """A client for ``url`` with the ``tubemq.*`` options (not yet started)."""
    return tubemqwire.connect(tubemq_url(options), **tubemq_connect(options))


async def partition_bounds(options: Mapping[str, str], topics: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """``{topic: {partition key: (first offset, end offset)}}`` as the brokers tell them now."""
    bounds: dict[str, dict[str, tuple[int, int]]] = {}
    async with connect(options) as client:
        for topic in topics:
            found = bounds.setdefault(topic, {})
            async with client.client_balance_consumer(topic, group=reading_group("plan"), start="earliest") as probe:
                for key in await probe.partition_metadata():
                    # Claiming from offset 0 makes the broker answer with its first offset and its end.
                    offsets = await probe.connect_partition(key, 0)
                    await probe.disconnect_partition(key, confirm_wait=0)
                    found[key] = (offsets.position or 0, offsets.end or 0)
    return bounds


def _bound(spec: str | dict[str, dict[str, int]], topic: str, key: str, name: str, default: int) -> int | None:
    """The offset ``spec`` gives partition ``key``: ``default`` for earliest/latest, None when left out."""
    if isinstance(spec, str):
        return default
    value = spec.get(topic, {}).get(key)
    if value is not None and value < 0:
        raise ValueError(f"option {name}: offset {value} of {key} is negative")
    return value


async def plan_ranges(options: Mapping[str, str]) -> list[OffsetRange]:
    topics = opts.topics(options)
    starting = opts.offset_spec(options, "startingOffsets", "earliest")
    ending = opts.offset_spec(options, "endingOffsets", "latest")
    ranges: list[OffsetRange] = []
    for topic, partitions in (await partition_bounds(options, topics)).items():
        for key, (first, end) in sorted(partitions.items()):
            low = _bound(starting, topic, key, "startingOffsets", end if starting == "latest" else first)
            high = _bound(ending, topic, key, "endingOffsets", end)
            low = first if low is None else max(low, first)
            high = end if high is None else min(high, end)
            if low < high:
                ranges.append(OffsetRange(topic, key, low, high))
    return ranges


async def read_range(options: Mapping[str, str], part: OffsetRange) -> AsyncIterator[pa.RecordBatch]:
    """The messages of ``part`` as Arrow batches of bounded size (:mod:`sparkwire.batches`), each handed over
    as soon as it is full, read with a client and a consumer group of their own."""
    rows = Rows(to_batch, size_of)
    async with (
        connect(options) as client,
        client.client_balance_consumer(
            part.topic, group=reading_group("read"), partitions={part.partition_key: part.start}
        ) as consumer,
    ):
        idle = 0.0
        while True:
            try:
                message = await consumer.getone(timeout=POLL)
            except TimeoutError:
                idle += POLL
                progress = consumer.offsets().get(part.partition_key)
                if progress is not None and (progress.caught_up or (progress.position or 0) >= part.end):
                    break
                if idle >= RECEIVE_TIMEOUT:
                    raise TimeoutError(
                        f"{part.partition_key}: no progress for {RECEIVE_TIMEOUT:.0f} s before offset {part.end}"
                    ) from None
                continue
            idle = 0.0
            rows.add(message)
            await consumer.ack(message)  # the last of a batch confirms it and moves the position on
            if rows.full:
                yield rows.take()
            progress = consumer.offsets().get(part.partition_key)
            if progress is not None and (progress.position or 0) >= part.end:
                break
    if len(rows):
        yield rows.take()


def to_batch(messages: Sequence[tubemqwire.Message]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([None] * len(messages), pa.binary()),
            pa.array([m.value for m in messages], pa.binary()),
            pa.array([m.topic for m in messages], pa.string()),
            pa.array([m.partition for m in messages], pa.int32()),
            pa.array([m.partition_key for m in messages], pa.string()),
            pa.array([m.message_id for m in messages], pa.int64()),
            pa.array(
                [None if m.timestamp is None else m.timestamp * 1000 for m in messages], pa.timestamp("us", tz="UTC")
            ),
            pa.array([m.msg_type for m in messages], pa.string()),
            pa.array([list(m.headers.items()) for m in messages], pa.map_(pa.string(), pa.binary())),
        ],
        schema=ARROW_SCHEMA,
    )


class TubeMQBatchReader(DataSourceReader):
    """One input partition per topic partition."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        tubemq_url(options)
        opts.topics(options)
        opts.offset_spec(options, "startingOffsets", "earliest")
        opts.offset_spec(options, "endingOffsets", "latest")
        tubemq_connect(options)
        if opts.get(options, "minPartitions") is not None:
            raise ValueError("option minPartitions is not supported by tubemqwire: store offsets do not count messages")

    def partitions(self) -> Sequence[InputPartition]:
        return asyncio.run(plan_ranges(self.options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return  # Spark's single placeholder partition of a plan without any: nothing to read
        # The client is opened and closed inside this call, so reused Python workers hold no connection.
        yield from drive(lambda: read_range(self.options, partition))
