"""Joining the chunks of a message larger than the broker's limit, bounded in count, size and age."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Position = tuple[int, int]


@dataclass
class _Partial:
    total_size: int
    chunks: int
    started: float
    parts: list[bytes] = field(default_factory=list)
    positions: list[Position] = field(default_factory=list)
    size: int = 0


class ChunkAssembler:
    """Collects chunks by message uuid; ``add`` returns the whole payload and chunk positions when complete.

    At most ``max_pending`` messages are assembled at once (the oldest gives way) and a message whose
    chunks stop arriving is forgotten after ``expire_after`` seconds. Dropped chunks are returned by
    ``take_dropped`` so the consumer can have them delivered again.
    """

    def __init__(self, *, max_pending: int = 10, expire_after: float = 60.0, max_size: int = 1 << 30) -> None:
        self._partials: OrderedDict[str, _Partial] = OrderedDict()
        self._max_pending = max_pending
        self._expire_after = expire_after
        self._max_size = max_size
        self._dropped: list[Position] = []

    def __len__(self) -> int:
        return len(self._partials)

    def add(
        self, uuid: str, chunk_id: int, chunks: int, total_size: int, position: Position, data: bytes
    ) -> tuple[bytes, list[Position]] | None:
        now = time.monotonic()
        self._expire(now)
        partial = self._partials.get(uuid)
        if chunk_id == 0:
            if partial is not None:
                self._drop(uuid)  # the producer started over (a resend); the new run replaces the old
            if not 0 < total_size <= self._max_size or chunks < 2:
                log.warning("chunked message %s declares %d bytes in %d chunks; dropped", uuid, total_size, chunks)
                self._dropped.append(position)
                return None
            while len(self._partials) >= self._max_pending:
                oldest = next(iter(self._partials))
                log.warning("too many chunked messages at once; dropping %s", oldest)
                self._drop(oldest)
            partial = _Partial(total_size, chunks, now)
            self._partials[uuid] = partial
        elif partial is None or chunk_id != len(partial.parts) or chunks != partial.chunks:
            if partial is not None:
                # A duplicate of a chunk already held is harmless; anything else breaks the message.
                if chunk_id < len(partial.parts):
                    self._dropped.append(position)
                    return None
                self._drop(uuid)
            self._dropped.append(position)
            return None
        partial.parts.append(data)
        partial.positions.append(position)
        partial.size += len(data)
        if partial.size > partial.total_size:
            log.warning("chunked message %s exceeds its declared size; dropped", uuid)
            self._drop(uuid)
            return None
        if len(partial.parts) < partial.chunks:
            return None
        del self._partials[uuid]
        return b"".join(partial.parts), partial.positions

    def take_dropped(self) -> list[Position]:
        dropped, self._dropped = self._dropped, []
        return dropped

    def _drop(self, uuid: str) -> None:
        partial = self._partials.pop(uuid, None)
        if partial is not None:
            self._dropped.extend(partial.positions)

    def _expire(self, now: float) -> None:
        while self._partials:
            uuid, partial = next(iter(self._partials.items()))
            if now - partial.started < self._expire_after:
                return
            log.warning("chunked message %s incomplete after %.0f s; dropped", uuid, self._expire_after)
            self._drop(uuid)

    def clear(self) -> None:
        self._partials.clear()
        self._dropped.clear()
