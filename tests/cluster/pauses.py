"""Acknowledgement clocks: the longest pause between two acknowledgements while nodes fail."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field


@dataclass
class AckClock:
    """Times of every acknowledgement (monotonic seconds), and the faults applied while they came."""

    acks: list[float] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)

    def ack(self) -> None:
        self.acks.append(time.monotonic())

    def event(self, what: str) -> None:
        self.events.append((time.monotonic(), what))

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
