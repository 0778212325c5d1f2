"""Acknowledgements on the consumer side: per-batch bookkeeping, grouping, and negative acks.

A batch is one broker entry, so the broker can only be told once every message of it is acknowledged;
``BatchAcks`` counts that down. Individual acks are grouped for a short window (or up to a count) and
leave as one ACK frame. Negative acks wait for their redelivery delay and are then asked for again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class BatchAcks:
    """The messages of one received batch that still await an ack, as a bit set over batch indexes."""

    __slots__ = ("_unacked",)

    def __init__(self, delivered: int = 0) -> None:
        self._unacked = delivered

    def expect(self, delivered: int) -> None:
        """Set the indexes handed to the application (a bit per index), once they are known."""
        self._unacked = delivered

    def ack(self, index: int) -> bool:
        """Mark ``index``; True exactly once, when this completes the batch."""
        bit = 1 << index
        if not self._unacked & bit:
            return False
        self._unacked &= ~bit
        return self._unacked == 0

    def ack_up_to(self, index: int) -> bool:
        """Mark every index up to ``index`` (a cumulative ack); True when the batch is then complete."""
        if not self._unacked:
            return False
        self._unacked &= ~((2 << index) - 1)
        return self._unacked == 0

    @property
    def complete(self) -> bool:
        return self._unacked == 0


Position = tuple[int, int]


class AckGrouping:
    """Individual and cumulative acks collected for ``delay`` seconds (or ``max_size`` entries).

    ``send_individual(positions)`` and ``send_cumulative(position)`` return False when there is no
    connection right now; the acks then stay until ``flush`` is called after reconnecting.
    """

    def __init__(
        self,
        send_individual: Callable[[list[Position]], bool],
        send_cumulative: Callable[[Position], bool],
        *,
        delay: float,
        max_size: int,
    ) -> None:
        self._send_individual = send_individual
        self._send_cumulative = send_cumulative
        self._delay = delay
        self._max_size = max_size
        self._pending: dict[Position, None] = {}
        self._cumulative: Position | None = None
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._pending) + (self._cumulative is not None)

    def add(self, ledger: int, entry: int) -> None:
        self._pending[ledger, entry] = None
        if len(self._pending) >= self._max_size or self._delay <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._due)

    def add_cumulative(self, ledger: int, entry: int) -> None:
        if self._cumulative is None or (ledger, entry) > self._cumulative:
            self._cumulative = (ledger, entry)
        if self._delay <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._due)

    def _due(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cumulative is not None and self._send_cumulative(self._cumulative):
            self._cumulative = None
        if self._pending and self._send_individual(list(self._pending)):
            self._pending.clear()

    def discard(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
        self._cumulative = None


class NegativeAcks:
    """Entries to redeliver once ``delay`` has passed since their negative ack."""

    def __init__(self, redeliver: Callable[[list[Position]], None], *, delay: float) -> None:
        self._redeliver = redeliver
        self._delay = delay
        self._due_at: dict[Position, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, ledger: int, entry: int) -> None:
        loop = asyncio.get_running_loop()
        self._due_at[ledger, entry] = loop.time() + self._delay
        if self._timer is None:
            self._timer = loop.call_later(self._delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        # A little slack groups the entries that fall due together into one request.
        due = [position for position, at in self._due_at.items() if at <= now + 0.01]
        for position in due:
            del self._due_at[position]
        if due:
            self._redeliver(due)
        if self._due_at:
            self._timer = loop.call_later(max(0.0, min(self._due_at.values()) - now), self._fire)

    def discard(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due_at.clear()
