"""A writer task's input (Spark Rows or Arrow batches) as chunks of columns, grouped by topic for bulk calls.

Each chunk's values, keys and headers are converted exactly as the one-row-at-a-time writer converts a
row's (``as_bytes``, ``as_headers``), so a bulk call sends what that many ``enqueue`` calls would have.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

# Rows taken at a time by a bulk call: enough for the per-call cost to vanish, few enough that a chunk's
# lists stay a few MB for 100-byte rows. Spark's Arrow batches hold 10,000 rows by default.
CHUNK_ROWS = 10_000


@dataclass(frozen=True)
class Columns:
    """One chunk: a list per column the writers read, None for a column the input does not have."""

    values: list[Any]
    keys: list[Any] | None
    headers: list[Any] | None
    topics: list[Any] | None


@dataclass(frozen=True)
class TopicRows:
    """One chunk's rows to one topic, converted: what a bulk call takes (None: no row has a key / headers)."""

    values: list[bytes | None]
    keys: list[bytes | None] | None
    headers: list[dict[str, bytes] | None] | None


def as_bytes(value: Any) -> bytes | None:
    """A binary column's cell as bytes (None stays None)."""
    return None if value is None else bytes(value)


def as_headers(headers: Any) -> dict[str, bytes] | None:
    """A ``map<string, binary>`` cell (a dict, or Arrow's list of pairs) as headers (None stays None)."""
    return None if headers is None else {str(name): bytes(value) for name, value in dict(headers).items()}


def column_chunks(items: Iterator[Any], chunk_rows: int = CHUNK_ROWS) -> Iterator[Columns]:
    """A task's input, Rows or Arrow record batches, as chunks of at most ``chunk_rows`` rows."""
    first = next(items, None)
    if first is None:
        return
    if isinstance(first, pa.RecordBatch):
        for batch in itertools.chain([first], items):
            for start in range(0, batch.num_rows, chunk_rows):
                yield batch_columns(batch.slice(start, chunk_rows))
        return
    rows = itertools.chain([first], items)
    while chunk := list(itertools.islice(rows, chunk_rows)):
        yield row_columns(chunk)


def row_columns(chunk: list[Any]) -> Columns:
    """Spark Rows of one schema as columns."""
    # A repeated column name: the last one, as Row.asDict() does.
    position = {name: i for i, name in enumerate(chunk[0].__fields__)}

    def column(name: str) -> list[Any] | None:
        at = position.get(name)
        return None if at is None else [row[at] for row in chunk]

    values = column("value")
    return Columns([None] * len(chunk) if values is None else values, column("key"), column("headers"), column("topic"))


def batch_columns(batch: pa.RecordBatch) -> Columns:
    """An Arrow record batch as columns."""
    names = batch.schema.names
    position = {name: i for i, name in enumerate(names)}

    def column(name: str) -> list[Any] | None:
        at = position.get(name)
        return None if at is None else batch.column(at).to_pylist()

    values = column("value")
    return Columns(
        [None] * batch.num_rows if values is None else values, column("key"), column("headers"), column("topic")
    )


def group_by_topic(columns: Columns, default_topic: str | None, empty_for_null: bool = False) -> dict[str, TopicRows]:
    """The chunk's rows by the topic each goes to (``default_topic``, else its ``topic`` column), in order.

    A null value becomes empty bytes with ``empty_for_null``; a row without a topic raises ValueError."""
    count = len(columns.values)
    if default_topic or columns.topics is None:
        # The option wins over the column, as in Spark's own Kafka sink.
        if not default_topic:
            raise ValueError("no topic: set option topic or a topic column")
        return {default_topic: _converted(columns, None, empty_for_null)}
    topics = columns.topics
    first = topics[0]
    if first is not None and topics.count(first) == count:
        return {first: _converted(columns, None, empty_for_null)}
    indices: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        if topic is None:
            raise ValueError("no topic: set option topic or a topic column")
        indices.setdefault(topic, []).append(i)
    return {topic: _converted(columns, picked, empty_for_null) for topic, picked in indices.items()}


def _converted(columns: Columns, picked: list[int] | None, empty_for_null: bool) -> TopicRows:
    """The rows ``picked`` (None: all) of ``columns``, converted."""

    def pick(column: list[Any]) -> list[Any]:
        return column if picked is None else [column[i] for i in picked]

    empty = b"" if empty_for_null else None
    # bytes cells (Arrow's, and Spark's Rows by default) are taken as they are; others go through bytes().
    values = [v if type(v) is bytes else empty if v is None else bytes(v) for v in pick(columns.values)]
    keys = None
    if columns.keys is not None:
        keys = [k if k is None or type(k) is bytes else bytes(k) for k in pick(columns.keys)]
        if all(k is None for k in keys):
            keys = None
    headers = None
    if columns.headers is not None:
        headers = [as_headers(h) for h in pick(columns.headers)]
        if all(h is None for h in headers):
            headers = None
    return TopicRows(values, keys, headers)
