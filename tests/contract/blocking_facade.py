"""The blocking clients seen through the async contract's shape, so the contract's cases run through them.

Each awaited call of a contract test runs the blocking call in a worker thread (``asyncio.to_thread``): the
test's own loop stays free while the blocking client waits on its bridge's loop, as a synchronous program's
thread would. Calls that the async API makes without ``await`` (``client.producer(...)``,
``consumer.skip``) call the blocking API directly. Nothing here re-implements a client: every message goes
through ``kafkawire.sync``, ``pulsarwire.sync`` or ``tubemqwire.sync``.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self


class _Closing:
    """``async with`` over a blocking object: leaving it closes the object in a worker thread."""

    def __init__(self, blocking: Any) -> None:
        self.blocking = blocking

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self.blocking.close)


class ProducerFacade(_Closing):
    """A blocking producer as the contract's producer."""

    async def send(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self.blocking.send, *args, **kwargs)

    async def enqueue(self, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        # The blocking enqueue returns at once with a concurrent.futures.Future: awaited here as asyncio's.
        return asyncio.wrap_future(self.blocking.enqueue(*args, **kwargs))

    async def flush(self, timeout: float | None = None) -> None:
        await asyncio.to_thread(self.blocking.flush, timeout)


class ConsumerFacade(_Closing):
    """A blocking consumer as the contract's consumer."""

    async def receive(self, timeout: float | None = None) -> Any:
        return await asyncio.to_thread(self.blocking.receive, timeout)

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> list[Any]:
        return await asyncio.to_thread(self.blocking.getmany, timeout=timeout, max_records=max_records)

    async def ack(self, message: Any) -> None:
        await asyncio.to_thread(self.blocking.ack, message)

    def skip(self, message: Any) -> None:
        self.blocking.skip(message)

    async def seek_to_beginning(self) -> None:
        await asyncio.to_thread(self.blocking.seek_to_beginning)

    async def seek_to_end(self) -> None:
        await asyncio.to_thread(self.blocking.seek_to_end)

    @property
    def assignment(self) -> Any:
        return self.blocking.assignment


class ClientFacade(_Closing):
    """A blocking client as the contract's client: its producers and consumers are made (and started) at the
    call, so a wrong option fails there, as the async client's do."""

    def producer(self, *args: Any, **kwargs: Any) -> ProducerFacade:
        return ProducerFacade(self.blocking.producer(*args, **kwargs))

    def consumer(self, *args: Any, **kwargs: Any) -> ConsumerFacade:
        return ConsumerFacade(self.blocking.consumer(*args, **kwargs))
