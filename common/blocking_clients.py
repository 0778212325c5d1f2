"""The blocking client, producer, consumer and admin, written once over the async ones (the contract's shape).

Each package's ``sync`` module subclasses these, adding its own methods with the async ones' arguments
(``same_arguments`` gives a blocking method the type of an async one's parameters). Every call runs on the
client's ``Bridge``; the async objects live on its loop, where they are made.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Self, TypeVar, cast

from mqwire.common.blocking import Bridge, bound
from mqwire.common.blocking_enqueue import EnqueueQueue, bytes_enqueue
from mqwire.common.blocking_future import RecordFuture
from mqwire.common.errors import ClosedError, ReceiveTimeoutError, RequestTimeoutError
from mqwire.common.serde import to_bytes
from mqwire.common.stats import ClientStats, ConsumerStats, ProducerStats

__all__ = [
    "BlockingAdmin",
    "BlockingClient",
    "BlockingConsumer",
    "BlockingProducer",
    "CallerSerializers",
    "same_arguments",
    "same_function_arguments",
]

P = ParamSpec("P")
S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M")
A = TypeVar("A")
D = TypeVar("D")


def same_arguments(
    source: Callable[Concatenate[Any, P], Any],
) -> Callable[[Callable[Concatenate[S, ...], T]], Callable[Concatenate[S, P], T]]:
    """Give the decorated method the parameters of the async method ``source`` (for the type checker and for
    ``help``), keeping its own return type: a blocking twin takes exactly what the async call takes."""

    def take(target: Callable[Concatenate[S, ...], T]) -> Callable[Concatenate[S, P], T]:
        signature = inspect.signature(source)
        target.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=inspect.signature(target).return_annotation
        )
        return cast("Callable[Concatenate[S, P], T]", target)

    return take


def same_function_arguments(source: Callable[P, Any]) -> Callable[[Callable[..., T]], Callable[P, T]]:
    """``same_arguments`` for a plain function: the decorated function takes what ``source`` takes."""

    def take(target: Callable[..., T]) -> Callable[P, T]:
        target.__signature__ = inspect.signature(source).replace(  # type: ignore[attr-defined]
            return_annotation=inspect.signature(target).return_annotation
        )
        return cast("Callable[P, T]", target)

    return take


class CallerSerializers:
    """The serializers a blocking producer runs in the caller's thread, taken out of the async producer's options.

    So a record that cannot be serialized fails at ``enqueue`` in the caller's thread, as it fails at the async
    ``enqueue``, rather than later in its future; and the serializing is done by the calling thread, not by the
    one loop thread every caller shares. The async producer then gets bytes.
    """

    def __init__(self, options: dict[str, Any], *, values: bool = True) -> None:
        """Take ``key_serializer`` and (unless ``values`` is False: the async producer encodes values itself,
        with a Pulsar schema) ``value_serializer`` out of ``options``. One that is not callable stays there, for
        the async producer to refuse with its own error."""
        self.key = _take_callable(options, "key_serializer")
        self.value = _take_callable(options, "value_serializer") if values else None
        self.values = values

    def apply(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of one ``enqueue`` with the value (first, or ``value=``) and ``key=`` as bytes."""
        if self.values:
            if args:
                value = args[0]
                if type(value) is not bytes or self.value is not None:
                    args = (to_bytes(value, self.value, "value"), *args[1:])
            elif "value" in kwargs:
                kwargs["value"] = to_bytes(kwargs["value"], self.value, "value")
        key = kwargs.get("key")
        if key is not None and (self.key is not None or type(key) is not bytes):
            kwargs["key"] = to_bytes(key, self.key, "key")
        return args, kwargs

    def apply_many(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of one ``enqueue_many`` with every value (``values``, first) and key (``keys=``) as bytes."""
        value_serializer, key_serializer = self.value, self.key
        if self.values:
            if args:
                args = ([_as_bytes(v, value_serializer, "value") for v in args[0]], *args[1:])
            elif "values" in kwargs:
                kwargs["values"] = [_as_bytes(v, value_serializer, "value") for v in kwargs["values"]]
        keys = kwargs.get("keys")
        if keys is not None:
            kwargs["keys"] = [_as_bytes(k, key_serializer, "key") for k in keys]
        return args, kwargs


def _as_bytes(obj: Any, serializer: Callable[[Any], Any] | None, field: Literal["key", "value"]) -> Any:
    if serializer is None and (obj is None or type(obj) is bytes):
        return obj  # the common case, without a call
    return to_bytes(obj, serializer, field)


def _take_callable(options: dict[str, Any], name: str) -> Callable[[Any], Any] | None:
    found = options.get(name)
    if not callable(found):
        return None
    del options[name]
    return cast("Callable[[Any], Any]", found)


class _Closable:
    """A context manager whose exit is ``close()``."""

    _closed = False

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._closed

    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def enqueue_record(
    queue: EnqueueQueue[R], serializers: CallerSerializers | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> concurrent.futures.Future[R]:
    """A blocking producer's ``enqueue(*args, **kwargs)``: serialized in the caller's thread, then queued."""
    if serializers is not None:
        args, kwargs = serializers.apply(args, kwargs)
    if not kwargs and len(args) == 1:
        return queue.put_value(args[0])  # the value alone: no argument tuple or dictionary waits queued
    return queue.put(args, kwargs)


class BlockingProducer(_Closable, Generic[R]):
    """A blocking producer: ``send`` returns the receipt, ``enqueue`` a ``concurrent.futures.Future`` of it.

    Records of ``enqueue`` (and ``send``) reach the async producer in their order of arrival, in bursts; a
    record that cannot be serialized raises ``SerializationError`` at the call, in the caller's thread; one the async
    producer refuses later (a wrong option, a Pulsar schema's encoding) fails its future. Threads may share one.
    """

    def __init__(
        self, bridge: Bridge, producer: Any, what: str, serializers: CallerSerializers | None = None
    ) -> None:
        """Wrap ``producer``, an async producer already started on ``bridge``'s loop, made without the
        ``serializers`` (run here, in the callers' threads)."""
        self._bridge = bridge
        self._async = producer
        self._serializers = serializers
        self._queue: EnqueueQueue[R] = self._make_queue(bridge, producer, what)
        self._closed = False
        # Bytes values pass the caller's serializers unchanged when there is no value serializer: such a value
        # alone goes straight to the queue, through the compiled enqueue when there is one (every subclass's
        # enqueue is _enqueue with its own signature).
        self._bare_values = serializers is None or serializers.value is None
        if self._bare_values:
            compiled = bytes_enqueue(self._queue, functools.partial(enqueue_record, self._queue, serializers))
            if compiled is not None:
                self.__dict__["enqueue"] = compiled  # before the class's enqueue, as an instance's own

    def _make_queue(self, bridge: Bridge, producer: Any, what: str) -> EnqueueQueue[R]:
        """The queue of records on their way to ``producer``: a protocol's own may hand over faster."""
        return EnqueueQueue(bridge, producer.enqueue, what=what)

    def _enqueue(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> concurrent.futures.Future[R]:
        return enqueue_record(self._queue, self._serializers, args, kwargs)

    def _send(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        return self._bridge.wait(self._enqueue(args, kwargs))

    def _bulk(self, call: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future[Any]:
        """Hand a bulk call (the async ``enqueue_many``) to the loop after the records enqueued so far, in one
        crossing; a refusal (the whole call is refused) is raised here, else the returned future settles with
        the call's outcome once every record is acknowledged."""
        future: RecordFuture[Any] = RecordFuture()
        future.start()

        def settle(done: Any) -> None:
            if done.cancelled():
                future.finish(error=ClosedError("the records were cancelled before the broker acknowledged them"))
            elif (error := done.exception()) is not None:
                future.finish(error=error)
            else:
                future.finish(done.result())

        async def in_order() -> None:
            await self._queue.drained()
            pending = await call()
            pending.add_done_callback(settle)

        self._bridge.call(in_order)
        return future

    def _after_enqueued(self, method: Callable[..., Awaitable[T]], /, *args: Any) -> T:
        """Run the async ``method(*args)`` once every record enqueued so far is handed to the async producer (a
        transaction's begin, commit or abort must come after the records enqueued before it)."""

        async def in_order() -> T:
            await self._queue.drained()
            return await method(*args)

        return self._bridge.call(in_order)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything enqueued so far is acknowledged or failed.

        After ``timeout`` seconds (None: as long as it takes) ``RequestTimeoutError`` is raised and the records
        go on being sent."""
        self._bridge.call(self._flush, timeout, timeout=bound(timeout))

    async def _flush(self, timeout: float | None) -> None:
        if timeout is None:
            await self._queue.drained()
            await self._async.flush(None)
            return
        # The timeout counts from the call: handing the queued records over (which may wait for room in the
        # async producer) is part of it. The hand-over goes on after a timeout, as the sends do.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        if self._queue.handing_over():
            try:
                await asyncio.wait_for(self._queue.drained(), max(timeout, 0.0))
            except TimeoutError:
                raise RequestTimeoutError(f"flush: records still being handed over after {timeout} s") from None
        await self._async.flush(max(deadline - loop.time(), 0.0))

    def stats(self) -> ProducerStats:
        """What the producer has sent so far and holds now (see ``mqwire.common.stats``)."""
        return cast(ProducerStats, self._bridge.run_sync(self._async.stats))

    def close(self) -> None:
        """Send what is enqueued, flush, and close the async producer. Idempotent."""
        if self._closed or self._bridge.closed:
            self._closed = True
            self._queue.close()
            return
        self._closed = True
        try:
            self._bridge.call(self._close)
        finally:
            self._queue.close()

    async def _close(self) -> None:
        await self._queue.drained()
        await self._async.close()


class BlockingConsumer(_Closable, Generic[M]):
    """A blocking consumer: ``receive``, ``getmany``, ``ack``, seeks, and iteration over its messages."""

    def __init__(self, bridge: Bridge, consumer: Any) -> None:
        """Wrap ``consumer``, an async consumer already started on ``bridge``'s loop."""
        self._bridge = bridge
        self._async = consumer
        self._iterator: Any = None
        self._late: deque[M] = deque()  # taken by calls whose caller had given up: handed out next
        self._closed = False

    def _call(self, method: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return self._bridge.call(functools.partial(method, *args, **kwargs))

    def _take_one(self, method: Callable[..., Awaitable[M]], *args: Any, **kwargs: Any) -> M:
        """A call that takes one message (``getone``): one taken after the caller gave up is kept for later."""
        if self._late:
            return self._late.popleft()
        return self._bridge.call(functools.partial(method, *args, **kwargs), late=self._late.append)

    def receive(self, timeout: float | None = None) -> M:
        """The next message; ``ReceiveTimeoutError`` (a ``TimeoutError``) after ``timeout`` seconds."""
        if self._late:
            return self._late.popleft()
        return cast(M, self._bridge.call(
            self._async.receive, timeout, timeout=bound(timeout), timeout_error=ReceiveTimeoutError,
            late=self._late.append,
        ))

    def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> list[M]:
        """The messages ready within ``timeout`` seconds (at most ``max_records``); ``[]`` when none came."""
        return self._getmany(
            timeout, max_records, functools.partial(self._async.getmany, timeout=timeout, max_records=max_records)
        )

    def _getmany(self, timeout: float | None, max_records: int | None, call: Callable[[], Awaitable[Any]]) -> list[M]:
        if self._late:  # messages a call given up on (a stalled loop, Ctrl-C) took: they come first
            count = len(self._late) if max_records is None else min(max_records, len(self._late))
            return [self._late.popleft() for _ in range(count)]
        try:
            return list(self._bridge.call(
                call, timeout=bound(timeout), timeout_error=ReceiveTimeoutError, late=self._late.extend
            ))
        except ReceiveTimeoutError:  # only the bridge's own bound raises it: nothing came in time
            return []

    def ack(self, message: M, /) -> None:
        """Mark the message processed (Kafka: its offset; Pulsar: an ack; TubeMQ: a confirm)."""
        self._call(self._async.ack, message)

    def skip(self, message: M, /) -> None:
        """Go on past a message whose deserializer failed (``DeserializationError.message``)."""
        self._bridge.run_sync(self._async.skip, message)

    def seek_to_beginning(self) -> None:
        """Read the assigned partitions again from their first retained message."""
        self._call(self._async.seek_to_beginning)

    def seek_to_end(self) -> None:
        """Skip to the end of the assigned partitions: only messages written later are received."""
        self._call(self._async.seek_to_end)

    def stats(self) -> ConsumerStats:
        """What the consumer has received so far, holds now, and its lag (see ``mqwire.common.stats``)."""
        return cast(ConsumerStats, self._bridge.run_sync(self._async.stats))

    def __iter__(self) -> Iterator[M]:
        return self

    def __next__(self) -> M:
        if self._late:
            return self._late.popleft()
        if self._iterator is None:
            self._iterator = self._bridge.run_sync(self._async.__aiter__)
        try:
            return cast(M, self._bridge.call(self._iterator.__anext__, late=self._late.append))
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        """Stop receiving and close the async consumer. Idempotent."""
        if self._closed or self._bridge.closed:
            self._closed = True
            return
        self._closed = True
        self._bridge.call(self._async.close)


class BlockingAdmin(_Closable, Generic[D]):
    """A blocking admin over the async admin ``D``: each subclass method runs its async twin with ``_call``.

    ``close`` (or leaving ``with``) closes the async admin; so does closing the client that made it. A call on
    a closed admin raises ``ClosedError``.
    """

    def __init__(self, bridge: Bridge, admin: D, what: str) -> None:
        """Wrap ``admin``, an async admin already entered on ``bridge``'s loop."""
        self._bridge = bridge
        self._async = admin
        self._what = what
        self._closed = False

    def _call(self, method: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
        """Run ``method(*args, **kwargs)`` on the loop and return its result here (its errors raised here)."""
        if self._closed:  # checked here too: some async calls return before looking (an empty list of topics)
            raise ClosedError(f"{self._what} is closed")
        return self._bridge.call(functools.partial(method, *args, **kwargs))

    def close(self) -> None:
        """Close the async admin: later calls raise ``ClosedError``. Idempotent."""
        if self._closed or self._bridge.closed:
            self._closed = True
            return
        self._closed = True
        self._bridge.call(cast(Any, self._async).close)


class BlockingClient(_Closable, Generic[A]):
    """A blocking client: one event-loop thread running the async client ``A``, stopped by ``close``."""

    def __init__(self, make: Callable[[], A], *, what: str) -> None:
        """Start a bridge, make the async client there with ``make()`` and connect it."""
        self._what = what
        self._bridge = Bridge(f"{what}-blocking")
        self._made: list[_Closable] = []
        try:
            self._async: A = self._bridge.run_sync(make)
            self._bridge.call(cast(Any, self._async).__aenter__)
        except BaseException:
            self._bridge.stop()
            raise

    @property
    def bridge(self) -> Bridge:
        """The event-loop thread the client runs on."""
        return self._bridge

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun."""
        return self._bridge.closed

    def _start(self, make: Callable[[A], Any]) -> Any:
        """Make an async producer or consumer with ``make(client)`` on the loop, and start it there."""
        made = self._bridge.run_sync(make, self._async)
        self._bridge.call(made.__aenter__)
        return made

    def _adopt(self, wrapper: T) -> T:
        self._made = [made for made in self._made if not made.closed]  # a long-lived client makes many
        self._made.append(cast(_Closable, wrapper))
        return wrapper

    def stats(self) -> ClientStats:
        """Connections, and the statistics of every producer and consumer open now."""
        return cast(ClientStats, self._bridge.run_sync(cast(Any, self._async).stats))

    def close(self) -> None:
        """Close the producers (sending what they hold) and consumers made here, then the async client, then
        the loop thread. Idempotent."""
        if self._bridge.closed:
            return
        try:
            for made in reversed(self._made):
                made.close()
            self._bridge.call(cast(Any, self._async).close)
        finally:
            self._bridge.stop()
            for made in self._made:
                made.close()  # with the loop gone: fails what a producer still held, so nothing waits forever
            self._made.clear()
