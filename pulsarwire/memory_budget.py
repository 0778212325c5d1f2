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

    __slots__ = ("_waiting", "expected", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.expected = 0
        self._waiting: dict[Callable[[], object], None] = {}

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
        """Count ``size`` bytes as no longer held; wake the waiters when that leaves room."""
        self.used -= size
        if self._waiting and self.free > 0:
            # Each waiter decides for itself and waits again when the room is gone.
            waiting, self._waiting = list(self._waiting), {}
            for callback in waiting:
                callback()

    def wait(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once, the next time a release leaves room."""
        self._waiting[callback] = None

    def forget(self, callback: Callable[[], object]) -> None:
        """Stop waiting with ``callback``."""
        self._waiting.pop(callback, None)
