"""Joining the chunks of a message larger than the broker's limit, bounded in count, size and age; no I/O.

:meth:`ChunkAssembler.offer` takes one chunk and the time, and says what became of it: the message is
complete, still incomplete, the chunk is a duplicate, or it was dropped (no first chunk, a gap, a size that
does not add up). The chunks given up on the way (that one, a broken message's, the oldest message's when
too many are open at once, an expired message's) come back with it: the consumer acknowledges them, as
the Java client auto-acknowledges the oldest chunked message when its queue of them is full.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

log = logging.getLogger(__name__)

__all__ = ["COMPLETE", "DROPPED", "DUPLICATE", "INCOMPLETE", "Assembly", "ChunkAssembler", "Position"]

Position = tuple[int, int]
Outcome = Literal["complete", "incomplete", "duplicate", "dropped"]

COMPLETE: Outcome = "complete"
INCOMPLETE: Outcome = "incomplete"
DUPLICATE: Outcome = "duplicate"
DROPPED: Outcome = "dropped"


@dataclass
class _Partial:
    total_size: int
    chunks: int
    started: float
    parts: list[bytes] = field(default_factory=list)
    positions: list[Position] = field(default_factory=list)
    size: int = 0


@dataclass(frozen=True)
class Assembly:
    """What one chunk did: ``outcome``; for a complete message its ``payload`` and the ``positions`` of its
    chunks in order; ``dropped``: every chunk given up during this call, to acknowledge; ``expired`` and
    ``evicted``: the uuids of the messages given up for age and for room."""

    outcome: Outcome
    payload: bytes = b""
    positions: list[Position] = field(default_factory=list)
    dropped: list[Position] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)


class ChunkAssembler:
    """Collects chunks by message uuid until each message is whole.

    At most ``max_pending`` messages are assembled at once (the oldest gives way), a message whose chunks
    stop arriving is forgotten ``expire_after`` seconds after its first chunk, and a message may declare at
    most ``max_size`` bytes.
    """

    def __init__(self, *, max_pending: int = 10, expire_after: float = 60.0, max_size: int = 1 << 30) -> None:
        self._partials: OrderedDict[str, _Partial] = OrderedDict()
        self._max_pending = max_pending
        self._expire_after = expire_after
        self._max_size = max_size
        self._dropped: list[Position] = []

    def __len__(self) -> int:
        return len(self._partials)

    def offer(
        self, uuid: str, chunk_id: int, chunks: int, total_size: int, position: Position, data: bytes, now: float
    ) -> Assembly:
        """Take one chunk (its metadata fields, its entry's position and its data) at monotonic time ``now``."""
        dropped: list[Position] = []
        expired = self.expire(now, dropped)
        evicted: list[str] = []
        partial = self._partials.get(uuid)
        if chunk_id == 0:
            if partial is not None:
                self._drop(uuid, dropped)  # the producer started over (a resend); the new run replaces the old
            if not 0 < total_size <= self._max_size or chunks < 2:
                log.warning("chunked message %s declares %d bytes in %d chunks; dropped", uuid, total_size, chunks)
                dropped.append(position)
                return Assembly(DROPPED, dropped=dropped, expired=expired)
            while len(self._partials) >= self._max_pending:
                oldest = next(iter(self._partials))
                log.warning("too many chunked messages at once; dropping %s", oldest)
                self._drop(oldest, dropped)
                evicted.append(oldest)
            partial = _Partial(total_size, chunks, now)
            self._partials[uuid] = partial
        elif partial is None or chunk_id != len(partial.parts) or chunks != partial.chunks:
            if partial is not None and chunk_id < len(partial.parts):
                # A duplicate of a chunk already held is harmless; anything else breaks the message.
                dropped.append(position)
                return Assembly(DUPLICATE, dropped=dropped, expired=expired)
            if partial is not None:
                self._drop(uuid, dropped)
            dropped.append(position)
            return Assembly(DROPPED, dropped=dropped, expired=expired)
        partial.parts.append(data)
        partial.positions.append(position)
        partial.size += len(data)
        if partial.size > partial.total_size:
            log.warning("chunked message %s exceeds its declared size; dropped", uuid)
            self._drop(uuid, dropped)
            return Assembly(DROPPED, dropped=dropped, expired=expired, evicted=evicted)
        if len(partial.parts) < partial.chunks:
            return Assembly(INCOMPLETE, dropped=dropped, expired=expired, evicted=evicted)
        del self._partials[uuid]
        return Assembly(COMPLETE, b"".join(partial.parts), partial.positions, dropped, expired, evicted)

    def expire(self, now: float, dropped: list[Position] | None = None) -> list[str]:
        """Forget the messages begun ``expire_after`` seconds or more before ``now``; their uuids. Their
        chunks' positions are appended to ``dropped`` when given."""
        expired = []
        sink = [] if dropped is None else dropped
        while self._partials:
            uuid, partial = next(iter(self._partials.items()))
            if now - partial.started < self._expire_after:
                break
            log.warning("chunked message %s incomplete after %.0f s; dropped", uuid, self._expire_after)
            self._drop(uuid, sink)
            expired.append(uuid)
        return expired

    def add(
        self, uuid: str, chunk_id: int, chunks: int, total_size: int, position: Position, data: bytes
    ) -> tuple[bytes, list[Position]] | None:
        """:meth:`offer` now; the whole payload and its chunks' positions when complete, else None, the
        chunks given up kept for :meth:`take_dropped`."""
        result = self.offer(uuid, chunk_id, chunks, total_size, position, data, time.monotonic())
        self._dropped.extend(result.dropped)
        if result.outcome != COMPLETE:
            return None
        return result.payload, result.positions

    def take_dropped(self) -> list[Position]:
        """The chunks :meth:`add` gave up since the last call."""
        dropped, self._dropped = self._dropped, []
        return dropped

    def _drop(self, uuid: str, dropped: list[Position]) -> None:
        partial = self._partials.pop(uuid, None)
        if partial is not None:
            dropped.extend(partial.positions)

    def clear(self) -> None:
        """Forget every message being assembled (a new subscription sends their chunks again)."""
        self._partials.clear()
        self._dropped.clear()
