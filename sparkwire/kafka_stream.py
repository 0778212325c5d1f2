"""Streaming read and write for the ``kafkawire`` source; offsets are ``{"topic": {"partition": next offset}}``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

import kafkawire
from sparkwire import options as opts
from sparkwire.kafka_read import OffsetRange, read_range

Offsets = dict[str, dict[str, int]]


async def _ends(url: str, names: list[str], which: str) -> Offsets:
    client = kafkawire.connect(url)
    await client.start()
    try:
        admin = client.admin()
        try:
            described = await admin.describe_topics(names)
            tps = [(t.name, p.partition) for t in described for p in t.partitions]
            found = await admin.list_offsets({tp: which for tp in tps})
        finally:
            await admin.close()
    finally:
        await client.close()
    out: Offsets = {}
    for tp, value in found.items():
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(value.offset)
    return out


class KafkaStreamReader(DataSourceStreamReader):
    """Each micro-batch reads ``[start, end)`` of every partition; the checkpoint keeps the end."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.url = opts.kafka_url(options)
        self.topics = opts.topics(options)
        self.starting = opts.offset_spec(options, "startingOffsets", "latest")
        self.max_per_trigger = opts.positive_int(options, "maxOffsetsPerTrigger")

    def initialOffset(self) -> Offsets:
        if isinstance(self.starting, dict):
            return self.starting
        return asyncio.run(_ends(self.url, self.topics, self.starting))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.max_per_trigger)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        latest = asyncio.run(_ends(self.url, self.topics, "latest"))
        if not isinstance(limit, ReadMaxRows):
            return latest
        # The budget is shared evenly; a partition that needs less leaves its share to the others.
        pending = {
            (t, p): max(high - start.get(t, {}).get(p, high), 0)
            for t, parts in latest.items()
            for p, high in parts.items()
        }
        budget, grant = limit.max_rows, dict.fromkeys(pending, 0)
        while budget > 0 and any(grant[tp] < pending[tp] for tp in pending):
            open_tps = [tp for tp in sorted(pending) if grant[tp] < pending[tp]]
            share = max(budget // len(open_tps), 1)
            for tp in open_tps:
                extra = min(share, pending[tp] - grant[tp], budget)
                grant[tp] += extra
                budget -= extra
        out: Offsets = {}
        for (t, p), high in ((tp, latest[tp[0]][tp[1]]) for tp in pending):
            out.setdefault(t, {})[p] = start.get(t, {}).get(p, high) + grant[(t, p)]
        return out

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        ranges: list[OffsetRange] = []
        for topic in sorted(end):
            for part, high in sorted(end[topic].items(), key=lambda item: int(item[0])):
                low = start.get(topic, {}).get(part, 0)
                if high > low:
                    ranges.append(OffsetRange(topic, int(part), low, high))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange)
        yield from asyncio.run(read_range(self.url, partition))

    def commit(self, end: Offsets) -> None:
        # Progress lives in Spark's checkpoint; the broker keeps no state for this reader.
        return None
