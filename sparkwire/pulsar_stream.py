"""Streaming read and write for the ``pulsarwire`` source.

Offsets are ``{"<partition's full topic name>": position}``, the position being ``"earliest"`` (nothing read
yet) or the base64 serialized id of the last message already read. Each micro-batch reads, per partition,
what lies after the start position up to the partition's last message id when the batch was planned.
Pulsar ids are not counts, so there is no ``maxOffsetsPerTrigger``: a micro-batch takes everything there.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator, Sequence

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit

from pulsarwire.message import MessageId
from sparkwire import options as opts
from sparkwire.batches import drive
from sparkwire.pulsar_read import (
    IdRange,
    connect,
    last_id,
    partition_names,
    pulsar_topics,
    pulsar_url,
    read_range,
    topic_pattern,
)
from sparkwire.security import pulsar_connect

Positions = dict[str, str]
EARLIEST = "earliest"


def _encode(message_id: MessageId) -> str:
    return base64.b64encode(message_id.serialize()).decode("ascii")


async def _last_positions(options: dict[str, str]) -> Positions:
    """Every partition's last stored message id; ``earliest`` for a partition with nothing stored."""
    positions: Positions = {}
    async with connect(options) as client:
        for name, _ in await partition_names(client, await pulsar_topics(client, options)):
            last = await last_id(client, name)
            positions[name] = _encode(last) if last.entry_id >= 0 else EARLIEST
    return positions


def checked(start: object, options: dict[str, str]) -> Positions:
    """``start`` from the checkpoint, refused unless it is this source's and names only subscribed topics."""
    if not isinstance(start, dict) or not all(isinstance(v, str) for v in start.values()):
        raise ValueError(
            "the checkpoint's offsets were not written by the pulsarwire source: use a new checkpointLocation"
        )
    pattern = topic_pattern(options)
    names = set() if pattern is not None else set(opts.topics(options))
    for name in start:
        topic = name.rsplit("-partition-", 1)[0] if _index(name) >= 0 else name
        if (pattern is None and topic not in names) or (pattern is not None and not pattern.matches(topic)):
            raise ValueError(
                f"the checkpoint holds positions of topic {topic!r}, which this query does not subscribe to: "
                "use a new checkpointLocation"
            )
    return start


def _index(name: str) -> int:
    head, _, tail = name.rpartition("-partition-")
    return int(tail) if head and tail.isdigit() else -1


class PulsarStreamReader(DataSourceStreamReader):
    """The checkpoint keeps, per partition, the id of the last message read."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        pulsar_url(options)
        topic_pattern(options)
        pulsar_connect(options)
        self.starting = (opts.get(options, "startingOffsets") or "latest").strip()
        if self.starting not in (EARLIEST, "latest"):
            raise ValueError("option startingOffsets of a pulsarwire stream must be earliest or latest")

    def initialOffset(self) -> Positions:
        latest = asyncio.run(_last_positions(self.options))
        return dict.fromkeys(latest, EARLIEST) if self.starting == EARLIEST else latest

    def latestOffset(self, start: Positions, limit: ReadLimit) -> Positions:
        # Every limit is read as "all available": ids do not count messages (see the module docstring).
        checked(start, self.options)
        return asyncio.run(_last_positions(self.options))

    def partitions(self, start: Positions, end: Positions) -> Sequence[InputPartition]:
        ranges: list[IdRange] = []
        for name in sorted(end):
            low, high = start.get(name, EARLIEST), end[name]
            if high in (EARLIEST, low):
                continue
            first = None if low == EARLIEST else base64.b64decode(low)
            ranges.append(IdRange(name, _index(name), first, base64.b64decode(high)))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, IdRange):
            return
        yield from drive(lambda: read_range(self.options, partition))

    def commit(self, end: Positions) -> None:
        # Progress lives in Spark's checkpoint; reading leaves no subscription on the broker.
        return None
