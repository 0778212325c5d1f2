"""Bounded Arrow batches while a task fetches: what the readers of the three sources share.

A reader is an async generator of Arrow batches; :func:`drive` steps it one batch at a time on the Python
worker's event loop bridge (``worker_session``), so Spark gets each batch as soon as it is whole and a task
holds at most one batch (plus what its client has fetched) rather than its whole range.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import pyarrow as pa  # type: ignore[import-untyped]

from sparkwire.worker_session import SESSION

ROWS_PER_BATCH = 10_000
# Keys and values held before a batch is handed over, whatever the row count: large messages make smaller batches.
BYTES_PER_BATCH = 8 * 1024 * 1024

T = TypeVar("T")


def drive(make: Callable[[], AsyncIterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """The batches of the async generator ``make()``, one call into the worker's event loop bridge per batch;
    the generator is closed (its client too) when Spark stops early or the task fails. An error inside the
    generator reaches the task as is; Ctrl-C cancels the step on the loop and goes on in the task."""
    bridge = SESSION.bridge
    steps = _Steps(make())
    try:
        while True:
            batch = bridge.call(steps.next)
            if batch is _END:
                return
            yield batch
    finally:
        bridge.call(steps.close)


_END: Any = object()  # what a step returns once the generator is done


class _Steps:
    """An async generator stepped from another thread, and closed only once no step of it runs any more."""

    def __init__(self, batches: AsyncIterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self._step: asyncio.Task[Any] | None = None

    async def next(self) -> Any:
        """The next batch, or ``_END``."""
        self._step = asyncio.current_task()
        try:
            return await anext(self._batches)
        except StopAsyncIteration:
            return _END

    async def close(self) -> None:
        """Close the generator, after the step that a Ctrl-C cancelled (if any) has ended."""
        step = self._step
        if step is not None and not step.done():
            await asyncio.wait([step])
        close = getattr(self._batches, "aclose", None)
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
