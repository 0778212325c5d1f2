"""Bounded Arrow batches while a task fetches: what the readers of the three sources share.

A reader is an async generator of Arrow batches; :func:`drive` runs it on an event loop of its own one batch
at a time, so Spark gets each batch while the next is fetched and a task holds at most one batch (plus what
its client has fetched) rather than its whole range.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import pyarrow as pa  # type: ignore[import-untyped]

ROWS_PER_BATCH = 10_000
# Keys and values held before a batch is handed over, whatever the row count: large messages make smaller batches.
BYTES_PER_BATCH = 8 * 1024 * 1024

T = TypeVar("T")


def drive(make: Callable[[], AsyncIterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """The batches of the async generator ``make()``, one step of a private event loop per batch; the
    generator is closed (its client too) when Spark stops early or the task fails."""
    loop = asyncio.new_event_loop()
    batches = make()
    try:
        while True:
            try:
                batch = loop.run_until_complete(anext(batches))
            except StopAsyncIteration:
                return
            yield batch
    finally:
        try:
            loop.run_until_complete(_close(batches))
        finally:
            loop.close()


async def _close(batches: AsyncIterator[pa.RecordBatch]) -> None:
    close = getattr(batches, "aclose", None)
    if close is not None:
        await close()


class Rows(Generic[T]):
    """Messages gathered for the next batch, ready once ``ROWS_PER_BATCH`` rows or ``BYTES_PER_BATCH`` bytes
    of keys and values are held."""

    def __init__(self, to_batch: Callable[[Sequence[T]], pa.RecordBatch], size_of: Callable[[T], int]) -> None:
        self._to_batch = to_batch
        self._size_of = size_of
        self._rows: list[T] = []
        self._bytes = 0

    def add(self, message: T) -> None:
        """Hold ``message`` for the next batch."""
        self._rows.append(message)
        self._bytes += self._size_of(message)

    def extend(self, messages: Sequence[T], sizes: Sequence[int] | None = None) -> list[pa.RecordBatch]:
        """Hold ``messages`` (a whole fetch at once: cheaper than ``add`` per message); returns the batches
        that became full on the way, each cut where ``add`` would have cut it. ``sizes``, when given, are
        the messages' sizes as ``size_of`` would count them (a source may count a whole fetch faster)."""
        done: list[pa.RecordBatch] = []
        if sizes is None:
            sizes = list(map(self._size_of, messages))
        start = 0
        while start < len(messages):
            end = min(len(messages), start + ROWS_PER_BATCH - len(self._rows))
            total = self._bytes + sum(sizes[start:end])
            if total >= BYTES_PER_BATCH:
                # Bytes held after each message of the slice; the first at the bound closes the batch.
                held = list(itertools.accumulate(sizes[start:end], initial=self._bytes))[1:]
                end = start + bisect.bisect_left(held, BYTES_PER_BATCH) + 1
                total = held[end - start - 1]
            self._rows.extend(messages[start:end])
            self._bytes = total
            start = end
            if self.full:
                done.append(self.take())
        return done

    @property
    def full(self) -> bool:
        """Whether the held rows make a batch of the bounded size."""
        return len(self._rows) >= ROWS_PER_BATCH or self._bytes >= BYTES_PER_BATCH

    def __len__(self) -> int:
        return len(self._rows)

    def take(self) -> pa.RecordBatch:
        """The held rows as one batch; nothing is held afterwards."""
        batch = self._to_batch(self._rows)
        self._rows, self._bytes = [], 0
        return batch


def size_of(message: Any) -> int:
    """The bytes of a message's key and value."""
    return len(message.value or b"") + len(getattr(message, "key", None) or b"")
