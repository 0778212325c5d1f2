"""The ``kafkawire`` Spark data source: batch read and batch write of Kafka topics."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Iterator, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceReader,
    InputPartition,
)

import kafkawire
from mqwire.common.contract import Producer
from sparkwire import options as opts
from sparkwire.batches import drive
from sparkwire.kafka_read import ARROW_SCHEMA, OffsetRange, kafka_topics, read_range
from sparkwire.kafka_stream import KafkaStreamReader
from sparkwire.read_columns import spark_ddl
from sparkwire.security import kafka_connect
from sparkwire.source import Sink, WireDataSource
from sparkwire.writing import ArrowRowsWriter, RowsSender

SCHEMA = spark_ddl(ARROW_SCHEMA)


async def _offset_ranges(options: dict[str, str]) -> list[OffsetRange]:
    starting = opts.offset_spec(options, "startingOffsets", "earliest")
    ending = opts.offset_spec(options, "endingOffsets", "latest")
    split = opts.positive_int(options, "maxRecordsPerPartition")
    min_partitions = opts.positive_int(options, "minPartitions")
    async with (
        kafkawire.connect(opts.kafka_url(options), **kafka_connect(options)) as client,
        client.admin() as admin,
    ):
        names = await kafka_topics(admin, options)
        described = await admin.describe_topics(names) if names else []
        tps = [(t.name, p.partition) for t in described for p in t.partitions]
        earliest = await admin.list_offsets({tp: "earliest" for tp in tps}) if tps else {}
        latest = await admin.list_offsets({tp: "latest" for tp in tps}) if tps else {}

    def pick(spec: str | dict[str, dict[str, int]], tp: tuple[str, int]) -> int:
        low = earliest[kafkawire.TopicPartition(*tp)].offset
        high = latest[kafkawire.TopicPartition(*tp)].offset
        if spec == "earliest":
            return int(low)
        if spec == "latest":
            return int(high)
        assert isinstance(spec, dict)
        value = spec.get(tp[0], {}).get(str(tp[1]))
        if value is None or value == -2:
            return int(low)
        if value == -1:
            return int(high)
        return value

    ranges: list[OffsetRange] = []
    for tp in sorted(tps):
        start, end = pick(starting, tp), pick(ending, tp)
        step = split or max(end - start, 1)
        for low in range(start, end, step):
            ranges.append(OffsetRange(tp[0], tp[1], low, min(low + step, end)))
    return split_ranges(ranges, min_partitions) if min_partitions else ranges


def split_ranges(ranges: list[OffsetRange], min_partitions: int) -> list[OffsetRange]:
    """At least ``min_partitions`` ranges when there are that many records: as Spark's Kafka source does, each
    range is cut into parts in proportion to its share of all records, of nearly equal sizes."""
    total = sum(r.end - r.start for r in ranges)
    if len(ranges) >= min_partitions or total == 0:
        return ranges
    out: list[OffsetRange] = []
    for r in ranges:
        size = r.end - r.start
        parts = min(max(round(size / total * min_partitions), 1), size)
        bounds = [r.start + size * i // parts for i in range(parts + 1)]
        out.extend(OffsetRange(r.topic, r.partition, low, high) for low, high in itertools.pairwise(bounds))
    return out


class KafkaBatchReader(DataSourceReader):
    """One input partition per topic partition, split by ``maxRecordsPerPartition`` and ``minPartitions``."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        opts.kafka_url(options)
        opts.pattern(options)
        opts.offset_spec(options, "startingOffsets", "earliest")
        opts.offset_spec(options, "endingOffsets", "latest")
        opts.positive_int(options, "maxRecordsPerPartition")
        opts.positive_int(options, "minPartitions")
        kafka_connect(options)

    def partitions(self) -> Sequence[InputPartition]:
        return asyncio.run(_offset_ranges(self.options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange)
        # The client is opened and closed inside this call, so reused Python workers hold no connection.
        url, connect = opts.kafka_url(self.options), kafka_connect(self.options)
        yield from drive(lambda: read_range(url, partition, connect))


async def enqueue_many(
    producer: Producer,
    values: list[bytes | None],
    keys: list[bytes | None] | None,
    headers: list[dict[str, bytes] | None] | None,
) -> Awaitable[Any]:
    """A chunk of rows to kafkawire's bulk call: encoded in one pass, one future for them all."""
    assert isinstance(producer, kafkawire.Producer)
    return await producer.enqueue_many(values, keys=keys, headers=headers)


# Rows go through the shared contract, a chunk at a time through the bulk call; a null value stays null
# (a tombstone).
# The client stays open in the Python worker for the next task: Kafka has no keep-alive to miss between tasks,
# and a connection the broker dropped meanwhile is opened again on use.
WRITE_ROWS = RowsSender(kafkawire.connect, send_many=enqueue_many, keep_for=60.0)


class KafkaDataSource(WireDataSource):
    """Short name ``kafkawire``."""

    short_name = "kafkawire"
    row_schema = SCHEMA
    batch_reader = KafkaBatchReader
    stream_reader = KafkaStreamReader
    sink = Sink(opts.kafka_url, WRITE_ROWS, kafka_connect)
    batch_writer = ArrowRowsWriter
