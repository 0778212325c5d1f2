"""Reading Pulsar topics in Spark tasks: the planned ranges, the batch reader and what the stream reader shares."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceReader,
    InputPartition,
)

import pulsarwire
from mqwire.common.errors import RetriableError
from pulsarwire.message import MessageId
from pulsarwire.topic_pattern import TopicPattern
from pulsarwire.topics import partition_of
from sparkwire import options as opts
from sparkwire.batches import Rows, drive, size_of
from sparkwire.read_columns import BINARY, read_schema, spark_ddl
from sparkwire.security import pulsar_connect

ARROW_SCHEMA = read_schema([("message_id", BINARY)])
SCHEMA = spark_ddl(ARROW_SCHEMA)
RECEIVE_TIMEOUT = 30.0  # seconds without a message before a range that should hold more is given up


@dataclass(frozen=True)
class IdRange(InputPartition):
    """Messages of one topic partition after ``start`` (None: from the first) up to ``end`` inclusive."""

    topic: str  # the full name of the partition (``...-partition-N``) or of a topic without partitions
    partition: int
    start: bytes | None
    end: bytes


def pulsar_url(options: Mapping[str, str]) -> str:
    url = opts.get(options, "url") or opts.get(options, "service.url")
    if not url:
        raise ValueError("option url (or service.url) is required")
    return url


def _position(spec: str, topic: str, name: str) -> MessageId | str:
    """``earliest``/``latest``, or the id that JSON ``spec`` names for partition ``topic``."""
    if spec in ("earliest", "latest"):
        return spec
    try:
        mapping = json.loads(spec)
    except json.JSONDecodeError as exc:
        raise ValueError(f"option {name} must be earliest, latest or JSON, got {spec!r}") from exc
    if not isinstance(mapping, dict):
        raise ValueError(f"option {name} JSON must be an object of topic to base64 message id")
    value = mapping.get(topic)
    if value is None:
        return "earliest" if name == "startingOffsets" else "latest"
    if value in ("earliest", "latest"):
        return str(value)
    return MessageId.deserialize(base64.b64decode(value))


class RangeEnd:
    """The last message id of a range. Without a batch index it stands for the whole entry: every message
    of that batch belongs to the range, and the range ends once the entry's messages are drained."""

    def __init__(self, last: MessageId) -> None:
        self.entry = (last.ledger_id, last.entry_id)
        self.batch_index = last.batch_index

    def beyond(self, message_id: MessageId) -> bool:
        entry = (message_id.ledger_id, message_id.entry_id)
        if entry != self.entry:
            return entry > self.entry
        return self.batch_index >= 0 and message_id.batch_index > self.batch_index

    def reached(self, message_id: MessageId) -> bool:
        """Whether ``message_id`` is the range's last message (or in its last entry, for a whole entry)."""
        if (message_id.ledger_id, message_id.entry_id) != self.entry:
            return False
        return self.batch_index < 0 or message_id.batch_index >= self.batch_index


# As Spark's Kafka source retries its offset lookups (fetchOffset.numRetries, fetchOffset.retryIntervalMs): a
# broker may hold the lookup past the operation timeout, as while a topic's transaction buffer recovers, after
# which it closes and reopens the topic; a new reader then gets the answer.
LAST_ID_ATTEMPTS = 3
LAST_ID_RETRY_INTERVAL = 1.0


async def last_id(client: pulsarwire.Client, topic: str) -> MessageId:
    """The id of the last message stored in ``topic`` (a partition or a topic without partitions)."""
    for attempt in range(1, LAST_ID_ATTEMPTS + 1):
        try:
            async with client.reader(topic, start="latest") as reader:
                return await reader._consumers[0].get_last_message_id()
        except RetriableError:
            if attempt == LAST_ID_ATTEMPTS:
                raise
            await asyncio.sleep(LAST_ID_RETRY_INTERVAL)
    raise AssertionError("unreachable")


async def partition_names(client: pulsarwire.Client, topics: list[str]) -> list[tuple[str, int]]:
    """``(full name, partition index)`` of every partition of ``topics`` (index -1: no partitions)."""
    names: list[tuple[str, int]] = []
    for topic in topics:
        count = sum(1 for name in await client.get_topic_partitions(topic) if partition_of(name) >= 0)
        names.extend([(f"{topic}-partition-{i}", i) for i in range(count)] if count else [(topic, -1)])
    return names


def topic_pattern(options: Mapping[str, str]) -> TopicPattern | None:
    """``subscribePattern`` over complete topic names of one namespace, or None for ``subscribe``."""
    wanted = opts.pattern(options)
    if wanted is None:
        return None
    try:
        return TopicPattern(wanted)
    except ValueError as exc:
        raise ValueError(f"option subscribePattern: {exc}") from None


async def pulsar_topics(client: pulsarwire.Client, options: Mapping[str, str]) -> list[str]:
    """The topics of ``subscribe``, or those that ``subscribePattern`` matches now."""
    pattern = topic_pattern(options)
    if pattern is None:
        return opts.topics(options)
    return await pattern.matching(client._session)


def connect(options: Mapping[str, str]) -> pulsarwire.Client:
    """A client for ``url`` with the ``pulsar.*`` options (not yet started)."""
    return pulsarwire.connect(pulsar_url(options), **pulsar_connect(options))


async def _id_ranges(options: dict[str, str]) -> list[IdRange]:
    starting = (opts.get(options, "startingOffsets") or "earliest").strip()
    ending = (opts.get(options, "endingOffsets") or "latest").strip()
    ranges: list[IdRange] = []
    async with connect(options) as client:
        for name, index in await partition_names(client, await pulsar_topics(client, options)):
            last = await last_id(client, name)
            end = _position(ending, name, "endingOffsets")
            end_id = last if end == "latest" else end
            if not isinstance(end_id, MessageId) or end_id.entry_id < 0:
                continue  # nothing stored, or ending at the start: no rows
            start = _position(starting, name, "startingOffsets")
            if start == "latest":
                continue
            first = start.serialize() if isinstance(start, MessageId) else None
            ranges.append(IdRange(name, index, first, end_id.serialize()))
    return ranges


async def read_range(options: Mapping[str, str], part: IdRange) -> AsyncIterator[pa.RecordBatch]:
    """The messages of ``part`` as Arrow batches of bounded size (:mod:`sparkwire.batches`), each handed over
    as soon as it is full, read with a client and a non-durable reader of their own."""
    end = RangeEnd(MessageId.deserialize(part.end))
    start: MessageId | Literal["earliest"] = "earliest" if part.start is None else MessageId.deserialize(part.start)
    rows: Rows[Any] = Rows(lambda messages: _to_batch(messages, part.partition), size_of)
    async with connect(options) as client, client.reader(part.topic, start=start) as reader:
        done = False
        while not done:
            message: Any = await reader.receive(timeout=RECEIVE_TIMEOUT)  # raises TimeoutError when none comes
            # A batch arrives whole: take what is already here before deciding whether the range is done.
            while message is not None:
                if end.beyond(message.message_id):
                    done = True
                    break
                rows.add(message)
                done = done or end.reached(message.message_id)
                if rows.full:
                    yield rows.take()
                message = reader.receive_nowait()
    if len(rows):
        yield rows.take()


def _to_batch(messages: Sequence[Any], partition: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key for m in messages], pa.binary()),
            pa.array([m.value for m in messages], pa.binary()),
            pa.array([m.topic_name for m in messages], pa.string()),
            pa.array([partition] * len(messages), pa.int32()),
            pa.array([m.message_id.serialize() for m in messages], pa.binary()),
            pa.array([m.timestamp * 1000 for m in messages], pa.timestamp("us", tz="UTC")),
            pa.array([list(m.headers.items()) for m in messages], pa.map_(pa.string(), pa.binary())),
        ],
        schema=ARROW_SCHEMA,
    )


class PulsarBatchReader(DataSourceReader):
    """One input partition per topic partition."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        pulsar_url(options)
        topic_pattern(options)
        pulsar_connect(options)
        if opts.get(options, "minPartitions") is not None:
            raise ValueError("option minPartitions is not supported by pulsarwire: message ids do not count messages")

    def partitions(self) -> Sequence[InputPartition]:
        return asyncio.run(_id_ranges(self.options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, IdRange):
            return  # Spark's single placeholder partition of a plan without any: nothing to read
        # The client is opened and closed inside this call, so reused Python workers hold no connection.
        yield from drive(lambda: read_range(self.options, partition))
