"""The client's budget for received messages: bytes held in receiver queues against ``memory_limit_bytes``.

Every receive queue of a client charges the bytes of the messages it holds (decompressed, or as received
when they stay encrypted) and releases them as the application takes the messages or they are dropped.
Consumers also record what the permits they granted may still bring (``expect``), ask how much room is
left before granting the broker more, and wait on it while it is spent: the broker then pushes nothing
more until the application has taken messages.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEFAULT_MEMORY_LIMIT", "MemoryBudget"]

# As the Java client's memoryLimitBytes default.
DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024


class MemoryBudget:
    """Bytes charged against ``limit`` (0: no limit), and the callbacks waiting for room."""

    __slots__ = ("_least", "_waiting", "expected", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.expected = 0
        # Each waiter with the room it waits for, and the least of those: a release that leaves less wakes
        # nobody (a partition with nothing to read waits the whole time; it must not run at every message).
        self._waiting: dict[Callable[[], object], int] = {}
        self._least = 0

    @property
    def limited(self) -> bool:
        """Whether a limit applies."""
        return self.limit > 0

    @property
    def free(self) -> int:
        """Bytes left before the limit, held and expected counted (negative once over it)."""
        return self.limit - self.used - self.expected

    def charge(self, size: int) -> None:
        """Count ``size`` more bytes as held."""
        self.used += size

    def expect(self, change: int) -> None:
        """Change the bytes that permits already granted may still bring."""
        self.expected += change

    def release(self, size: int) -> None:
        """Count ``size`` bytes as no longer held; wake the waiters whose room that leaves."""
        self.used -= size
        if self._waiting and self.free >= self._least:
            # Each waiter decides for itself and waits again when the room is gone.
            free = self.free
            woken = [callback for callback, room in self._waiting.items() if room <= free]
            for callback in woken:
                del self._waiting[callback]
            self._least = min(self._waiting.values(), default=0)
            for callback in woken:
                callback()

    def wait(self, callback: Callable[[], object], room: int = 1) -> None:
        """Call ``callback`` once, the next time a release leaves ``room`` bytes free (or more)."""
        room = max(1, room)
        self._waiting[callback] = room
        self._least = room if len(self._waiting) == 1 else min(self._least, room)

    def forget(self, callback: Callable[[], object]) -> None:
        """Stop waiting with ``callback``."""
        if self._waiting.pop(callback, None) is not None:
            self._least = min(self._waiting.values(), default=0)
