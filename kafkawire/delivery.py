"""The acknowledgements of records sent one by one: one outcome per batch, one small future per record.

A loop of ``enqueue`` keeps a future per record until its batch is acknowledged, often hundreds of
thousands at once. An ``asyncio.Future`` each would cost its creation, a ``RecordMetadata`` and a
``set_result`` per record at acknowledgement, and most of all the cycle collector scanning every waiting
future again at each collection. Here a batch has one ``BatchOutcome``, settled once, and each record a
``RecordFuture``: the outcome and the record's place in the batch. Its metadata is made when read. With
the compiled ``_delivery_speedups``, record futures are made outside the cycle collector altogether.

A ``RecordFuture`` behaves as an ``asyncio.Future`` for everything but ``set_result``/``set_exception``:
``await``, ``done``, ``result``, ``exception``, ``cancel``, ``add_done_callback``, and ``asyncio.isfuture``
is true, so ``asyncio.gather``, ``wait``, ``wait_for``, ``shield`` and ``as_completed`` take it as it is.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from kafkawire.message import RecordMetadata
from kafkawire.protocol.records import RecordTimestamps, new_record_timestamps
from mqwire.common.errors import ProtocolError
from mqwire.common.speedups import load_speedups

Ack = tuple[type[RecordMetadata], str, int, int, int, RecordTimestamps]
"""What ``BatchOutcome._ack`` holds once its batch is stored whole: (RecordMetadata, topic, partition, base offset,
log-append time, timestamps)."""

DoneCallback = Callable[["RecordFuture"], object]

_INT64_MAX = 2**63 - 1


class BatchOutcome:
    """What became of one batch: the records' timestamps, then its first offset or its error.

    Shared by the futures of the batch's records. Settled once, by ``succeed`` or ``fail``; then the
    callbacks and waiters of its records run and are dropped.
    """

    __slots__ = (
        "_ack",
        "_callbacks",
        "_cancelled",
        "_waiters",
        "base_offset",
        "error",
        "log_append_time",
        "loop",
        "partition",
        "settled",
        "timestamps",
        "topic",
    )

    def __init__(self, topic: str, partition: int, loop: asyncio.AbstractEventLoop) -> None:
        self.topic = topic
        self.partition = partition
        self.loop = loop
        # One per record, in batch order: the record's timestamp, and its place in the batch.
        self.timestamps: RecordTimestamps = new_record_timestamps()
        self.settled = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        # Once stored whole with nothing cancelled, what the compiled RecordFuture.result reads (see
        # _delivery_speedups.c): (RecordMetadata, topic, partition, base offset, log-append time, timestamps).
        self._ack: Ack | None = None
        # Made only when a record's future gets a callback, is awaited while pending, or is cancelled.
        self._callbacks: list[tuple[RecordFuture, DoneCallback, contextvars.Context]] | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] | None = None
        # The cancelled records' places, each with the message given to cancel().
        self._cancelled: dict[int, Any] | None = None

    @classmethod
    def on_running_loop(cls, topic: str, partition: int) -> BatchOutcome:
        """The outcome of a new batch of ``topic``/``partition``, settled on the event loop running now."""
        return cls(topic, partition, asyncio.get_running_loop())

    def __len__(self) -> int:
        return len(self.timestamps)

    def when_settled(self) -> asyncio.Future[None]:
        """A future done once the batch is acknowledged or failed (at once if it is already)."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        if self.settled:
            waiter.set_result(None)
        else:
            if self._waiters is None:
                self._waiters = []
            self._waiters.append((-1, waiter))  # -1: no record's place, so no record's cancel touches it
        return waiter

    def succeed(self, base_offset: int, log_append_time: int = -1) -> None:
        """The broker stored the batch from ``base_offset`` (-1: not told, as with acks=0).

        An offset that would put the batch's last record past int64 is malformed: the batch fails with
        ProtocolError instead (so no record's offset is ever computed past it, compiled or not).
        """
        if not self.settled and base_offset >= 0 and base_offset + len(self.timestamps) - 1 > _INT64_MAX:
            self.fail(ProtocolError(f"the broker stored {len(self)} records from offset {base_offset}, past int64"))
            return
        if not self.settled:
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            if self._cancelled is None:
                self._ack = (RecordMetadata, self.topic, self.partition, base_offset, log_append_time, self.timestamps)
            self._settle()

    def fail(self, error: BaseException) -> None:
        """The batch was not stored: every record's future raises ``error``."""
        if not self.settled:
            self.error = error
            self._settle()

    def is_cancelled(self, index: int) -> bool:
        cancelled = self._cancelled
        return cancelled is not None and index in cancelled

    def wait(self, index: int) -> asyncio.Future[None]:
        """A future of its own for one ``await`` of a pending record: done when the batch settles, cancelled
        when the record's future is (cancelling it cancels only that await)."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append((index, waiter))
        return waiter

    def remove_callback(self, future: RecordFuture, callback: DoneCallback) -> int:
        if not self._callbacks:
            return 0
        kept = [entry for entry in self._callbacks if entry[0] is not future or entry[1] != callback]
        removed = len(self._callbacks) - len(kept)
        self._callbacks = kept
        return removed

    def cancel_message(self, index: int) -> Any:
        """The message given to ``cancel()`` of the record at ``index`` (None: none, or not cancelled)."""
        return self._cancelled.get(index) if self._cancelled is not None else None

    def cancelled_error(self, index: int) -> asyncio.CancelledError:
        message = self.cancel_message(index)
        return asyncio.CancelledError() if message is None else asyncio.CancelledError(message)

    def cancel(self, future: RecordFuture, message: Any) -> None:
        """The record's future is cancelled (the record itself stays in its batch): its waiters and
        callbacks are told now."""
        index = future._index
        if self._cancelled is None:
            self._cancelled = {}
        self._cancelled[index] = message
        if self._waiters:
            for place, waiter in self._waiters:
                if place == index:
                    waiter.cancel()
            self._waiters = [entry for entry in self._waiters if entry[0] != index]
        if self._callbacks:
            mine = [entry for entry in self._callbacks if entry[0] is future]
            self._callbacks = [entry for entry in self._callbacks if entry[0] is not future]
            for _, callback, context in mine:
                self.loop.call_soon(callback, future, context=context)

    def _settle(self) -> None:
        self.settled = True
        waiters, self._waiters = self._waiters, None
        callbacks, self._callbacks = self._callbacks, None
        if callbacks:
            # One turn of the loop runs them all, in order, each in its context: a handle per callback (as
            # asyncio.Future makes) cost more than a sampled send itself when a loop of sends sets one on many.
            # Scheduled before the awaiting tasks wake: a callback added when the record was buffered has run
            # when its sender resumes, as an asyncio.Future runs a callback added before the await first.
            self.loop.call_soon(self._run_callbacks, callbacks)
        if waiters:
            for _, waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _run_callbacks(self, callbacks: list[tuple[RecordFuture, DoneCallback, contextvars.Context]]) -> None:
        for future, callback, context in callbacks:
            try:
                context.run(callback, future)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # as an asyncio handle does: reported, and the others still run
                self.loop.call_exception_handler(
                    {"message": f"Exception in callback {callback!r}", "exception": exc, "future": future}
                )


class RecordFuture:
    """The acknowledgement of one record buffered by ``enqueue``: resolves with its ``RecordMetadata``.

    Used as an ``asyncio.Future``: ``await`` it, or ``done()``, ``result()``, ``exception()``,
    ``cancelled()``, ``add_done_callback(fn)``, ``remove_done_callback(fn)``, ``get_loop()``; it is a
    future to ``asyncio.isfuture``, so ``asyncio.gather``, ``wait``, ``wait_for``, ``shield`` and
    ``as_completed`` take it directly. ``cancel()`` stops waiting for the acknowledgement; the record
    stays in its batch and is still sent. It has no ``set_result``: only its batch settles it.
    """

    __slots__ = ("_index", "_outcome")
    # asyncio's mark of a future-like object (asyncio.isfuture); a RecordFuture never yields itself to a task.
    _asyncio_future_blocking = False

    def __init__(self, outcome: BatchOutcome, index: int) -> None:
        self._outcome = outcome
        self._index = index

    def done(self) -> bool:
        """True once the batch is acknowledged or failed, or this future is cancelled."""
        outcome = self._outcome
        return outcome.settled or outcome.is_cancelled(self._index)

    def cancelled(self) -> bool:
        """True if ``cancel()`` was called before the batch settled."""
        return self._outcome.is_cancelled(self._index)

    def result(self) -> RecordMetadata:
        """The record's ``RecordMetadata``; raises the batch's error, ``CancelledError`` when cancelled, and
        ``asyncio.InvalidStateError`` while not done."""
        outcome = self._outcome
        index = self._index
        if not outcome.settled or outcome.error is not None or outcome._cancelled is not None:
            if outcome.is_cancelled(index):
                raise outcome.cancelled_error(index)
            if not outcome.settled:
                raise asyncio.InvalidStateError("the record is not acknowledged yet")
            if outcome.error is not None:
                raise outcome.error
        base_offset = outcome.base_offset
        log_append_time = outcome.log_append_time
        # tuple.__new__ builds the named tuple without its Python-level __new__: this runs once per record.
        return tuple.__new__(
            RecordMetadata,
            (
                outcome.topic,
                outcome.partition,
                -1 if base_offset < 0 else base_offset + index,
                outcome.timestamps[index] if log_append_time < 0 else log_append_time,
            ),
        )

    def exception(self) -> BaseException | None:
        """The batch's error, or None if it was stored; raises as ``result()`` when cancelled or not done."""
        outcome = self._outcome
        if outcome.is_cancelled(self._index):
            raise outcome.cancelled_error(self._index)
        if not outcome.settled:
            raise asyncio.InvalidStateError("the record is not acknowledged yet")
        return outcome.error

    def add_done_callback(self, fn: DoneCallback, *, context: contextvars.Context | None = None) -> None:
        """Call ``fn(future)`` through the event loop once done (at once, through the loop, if done now), in
        ``context`` or else the context current now."""
        outcome = self._outcome
        if context is None:
            context = contextvars.copy_context()
        if outcome.settled or (outcome._cancelled is not None and self._index in outcome._cancelled):
            outcome.loop.call_soon(fn, self, context=context)
        elif outcome._callbacks is None:
            outcome._callbacks = [(self, fn, context)]
        else:
            outcome._callbacks.append((self, fn, context))

    def remove_done_callback(self, fn: DoneCallback) -> int:
        """Remove every registration of ``fn``; returns how many were removed."""
        return self._outcome.remove_callback(self, fn)

    def cancel(self, msg: Any = None) -> bool:
        """Stop waiting for the acknowledgement (the record is still sent); False if already done."""
        if self.done():
            return False
        self._outcome.cancel(self, msg)
        return True

    # asyncio.gather reads these two of a cancelled child, as it does of its own futures.
    def _make_cancelled_error(self) -> asyncio.CancelledError:
        return self._outcome.cancelled_error(self._index)

    @property
    def _cancel_message(self) -> Any:
        return self._outcome.cancel_message(self._index)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop of the producer that buffered the record."""
        return self._outcome.loop

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        if not self.done():
            waiter = self._outcome.wait(self._index)
            try:
                yield from waiter
            except asyncio.CancelledError:
                # The awaiting task was cancelled: so is this future, as with an asyncio.Future.
                self.cancel()
                raise
        return self.result()

    __iter__ = __await__

    def __repr__(self) -> str:
        outcome = self._outcome
        where = f"{outcome.topic}-{outcome.partition}"
        if self.cancelled():
            state = "cancelled"
        elif not outcome.settled:
            state = "pending"
        elif outcome.error is not None:
            state = f"failed: {outcome.error!r}"
        else:
            state = f"offset {self.result().offset}"
        return f"<RecordFuture {where} #{self._index} {state}>"


# What makes up the Python class's own storage and construction; the compiled type has its own, and its own
# result() for a batch stored whole, which calls the one written here (as _result_slow) for everything else.
_STORAGE = frozenset(
    {"__slots__", "__init__", "_index", "_outcome", "__module__", "__qualname__", "__dict__", "result"}
)


def _outside_the_collector(written: type) -> type | None:
    """``written``'s methods on a compiled type whose instances the cycle collector never sees (see
    ``_delivery_speedups.c``); None without the extension or with MQWIRE_PURE_PYTHON set."""
    speedups = load_speedups("kafkawire._delivery_speedups")
    if speedups is None:
        return None
    compiled: type = speedups.new_type()
    for name, value in vars(written).items():
        if name not in _STORAGE:
            setattr(compiled, name, value)
    compiled._result_slow = written.result  # type: ignore[attr-defined]
    return compiled


if not TYPE_CHECKING:
    RecordFuture = _outside_the_collector(RecordFuture) or RecordFuture


def _metadata_at(ack: Ack, index: int) -> RecordMetadata:
    """The ``RecordMetadata`` of the record at ``index`` of the batch acknowledged as ``ack`` says."""
    kind, topic, partition, base_offset, log_append_time, timestamps = ack
    offset = -1 if base_offset < 0 else base_offset + index
    return tuple.__new__(
        kind, (topic, partition, offset, timestamps[index] if log_append_time < 0 else log_append_time)
    )


_compiled_delivery = load_speedups("kafkawire._delivery_speedups")
metadata_at: Callable[[Ack, int], RecordMetadata] = (
    _metadata_at if _compiled_delivery is None else _compiled_delivery.metadata_at
)
"""``_metadata_at``, compiled when the extension is in use (the metadata is then left out of the collector, as
``RecordFuture.result``'s is): what the blocking producer's futures read their metadata with."""
