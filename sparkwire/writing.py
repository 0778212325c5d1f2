"""Rows to topics: what the writers of the three sources share.

A writer task hands each row to the client's ``enqueue`` (or, where the producer has a bulk call, each chunk
of rows of one topic to it at once) and reports success only once every message is acknowledged (at least
once: an acknowledged message cannot be taken back, so a retried task or job may write some twice). Writers
are picklable: they hold options and module-level functions only. Every task runs on the Python worker's one
event loop bridge (``worker_session``); a sender with ``keep_for`` leaves its client open there for the next
task with the same options.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)

from mqwire.common.contract import Client, Producer, Receipt
from sparkwire import options as opts
from sparkwire.options import ConnectOptions
from sparkwire.row_columns import Columns, as_bytes, as_headers, column_chunks, group_by_topic
from sparkwire.worker_session import SESSION, settle_heap


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    """How many messages one task had acknowledged."""

    written: int


# (topic, row fields) -> the future of the message's acknowledgement
Enqueue = Callable[[str, dict[str, Any]], Awaitable[Awaitable[Receipt]]]
# (producer, values, keys or None, headers or None) -> the future of all of their acknowledgements
SendMany = Callable[
    [Producer, list[bytes | None], list[bytes | None] | None, list[dict[str, bytes] | None] | None],
    Awaitable[Awaitable[Any]],
]
# options -> the connect() URL
UrlOf = Callable[[Mapping[str, str]], str]
# options -> the connect() keywords (security and timeouts) they give
ConnectOf = Callable[[Mapping[str, str]], ConnectOptions]
# (url, default topic, rows, connect() keywords) -> how many were acknowledged
WriteRows = Callable[[str, "str | None", Iterator[Any], ConnectOptions], Coroutine[Any, Any, int]]


async def send_rows(rows: Iterator[Any], default_topic: str | None, enqueue: Enqueue) -> int:
    """Every row to the ``topic`` option (``default_topic``), else to its ``topic`` column; waits for every
    acknowledgement and returns how many there were."""
    futures = []
    for row in rows:
        fields = row.asDict()
        # The option wins over the column, as in Spark's own Kafka sink: a DataFrame read from one topic and
        # written with option("topic", ...) goes to that topic, not back to where it came from.
        topic = default_topic or fields.get("topic")
        if topic is None:
            raise ValueError("no topic: set option topic or a topic column")
        futures.append(await enqueue(topic, fields))
    for future in futures:
        await future
    return len(futures)


async def send_chunks(
    chunks: Iterator[Columns],
    default_topic: str | None,
    producers: ProducersByTopic,
    send_many: SendMany,
    empty_for_null: bool = False,
) -> int:
    """``send_rows`` with one bulk call per topic per chunk: waits for every call's acknowledgement (the first
    failed one fails the task) and returns how many rows they carried.

    Each chunk is taken from ``chunks`` in a thread: Spark's input is a blocking read of the worker's socket,
    which on the loop would hold back the producer's sending (and its acknowledgements) until the task's input
    ended or the producer's buffer filled."""
    futures = []
    written = 0
    while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
        for topic, group in group_by_topic(chunk, default_topic, empty_for_null).items():
            producer = await producers.get(topic)
            futures.append(await send_many(producer, group.values, group.keys, group.headers))
            written += len(group.values)
    for future in futures:
        await future
    return written


class ProducersByTopic:
    """One started producer per topic (producers of the contract are bound to a topic)."""

    def __init__(self, client: Client[Any]) -> None:
        self._client = client
        self._producers: dict[str, Producer] = {}

    async def get(self, topic: str) -> Producer:
        """The producer of ``topic``, started on first use."""
        producer = self._producers.get(topic)
        if producer is None:
            producer = self._producers[topic] = await self._client.producer(topic).__aenter__()
        return producer

    async def close(self) -> None:
        """Flush and close every producer."""
        for producer in self._producers.values():
            await producer.close()


class KeptClient(ProducersByTopic):
    """A client that writer tasks keep open from one to the next, and its producers; ``close`` closes both."""

    async def close(self) -> None:
        """Flush and close every producer, then the client."""
        try:
            await super().close()
        finally:
            await self._client.close()


def no_connect_options(options: Mapping[str, str]) -> ConnectOptions:
    """No connect() keyword beyond the URL."""
    return {}


def no_options(fields: dict[str, Any]) -> dict[str, Any]:
    """No per-message option beyond value, key and headers."""
    return {}


@dataclass(frozen=True)
class RowsSender:
    """Sends a task's rows through any client of the contract: ``value``, ``key``, ``headers``, to the ``topic``
    option or else the row's ``topic`` column; ``options_of`` adds a system's own per-message options.
    With ``send_many`` (a producer's bulk call) the rows go in chunks, one call per topic per chunk, and
    ``options_of`` is not used: the bulk call takes value, key and headers only.

    Picklable (module-level functions only), as Spark ships writers to executors."""

    connect: Callable[..., Client[Any]]
    options_of: Callable[[dict[str, Any]], dict[str, Any]] = no_options
    # Pulsar and TubeMQ writers have always sent a missing value as empty bytes; Kafka keeps a null (tombstone).
    empty_for_null: bool = False
    send_many: SendMany | None = None

    # Seconds a client may stay unused in the Python worker between tasks before the worker closes it (0:
    # every task opens and closes its own).
    keep_for: float = 0.0

    async def __call__(
        self, url: str, default_topic: str | None, rows: Iterator[Any], options: ConnectOptions | None = None
    ) -> int:
        """Connect, send every row, wait for every acknowledgement, close; how many were acknowledged."""
        async with self.connect(url, **(options or {})) as client:
            producers = ProducersByTopic(client)
            try:
                return await self.send(producers, default_topic, rows)
            finally:
                await producers.close()

    async def send(self, producers: ProducersByTopic, default_topic: str | None, rows: Iterator[Any]) -> int:
        """Send every row through ``producers`` and wait for every acknowledgement; how many there were."""
        if self.send_many is not None:
            chunks = column_chunks(rows)
            return await send_chunks(chunks, default_topic, producers, self.send_many, self.empty_for_null)

        async def enqueue(topic: str, fields: dict[str, Any]) -> Awaitable[Receipt]:
            producer = await producers.get(topic)
            value = as_bytes(fields.get("value"))
            if value is None and self.empty_for_null:
                value = b""
            key, headers = as_bytes(fields.get("key")), as_headers(fields.get("headers"))
            return await producer.enqueue(value, key=key, headers=headers, **self.options_of(fields))

        return await send_rows(rows, default_topic, enqueue)


class _WritesRows:
    """What both writers do in a task: connect, send every row, wait for every acknowledgement."""

    def __init__(
        self, options: Mapping[str, str], url_of: UrlOf, write: WriteRows, connect_of: ConnectOf = no_connect_options
    ) -> None:
        self.url = url_of(options)
        self.topic = opts.get(options, "topic")
        self.write_rows = write
        connect_of(options)  # a wrong option fails here, at planning
        # The options are kept, not the keywords: an SSL context does not travel to executors.
        self.options = dict(options)
        self.connect_of = connect_of
        settle_heap()  # planning runs in a reused worker too

    def write(self, iterator: Iterator[Any]) -> WriteResult:
        sender = self.write_rows
        if isinstance(sender, RowsSender) and sender.keep_for > 0:
            result = WriteResult(SESSION.run(self._write_with_kept_client, sender, iterator))
        else:
            connect = self.connect_of(self.options)
            result = WriteResult(SESSION.run(sender, self.url, self.topic, iterator, connect))
        settle_heap()  # after the first task: the modules are imported and a kept client is open
        return result

    async def _write_with_kept_client(self, sender: RowsSender, rows: Iterator[Any]) -> int:
        key = (sender, self.url, tuple(sorted(self.options.items())))

        async def open_client() -> KeptClient:
            client = await sender.connect(self.url, **self.connect_of(self.options)).__aenter__()
            return KeptClient(client)

        kept = await SESSION.take(key, open_client)
        try:
            written = await sender.send(kept, self.topic, rows)
        except BaseException:
            await SESSION.discard(kept)
            raise
        await SESSION.keep(key, kept, sender.keep_for)
        return written


class RowsWriter(_WritesRows, DataSourceWriter):
    """The batch writer: each task reports success only once every message is acknowledged."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        settle_heap()  # the commit runs in a reused worker of its own
        return None  # every message was acknowledged inside its task: nothing is left to publish

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        settle_heap()
        return None  # acknowledged messages cannot be taken back; a retried job writes at least once


class ArrowRowsWriter(RowsWriter, DataSourceArrowWriter):
    """The batch writer that Spark hands Arrow record batches instead of Rows, which saves building a Row per
    row; for a sender with a bulk call (``RowsSender.send_many``), which takes the batches' columns."""


class RowsStreamWriter(_WritesRows, DataSourceStreamWriter):
    """The streaming writer: each micro-batch task waits for every acknowledgement (at least once)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None
