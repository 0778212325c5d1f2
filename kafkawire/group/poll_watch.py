"""Whether the application still polls: the Java client's ``max.poll.interval.ms``.

A member whose application stopped taking records must not keep its partitions: it leaves the group so
the others take them over, and joins again when the application polls next. The consumer counts polls
(one attribute increment per call, cheap enough for the per-record path) and says when it is waiting
inside a poll; the membership task judges at each heartbeat.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class PollWatch:
    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.polls = 0  # incremented by the consumer on every poll call
        self.waiting = 0  # polls currently blocked waiting for records: the application is polling
        self.left = False  # the member left the group for want of polls; the next poll brings it back
        self._clock = clock
        self._seen = 0
        self._since = clock()
        self._resumed: asyncio.Event | None = None

    def overdue(self) -> bool:
        """True when no poll has been made or has been waiting for longer than the interval."""
        now = self._clock()
        if self.waiting or self.polls != self._seen:
            self._seen = self.polls
            self._since = now
            return False
        return now - self._since > self.interval

    def mark_left(self) -> None:
        self.left = True
        self._resumed = asyncio.Event()

    def resume(self) -> None:
        """Called by a poll after the member left: the membership may join again."""
        self.left = False
        if self._resumed is not None:
            self._resumed.set()

    async def wait_resumed(self) -> None:
        if self.left and self._resumed is not None:
            await self._resumed.wait()
        self._seen = self.polls
        self._since = self._clock()
