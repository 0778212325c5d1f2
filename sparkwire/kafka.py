"""The ``kafkawire`` Spark data source: batch read and batch write of Kafka topics."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

import kafkawire
from sparkwire import options as opts
from sparkwire.kafka_read import OffsetRange, read_range
from sparkwire.writing import RowsSender, RowsStreamWriter, RowsWriter

SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "headers map<string, binary>"
)
class KafkaDataSource(DataSource):
    """Short name ``kafkawire``."""

    @classmethod
    def name(cls) -> str:
        return "kafkawire"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> KafkaBatchReader:
        return KafkaBatchReader(dict(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RowsWriter(dict(self.options), opts.kafka_url, WRITE_ROWS)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from sparkwire.kafka_stream import KafkaStreamReader

        return KafkaStreamReader(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RowsStreamWriter(dict(self.options), opts.kafka_url, WRITE_ROWS)


async def _offset_ranges(options: dict[str, str]) -> list[OffsetRange]:
    url = opts.kafka_url(options)
    names = opts.topics(options)
    starting = opts.offset_spec(options, "startingOffsets", "earliest")
    ending = opts.offset_spec(options, "endingOffsets", "latest")
    split = opts.positive_int(options, "maxRecordsPerPartition")
    client = kafkawire.connect(url)
    await client.start()
    try:
        admin = client.admin()
        try:
            described = await admin.describe_topics(names)
            tps = [(t.name, p.partition) for t in described for p in t.partitions]
            earliest = await admin.list_offsets({tp: "earliest" for tp in tps})
            latest = await admin.list_offsets({tp: "latest" for tp in tps})
        finally:
            await admin.close()
    finally:
        await client.close()

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
    return ranges


class KafkaBatchReader(DataSourceReader):
    """One input partition per topic partition, split by ``maxRecordsPerPartition``."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        opts.kafka_url(options)
        opts.topics(options)

    def partitions(self) -> Sequence[InputPartition]:
        return asyncio.run(_offset_ranges(self.options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange)
        # The client is opened and closed inside this call, so reused Python workers hold no connection.
        yield from asyncio.run(read_range(opts.kafka_url(self.options), partition))


# Rows go through the shared contract; a null value stays null (a tombstone).
WRITE_ROWS = RowsSender(kafkawire.connect)
