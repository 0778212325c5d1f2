"""The queue between the fetch loops and the application: fetched records in arrival order per partition,
under a soft bound on their number that holds the fetch loops back while the application is slow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass

from kafkawire.message import Message
from kafkawire.metadata import TopicPartition


@dataclass(slots=True)
class _Chunk:
    tp: TopicPartition
    messages: list[Message]
    index: int = 0


class ReceiveQueue:
    """Fetched records waiting for the application, with a soft bound on their number.

    A fetch may overshoot the bound by one response; fetching then waits until the application has
    taken enough to bring the count back under it.
    """

    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self.buffered = 0
        # Records put and later dropped by a seek: never handed out, so not received.
        self.dropped = 0
        self._chunks: deque[_Chunk] = deque()
        self._errors: deque[BaseException] = deque()
        self._data = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        # The last record handed out per partition: what auto-commit stores (per chunk, not per record).
        self.delivered: dict[TopicPartition, Message] = {}

    @property
    def has_space(self) -> bool:
        return self.buffered < self.max_records

    def put(self, tp: TopicPartition, messages: list[Message]) -> None:
        if messages:
            self._chunks.append(_Chunk(tp, messages))
            self.buffered += len(messages)
            self._data.set()
            if not self.has_space:
                self._space.clear()

    def put_error(self, error: BaseException) -> None:
        self._errors.append(error)
        self._data.set()

    def drop(self, tp: TopicPartition) -> None:
        """Forget the buffered records of ``tp`` (after a seek)."""
        for chunk in self._chunks:
            if chunk.tp == tp:
                self.buffered -= len(chunk.messages) - chunk.index
                self.dropped += len(chunk.messages) - chunk.index
        self._chunks = deque(c for c in self._chunks if c.tp != tp)
        self.delivered.pop(tp, None)
        self._after_take()

    def _after_take(self) -> None:
        if not self._chunks and not self._errors:
            self._data.clear()
        if self.has_space:
            self._space.set()

    def take(self, max_records: int, only: frozenset[TopicPartition] | None = None) -> list[Message]:
        """Up to ``max_records`` buffered records (of the partitions ``only``, when given), in order per
        partition; raises a queued fetch error first."""
        if self._errors:
            error = self._errors.popleft()
            self._after_take()
            raise error
        if only is not None:
            return self._take_of(max_records, only)
        out: list[Message] = []
        chunks = self._chunks
        delivered = self.delivered
        while chunks and len(out) < max_records:
            chunk = chunks[0]
            end = min(len(chunk.messages), chunk.index + max_records - len(out))
            if chunk.index == 0 and end == len(chunk.messages) and not out:
                out = chunk.messages
            else:
                out.extend(chunk.messages[chunk.index : end])
            chunk.index = end
            delivered[chunk.tp] = chunk.messages[end - 1]
            if end == len(chunk.messages):
                chunks.popleft()
        self.buffered -= len(out)
        self._after_take()
        return out

    def _take_of(self, max_records: int, only: frozenset[TopicPartition]) -> list[Message]:
        out: list[Message] = []
        for chunk in self._chunks:
            if len(out) >= max_records:
                break
            if chunk.tp not in only or chunk.index == len(chunk.messages):
                continue
            end = min(len(chunk.messages), chunk.index + max_records - len(out))
            out.extend(chunk.messages[chunk.index : end])
            chunk.index = end
            self.delivered[chunk.tp] = chunk.messages[end - 1]
        self._chunks = deque(c for c in self._chunks if c.index < len(c.messages))
        self.buffered -= len(out)
        self._after_take()
        return out

    def take_one(self, only: frozenset[TopicPartition] | None = None) -> Message | None:
        if self._errors:
            error = self._errors.popleft()
            self._after_take()
            raise error
        if only is not None:
            taken = self._take_of(1, only)
            return taken[0] if taken else None
        chunks = self._chunks
        if not chunks:
            return None
        chunk = chunks[0]
        message = chunk.messages[chunk.index]
        chunk.index += 1
        self.delivered[chunk.tp] = message
        self.buffered -= 1
        if chunk.index == len(chunk.messages):
            chunks.popleft()
            self._after_take()
        elif self.buffered == self.max_records - 1:
            self._space.set()
        return message

    def next_offsets(self) -> dict[TopicPartition, int]:
        """The offset of the next buffered record of each partition that has one (read for statistics)."""
        out: dict[TopicPartition, int] = {}
        for chunk in self._chunks:
            if chunk.tp not in out and chunk.index < len(chunk.messages):
                out[chunk.tp] = chunk.messages[chunk.index].offset
        return out

    @property
    def ready(self) -> bool:
        return bool(self._chunks or self._errors)

    def has_records_of(self, only: frozenset[TopicPartition]) -> bool:
        return bool(self._errors) or any(c.tp in only for c in self._chunks)

    async def wait_data(self, timeout: float | None) -> None:
        """Wait until records or an error are queued, or ``timeout`` seconds pass."""
        if self.ready:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._data.wait()

    async def wait_space(self) -> None:
        await self._space.wait()

    def wake_all(self) -> None:
        """Release every waiter (closing)."""
        self._data.set()
        self._space.set()
