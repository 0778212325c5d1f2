"""Acknowledgements on the consumer side: per-batch bookkeeping, grouping, and negative acks.

A batch is one broker entry, so the broker can only be told once every message of it is acknowledged;
``BatchAcks`` counts that down. Individual acks are grouped for a short window (or up to a count) and
leave as one ACK frame. Negative acks wait for their redelivery delay and are then asked for again.
"""

from __future__ import annotations

import asyncio
import sys
from array import array
from collections import deque
from collections.abc import Callable, Iterable


class BatchAcks:
    """The messages of one received batch that still await an ack, as a bit set over batch indexes.

    Kept as a bytearray with a count, never as one growing integer: acking each message of a batch of
    n messages costs O(n) in all, where integer bit operations cost O(n) each.
    """

    __slots__ = ("_bits", "_floor", "_left")

    def __init__(self, delivered: int = 0) -> None:
        self.expect(delivered)

    def expect(self, delivered: int) -> None:
        """Set the indexes handed to the application (a bit per index), once they are known."""
        self._bits = bytearray(delivered.to_bytes((delivered.bit_length() + 7) // 8, "little"))
        self._left = delivered.bit_count()
        # Every index below this one is acked: cumulative acks start from here.
        self._floor = 0

    def _clear(self, index: int) -> bool:
        byte, mask = index >> 3, 1 << (index & 7)
        bits = self._bits
        if byte >= len(bits) or not bits[byte] & mask:
            return False
        bits[byte] &= ~mask & 0xFF
        self._left -= 1
        return True

    def ack(self, index: int) -> bool:
        """Mark ``index``; True exactly once, when this completes the batch."""
        if index < 0 or not self._clear(index):
            return False
        return self._left == 0

    def ack_up_to(self, index: int) -> bool:
        """Mark every index up to ``index`` (a cumulative ack); True when the batch is then complete."""
        if not self._left:
            return False
        stop = min(index + 1, len(self._bits) * 8)
        for position in range(self._floor, stop):
            self._clear(position)
        self._floor = max(self._floor, stop)
        return self._left == 0

    @property
    def complete(self) -> bool:
        return self._left == 0

    @property
    def unacked(self) -> int:
        """The indexes still awaiting an ack, as a bit set."""
        return int.from_bytes(self._bits, "little")


def bitset_words(bits: int) -> list[int]:
    """A bit set as the signed 64-bit words of a Java BitSet (the protocol's ``ack_set``)."""
    if bits <= 0:
        return [0]
    data = bits.to_bytes((bits.bit_length() + 63) // 64 * 8, "little")
    words = array("q")
    words.frombytes(data if sys.byteorder == "little" else _swapped(data))
    return words.tolist()


def bits_of_words(words: Iterable[int]) -> int:
    """The Java BitSet given as 64-bit words (signed or not) as one integer, built in one pass."""
    unsigned = array("Q", (word & 0xFFFFFFFFFFFFFFFF for word in words))
    data = unsigned.tobytes()
    return int.from_bytes(data if sys.byteorder == "little" else _swapped(data), "little")


def _swapped(data: bytes) -> bytes:
    words = array("Q")
    words.frombytes(data)
    words.byteswap()
    return words.tobytes()


Position = tuple[int, int]


class AckGrouping:
    """Individual and cumulative acks collected for ``delay`` seconds (or ``max_size`` entries).

    ``send_individual(positions)`` and ``send_cumulative(position)`` return False when there is no
    connection right now; the acks then stay until ``flush`` is called after reconnecting. Acks of part
    of a batch (``add_partial``) carry the bit set of the batch indexes still unacknowledged and leave
    through ``send_partial``.
    """

    def __init__(
        self,
        send_individual: Callable[[list[Position]], bool],
        send_cumulative: Callable[[Position], bool],
        *,
        delay: float,
        max_size: int,
        send_partial: Callable[[list[tuple[Position, int]]], bool] | None = None,
    ) -> None:
        self._send_individual = send_individual
        self._send_cumulative = send_cumulative
        self._send_partial = send_partial
        self._partial: dict[Position, int] = {}
        self._delay = delay
        self._max_size = max_size
        self._pending: dict[Position, None] = {}
        self._cumulative: Position | None = None
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._pending) + (self._cumulative is not None)

    def add(self, ledger: int, entry: int) -> None:
        self._pending[ledger, entry] = None
        self._partial.pop((ledger, entry), None)
        self._schedule()

    def add_partial(self, ledger: int, entry: int, unacked: int) -> None:
        """Part of the batch at ``(ledger, entry)`` is acknowledged; ``unacked`` are the indexes left."""
        if self._send_partial is None:
            return
        self._partial[ledger, entry] = unacked
        self._schedule()

    def _schedule(self) -> None:
        if len(self._pending) + len(self._partial) >= self._max_size or self._delay <= 0:
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
        if self._partial and self._send_partial is not None and self._send_partial(list(self._partial.items())):
            self._partial.clear()

    def discard(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
        self._partial.clear()
        self._cumulative = None


class UnackedTracker:
    """Entries handed to the application and not acknowledged yet, redelivered after ``timeout``.

    Entries are kept in time buckets of a tick each, so that one timer serves them all and an entry is
    redelivered between ``timeout`` and ``timeout`` plus a tick after it was received.
    """

    def __init__(self, redeliver: Callable[[list[Position]], None], *, timeout: float) -> None:
        self._redeliver = redeliver
        self._timeout = timeout
        self._tick = max(0.05, min(1.0, timeout / 4))
        self._buckets: deque[dict[Position, None]] = deque()
        self._bucket_of: dict[Position, dict[Position, None]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._bucket_of)

    def add(self, position: Position) -> None:
        if position in self._bucket_of:
            return
        if not self._buckets:
            # Timeout plus the tick the newest bucket may still wait before it starts aging.
            count = max(1, round(self._timeout / self._tick))
            self._buckets.extend({} for _ in range(count))
        bucket = self._buckets[-1]
        bucket[position] = None
        self._bucket_of[position] = bucket
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._tick, self._turn)

    def remove(self, position: Position) -> None:
        bucket = self._bucket_of.pop(position, None)
        if bucket is not None:
            bucket.pop(position, None)

    def remove_up_to(self, position: Position) -> None:
        for done in [p for p in self._bucket_of if p <= position]:
            self.remove(done)

    def clear(self) -> None:
        self._bucket_of.clear()
        for bucket in self._buckets:
            bucket.clear()

    def _turn(self) -> None:
        self._timer = None
        if not self._buckets:
            return
        expired = self._buckets.popleft()
        self._buckets.append({})
        if expired:
            positions = list(expired)
            for position in positions:
                self._bucket_of.pop(position, None)
            self._redeliver(positions)
        if self._bucket_of:
            self._timer = asyncio.get_running_loop().call_later(self._tick, self._turn)
        else:
            self._buckets.clear()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.clear()
        self._buckets.clear()


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
