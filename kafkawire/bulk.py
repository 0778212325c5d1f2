"""One ``enqueue_many`` call's records across the batches that carry them, and its one future.

The records of a call are appended to batches in runs (``spans``); each batch tells the call when its part
is acknowledged or failed. The call's future resolves once every part is acknowledged, with a
``BulkMetadata``: where each record was stored, in the order of the call, built only when read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import overload

from kafkawire.message import RecordMetadata


class BulkMetadata(Sequence[RecordMetadata]):
    """Where each record of an ``enqueue_many`` call was stored, in the order the records were given.

    A sequence of ``RecordMetadata``; the per-record tuples are made the first time it is indexed or
    iterated, so a caller that only checks for success pays nothing per record.
    """

    __slots__ = ("_count", "_items", "_parts")

    def __init__(self, count: int, parts: list[tuple[Sequence[int], str, int, int, int]]) -> None:
        self._count = count
        # (positions in the call, topic, partition, first offset or -1, timestamp) of each acknowledged run.
        self._parts = parts
        self._items: list[RecordMetadata] | None = None

    def _materialize(self) -> list[RecordMetadata]:
        items = self._items
        if items is None:
            built: list[RecordMetadata | None] = [None] * self._count
            make = tuple.__new__
            for positions, topic, partition, first, timestamp in self._parts:
                for i, position in enumerate(positions):
                    offset = -1 if first < 0 else first + i
                    built[position] = make(RecordMetadata, (topic, partition, offset, timestamp))
            self._items = built  # type: ignore[assignment]  # every position is filled once all parts are in
            return built  # type: ignore[return-value]
        return items

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> RecordMetadata: ...
    @overload
    def __getitem__(self, index: slice) -> list[RecordMetadata]: ...
    def __getitem__(self, index: int | slice) -> RecordMetadata | list[RecordMetadata]:
        return self._materialize()[index]

    def __iter__(self) -> Iterator[RecordMetadata]:
        return iter(self._materialize())

    def __repr__(self) -> str:
        return f"BulkMetadata({self._count} records)"


class BulkSend:
    """The parts of one call still unacknowledged, and the future that resolves when none is left."""

    __slots__ = ("_parts", "count", "future", "pending")

    def __init__(self, count: int, loop: asyncio.AbstractEventLoop) -> None:
        self.count = count
        self.future: asyncio.Future[BulkMetadata] = loop.create_future()
        self.pending = 0  # runs appended to batches and not yet acknowledged
        self._parts: list[tuple[Sequence[int], str, int, int, int]] = []

    def add_run(self) -> None:
        """A run of the call's records went into a batch."""
        self.pending += 1

    def run_done(self, positions: Sequence[int], topic: str, partition: int, first: int, timestamp: int) -> None:
        """A batch holding the run ``positions`` was acknowledged from offset ``first`` (-1: not told)."""
        self._parts.append((positions, topic, partition, first, timestamp))
        self.pending -= 1
        if self.pending == 0 and not self.future.done():
            self.future.set_result(BulkMetadata(self.count, self._parts))

    def run_failed(self, error: BaseException) -> None:
        """A batch holding some of the call's records failed: the call fails with the first such error."""
        self.pending -= 1
        if not self.future.done():
            self.future.set_exception(error)

    def abandon(self, error: BaseException) -> None:
        """The call could not append all its records (closed, buffer full): fail it now."""
        if not self.future.done():
            self.future.set_exception(error)
