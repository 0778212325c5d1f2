"""Acknowledgement clocks: the longest pause between two acknowledgements while nodes fail."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class AckClock:
    """Times of every acknowledgement, and the faults applied while they came (seconds on ``now``'s clock:
    monotonic, or the wall clock when another process reports its acknowledgements)."""

    acks: list[float] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    now: Callable[[], float] = time.monotonic

    def ack(self, at: float | None = None) -> None:
        """One acknowledgement, now or ``at``."""
        self.acks.append(self.now() if at is None else at)

    def event(self, what: str) -> None:
        """A fault applied now."""
        self.events.append((self.now(), what))

    def longest_pause(self) -> float:
        """The longest gap between consecutive acknowledgements (0.0 with fewer than two)."""
        times = sorted(self.acks)
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def pauses_after_events(self) -> dict[str, float]:
        """For each fault: the longest gap between acknowledgements from the fault until the next fault."""
        times = sorted(self.acks)
        out: dict[str, float] = {}
        bounds = [t for t, _ in self.events] + [float("inf")]
        for (start, what), end in zip(self.events, bounds[1:], strict=False):
            inside = [start] + [t for t in times if start <= t < end]
            after = [t for t in times if t >= end][:1]
            window = inside + after
            out[what] = round(max((b - a for a, b in itertools.pairwise(window)), default=0.0), 2)
        return out
