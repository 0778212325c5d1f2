"""Reconnect policy: exponential backoff with jitter, and rotation through a list of addresses."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays that grow from ``initial`` by ``multiplier`` up to ``maximum``, each spread by ``jitter``.

    The jitter spreads reconnecting clients apart; the delay never leaves [initial*(1-jitter), maximum].
    ``reset`` after a success starts again from the floor.
    """

    initial: float = 0.1
    maximum: float = 60.0
    multiplier: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random, repr=False)
    _attempt: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.maximum < self.initial:
            raise ValueError("backoff needs 0 < initial <= maximum")
        if self.multiplier < 1:
            raise ValueError("backoff multiplier must be >= 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("backoff jitter must be in [0, 1)")

    @property
    def attempts(self) -> int:
        """Delays handed out since the last reset."""
        return self._attempt

    def next_delay(self) -> float:
        """The delay before the next attempt."""
        base = min(self.maximum, self.initial * self.multiplier ** min(self._attempt, 64))
        self._attempt += 1
        spread = base * self.jitter
        return min(self.maximum, max(self.initial * (1 - self.jitter), base + self.rng.uniform(-spread, spread)))

    def reset(self) -> None:
        """Start again from the initial delay (after a success)."""
        self._attempt = 0


class AddressRotation:
    """Cycles through bootstrap / service / master addresses; ``prefer`` moves one to the front."""

    __slots__ = ("_addresses", "_position")

    def __init__(self, addresses: Sequence[tuple[str, int]], *, shuffle: bool = False) -> None:
        if not addresses:
            raise ValueError("at least one address is required")
        self._addresses = list(addresses)
        if shuffle:
            random.shuffle(self._addresses)
        self._position = 0

    def __len__(self) -> int:
        return len(self._addresses)

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """All addresses, in rotation order."""
        return list(self._addresses)

    def current(self) -> tuple[str, int]:
        """The address to try now."""
        return self._addresses[self._position]

    def advance(self) -> tuple[str, int]:
        """Move on to the next address (after a failure) and return it."""
        self._position = (self._position + 1) % len(self._addresses)
        return self._addresses[self._position]

    def prefer(self, address: tuple[str, int]) -> None:
        """Make ``address`` current, e.g. the active master after a standby redirect."""
        if address not in self._addresses:
            self._addresses.append(address)
        self._position = self._addresses.index(address)
