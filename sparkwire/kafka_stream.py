"""Streaming read and write for the ``kafkawire`` source; offsets are ``{"topic": {"partition": next offset}}``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

import kafkawire
from sparkwire import options as opts
from sparkwire.batches import drive
from sparkwire.kafka_read import OffsetRange, kafka_topics, read_range
from sparkwire.security import kafka_connect

Offsets = dict[str, dict[str, int]]


async def _ends(url: str, options: dict[str, str], which: str) -> Offsets:
    async with kafkawire.connect(url, **kafka_connect(options)) as client, client.admin() as admin:
        names = await kafka_topics(admin, options)
        described = await admin.describe_topics(names) if names else []
        tps = [(t.name, p.partition) for t in described for p in t.partitions]
        found = await admin.list_offsets({tp: which for tp in tps}) if tps else {}
    out: Offsets = {}
    for tp, value in found.items():
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(value.offset)
    return out


def checked(start: object, options: dict[str, str]) -> Offsets:
    """``start`` from the checkpoint, refused unless it is this source's and names only subscribed topics."""
    shape_ok = isinstance(start, dict) and all(
        isinstance(parts, dict) and all(isinstance(v, int) for v in parts.values()) for parts in start.values()
    )
    if not shape_ok:
        raise ValueError(
            "the checkpoint's offsets were not written by the kafkawire source: use a new checkpointLocation"
        )
    assert isinstance(start, dict)
    wanted = opts.pattern(options)
    names = set(opts.topics(options)) if wanted is None else set()
    for topic in start:
        if (wanted is None and topic not in names) or (wanted is not None and not wanted.fullmatch(topic)):
            raise ValueError(
                f"the checkpoint holds offsets of topic {topic!r}, which this query does not subscribe to: "
                "use a new checkpointLocation"
            )
    return start


def capped(latest: Offsets, target: Offsets, start: Offsets) -> Offsets:
    """``latest`` held at ``target``; a partition the target lacks (created since) stays where ``start`` has it."""
    out: Offsets = {}
    for topic, parts in latest.items():
        for part, high in parts.items():
            held = target.get(topic, {}).get(part, start.get(topic, {}).get(part, 0))
            out.setdefault(topic, {})[part] = min(high, held)
    return out


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Each micro-batch reads ``[start, end)`` of every partition; the checkpoint keeps the end.

    Under ``trigger(availableNow=True)`` the ends are taken once when the query starts; the query reads up to
    them in micro-batches of at most ``maxOffsetsPerTrigger`` records and stops there, as Spark's Kafka
    source does.
    """

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.url = opts.kafka_url(options)
        opts.pattern(options)
        kafka_connect(options)
        self.starting = opts.offset_spec(options, "startingOffsets", "latest")
        self.max_per_trigger = opts.positive_int(options, "maxOffsetsPerTrigger")
        self.target: Offsets | None = None

    def initialOffset(self) -> Offsets:
        if isinstance(self.starting, dict):
            return self.starting
        return asyncio.run(_ends(self.url, self.options, self.starting))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.max_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = asyncio.run(_ends(self.url, self.options, "latest"))

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        start = checked(start, self.options)
        latest = asyncio.run(_ends(self.url, self.options, "latest"))
        if self.target is not None:
            latest = capped(latest, self.target, start)
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
        url, connect = self.url, kafka_connect(self.options)
        yield from drive(lambda: read_range(url, partition, connect))

    def commit(self, end: Offsets) -> None:
        # Progress lives in Spark's checkpoint; the broker keeps no state for this reader.
        return None
