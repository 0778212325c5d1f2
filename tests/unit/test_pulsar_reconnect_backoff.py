"""A reconnection backoff never carries a pending send past its timeout (as in the Java client)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from mqwire.common.errors import MqwireError
from mqwire.common.policy import Backoff
from pulsarwire.connection import PulsarConnection
from pulsarwire.handler import RECONNECT_MARGIN, TopicHandler


class Handler(TopicHandler):
    deadline: float | None = None

    async def _attach(self, connection: PulsarConnection) -> None:
        raise NotImplementedError

    def _detached(self, error: MqwireError) -> None:
        pass

    def _failed(self, error: MqwireError) -> None:
        pass

    def _reconnect_deadline(self) -> float | None:
        return self.deadline


async def test_the_backoff_is_cut_short_of_the_oldest_pending_send_timeout() -> None:
    client = SimpleNamespace(new_backoff=lambda: Backoff(initial=0.1, maximum=60.0, jitter=0.0))
    handler = Handler(cast(Any, client), "t", "test")
    for _ in range(10):
        handler._backoff.next_delay()  # grown to 51.2 s
    now = asyncio.get_running_loop().time()
    handler.deadline = now + 5.0
    assert 5.0 - RECONNECT_MARGIN - 0.05 <= handler._reconnect_delay() <= 5.0 - RECONNECT_MARGIN
    # Past the deadline (the timeout is about to fire): the first delay, not a busy loop.
    handler.deadline = now - 1.0
    assert handler._reconnect_delay() == 0.1
    # Nothing pending: the backoff as it is.
    handler.deadline = None
    assert handler._reconnect_delay() == 60.0
