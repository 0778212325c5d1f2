"""Streaming read and write for the ``tubemqwire`` source.

Offsets are ``{"brokerId:topic:partitionId": index offset}``: where the next micro-batch starts in each
partition. A micro-batch reads every partition from there to the store's end when the batch was planned,
whole fetched batches at a time (see :mod:`sparkwire.tubemq`). A query stopped and restarted from its
checkpoint goes on from the offsets of the last committed micro-batch, so nothing is read twice or lost;
while producers write during a micro-batch, its last fetched batch of a partition may already hold
messages that the next micro-batch reads again (at least once for those). Store offsets do not count a
partition's messages, so there is no ``maxOffsetsPerTrigger``: a micro-batch takes everything there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit

from mqwire.common.errors import ProtocolError
from sparkwire import options as opts
from sparkwire.batches import drive
from sparkwire.security import tubemq_connect
from sparkwire.tubemq_read import OffsetRange, partition_bounds, read_range, tubemq_url
from tubemqwire.protocol.metadata import parse_partition_key

Offsets = dict[str, int]


class TubeMQStreamReader(DataSourceStreamReader):
    """The checkpoint keeps, per partition, the index offset the next micro-batch starts from."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        tubemq_url(options)
        tubemq_connect(options)
        self.topics = opts.topics(options)
        self.starting = (opts.get(options, "startingOffsets") or "latest").strip()
        if self.starting not in ("earliest", "latest"):
            raise ValueError("option startingOffsets of a tubemqwire stream must be earliest or latest")

    def _bounds(self) -> dict[str, tuple[int, int]]:
        bounds = asyncio.run(partition_bounds(self.options, self.topics))
        return {key: span for partitions in bounds.values() for key, span in partitions.items()}

    def initialOffset(self) -> Offsets:
        pick = 0 if self.starting == "earliest" else 1
        return {key: span[pick] for key, span in sorted(self._bounds().items())}

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        # Every limit is read as "all available": offsets do not count messages (see the module docstring).
        start = self.checked(start)
        ends = {key: span[1] for key, span in self._bounds().items()}
        # A partition never goes back: an end below the start (a store emptied by retention) keeps the start.
        return {key: max(end, start.get(key, 0)) for key, end in sorted(ends.items())}

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        ranges: list[OffsetRange] = []
        for key in sorted(end):
            low, high = start.get(key, 0), end[key]
            if low < high:
                ranges.append(OffsetRange(parse_partition_key(key)[1], key, low, high))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return
        yield from drive(lambda: read_range(self.options, partition))

    def checked(self, start: object) -> Offsets:
        """``start`` from the checkpoint, refused unless it is this source's and names only subscribed topics."""
        if not isinstance(start, dict) or not all(isinstance(v, int) for v in start.values()):
            raise ValueError(
                "the checkpoint's offsets were not written by the tubemqwire source: use a new checkpointLocation"
            )
        for key in start:
            try:
                topic = parse_partition_key(key)[1]
            except ProtocolError:
                topic = key
            if topic not in self.topics:
                raise ValueError(
                    f"the checkpoint holds offsets of topic {topic!r}, which this query does not subscribe to: "
                    "use a new checkpointLocation"
                )
        return start

    def commit(self, end: Offsets) -> None:
        # Progress lives in Spark's checkpoint; each read uses a group of its own.
        return None
