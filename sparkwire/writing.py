"""Rows to topics: what the writers of the three sources share.

A writer task hands each row to the client's ``enqueue`` and reports success only once every message is
acknowledged (at least once: an acknowledged message cannot be taken back, so a retried task or job may
write some twice). Writers are picklable: they hold options and module-level functions only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from sparkwire import options as opts


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    """How many messages one task had acknowledged."""

    written: int


# (topic, row fields) -> the future of the message's acknowledgement
Enqueue = Callable[[str, dict[str, Any]], Awaitable["asyncio.Future[Any]"]]
# options -> the connect() URL
UrlOf = Callable[[Mapping[str, str]], str]
# (url, default topic, rows) -> how many were acknowledged
WriteRows = Callable[[str, "str | None", Iterator[Any]], Coroutine[Any, Any, int]]


async def send_rows(rows: Iterator[Any], default_topic: str | None, enqueue: Enqueue) -> int:
    """Every row to its topic (the row's ``topic`` column, else ``default_topic``); waits for every
    acknowledgement and returns how many there were."""
    futures = []
    for row in rows:
        fields = row.asDict()
        topic = fields.get("topic") or default_topic
        if topic is None:
            raise ValueError("no topic: set option topic or a topic column")
        futures.append(await enqueue(topic, fields))
    for future in futures:
        await future
    return len(futures)


class _Producer(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...


P = TypeVar("P", bound=_Producer)


class ProducersByTopic(Generic[P]):
    """One started producer per topic, for clients whose producers are bound to a topic."""

    def __init__(self, open_producer: Callable[[str], P]) -> None:
        self._open = open_producer
        self._producers: dict[str, P] = {}

    async def get(self, topic: str) -> P:
        producer = self._producers.get(topic)
        if producer is None:
            producer = self._producers[topic] = self._open(topic)
            await producer.start()
        return producer

    async def close(self) -> None:
        for producer in self._producers.values():
            await producer.close()


def as_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def as_headers(headers: Any) -> dict[str, bytes] | None:
    return None if headers is None else {str(name): bytes(value) for name, value in dict(headers).items()}


class _WritesRows:
    """What both writers do in a task: connect, send every row, wait for every acknowledgement."""

    def __init__(self, options: Mapping[str, str], url_of: UrlOf, write: WriteRows) -> None:
        self.url = url_of(options)
        self.topic = opts.get(options, "topic")
        self.write_rows = write

    def write(self, iterator: Iterator[Any]) -> WriteResult:
        return WriteResult(asyncio.run(self.write_rows(self.url, self.topic, iterator)))


class RowsWriter(_WritesRows, DataSourceWriter):
    """The batch writer: each task reports success only once every message is acknowledged."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        return None  # every message was acknowledged inside its task: nothing is left to publish

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        return None  # acknowledged messages cannot be taken back; a retried job writes at least once


class RowsStreamWriter(_WritesRows, DataSourceStreamWriter):
    """The streaming writer: each micro-batch task waits for every acknowledgement (at least once)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None
