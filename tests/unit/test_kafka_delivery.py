"""Record futures of the Kafka producer: ``asyncio.Future`` behaviour over one shared outcome per batch.

Every behaviour test runs against both kinds of ``RecordFuture``: the module as loaded (the compiled
``_delivery_speedups`` type unless MQWIRE_PURE_PYTHON is set) and a second copy of the module loaded with
the class as written in Python. Checks against asyncio use the real asyncio functions.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import importlib
import importlib.util
import os
import subprocess
import sys
import weakref
from types import ModuleType
from typing import Any

import pytest

from kafkawire import delivery
from kafkawire.message import RecordMetadata
from mqwire.common.errors import ProtocolError

TOPIC, PARTITION = "orders", 3
STAMPS = [1_000, 1_005, 1_010]


def _load_plain_copy() -> ModuleType:
    """A second copy of ``kafkawire.delivery`` built with MQWIRE_PURE_PYTHON set: the class as written."""
    spec = importlib.util.spec_from_file_location("kafkawire._delivery_plain_copy", delivery.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MQWIRE_PURE_PYTHON", "1")
        spec.loader.exec_module(module)
    return module


PLAIN = _load_plain_copy()


@pytest.fixture(params=[delivery, PLAIN], ids=["loaded", "plain"])
def mod(request: pytest.FixtureRequest) -> ModuleType:
    """The delivery module under test: as loaded, or the copy with the class as written."""
    module: ModuleType = request.param
    return module


def batch(mod: ModuleType, stamps: list[int] = STAMPS) -> tuple[Any, list[Any]]:
    """An outcome and one future per record, built the way the accumulator builds them."""
    outcome = mod.BatchOutcome(TOPIC, PARTITION, asyncio.get_running_loop())
    futures = []
    for stamp in stamps:
        futures.append(mod.RecordFuture(outcome, len(outcome.timestamps)))
        outcome.timestamps.append(stamp)
    return outcome, futures


def loop_errors() -> list[str]:
    """Collects what the running loop would log (e.g. an exception raised inside a done callback)."""
    errors: list[str] = []
    asyncio.get_running_loop().set_exception_handler(
        lambda _loop, context: errors.append(repr(context.get("exception", context["message"])))
    )
    return errors


async def until_done(future: asyncio.Future[Any], timeout: float = 0.5) -> None:
    """Waits for ``future`` without hanging the test when it never completes."""
    await asyncio.wait([future], timeout=timeout)


# --- The storage: compiled and outside the collector, or plain and collectable ----------------------

HAVE_GC = 1 << 14  # Py_TPFLAGS_HAVE_GC: instances are allocated as (and counted towards) collectable objects


def test_the_extension_is_built_and_used() -> None:
    importlib.import_module("kafkawire._delivery_speedups")
    compiled = not os.environ.get("MQWIRE_PURE_PYTHON")
    assert bool(delivery.RecordFuture.__flags__ & HAVE_GC) is not compiled
    assert PLAIN.RecordFuture.__flags__ & HAVE_GC
    # The compiled type carries the methods as written, under the same name.
    assert delivery.RecordFuture.__qualname__ == "RecordFuture"
    assert delivery.RecordFuture.__module__ == "kafkawire.delivery"
    assert delivery.RecordFuture.__doc__ == PLAIN.RecordFuture.__doc__


async def test_the_compiled_result_gives_what_the_written_one_gives() -> None:
    # The compiled result() answers for a batch stored whole; the method as written for everything else.
    for log_append_time, base_offset in [(-1, 100), (5_000, 7), (-1, -1)]:
        outcome, futures = batch(delivery)
        outcome.succeed(base_offset, log_append_time)
        for future in futures:
            metadata = future.result()
            assert metadata == PLAIN.RecordFuture.result(future)
            assert type(metadata) is RecordMetadata
            assert not gc.is_tracked(metadata) or os.environ.get("MQWIRE_PURE_PYTHON")
    partly, (cancelled, kept, _) = batch(delivery)
    cancelled.cancel()
    partly.succeed(3)
    assert kept.result() == RecordMetadata(TOPIC, PARTITION, 4, 1_005)
    with pytest.raises(asyncio.CancelledError):
        cancelled.result()


async def test_metadata_at_gives_from_the_ack_alone_what_result_gives(mod: ModuleType) -> None:
    # The blocking producer's futures keep the batch's _ack and their place, and read their metadata with it.
    for log_append_time, base_offset in [(-1, 100), (5_000, 7), (-1, -1)]:
        outcome, futures = batch(mod)
        outcome.succeed(base_offset, log_append_time)
        assert outcome._ack is not None
        for index, future in enumerate(futures):
            metadata = mod.metadata_at(outcome._ack, index)
            assert metadata == future.result() and type(metadata) is RecordMetadata
            compiled = mod is delivery and not os.environ.get("MQWIRE_PURE_PYTHON")
            assert gc.is_tracked(metadata) is not compiled


def allocations_counted(mod: ModuleType, count: int) -> int:
    """How far ``count`` new record futures (all kept) move the collector towards its next collection."""
    outcome = mod.BatchOutcome(TOPIC, PARTITION, asyncio.get_running_loop())
    kept: list[Any] = [None] * count
    gc.disable()  # no collection may reset the count while it is read
    try:
        before = gc.get_count()[0]
        for index in range(count):
            kept[index] = mod.RecordFuture(outcome, index)
        return gc.get_count()[0] - before
    finally:
        gc.enable()


async def test_compiled_futures_are_made_outside_the_cycle_collector() -> None:
    outcome = delivery.BatchOutcome(TOPIC, PARTITION, asyncio.get_running_loop())
    assert gc.is_tracked(PLAIN.RecordFuture(outcome, 0)) is True
    assert allocations_counted(PLAIN, 1_000) >= 1_000
    compiled = not os.environ.get("MQWIRE_PURE_PYTHON")
    assert gc.is_tracked(delivery.RecordFuture(outcome, 0)) is not compiled
    counted = allocations_counted(delivery, 1_000)
    assert counted < 10 if compiled else counted >= 1_000


BASE_SCRIPT = """
import asyncio, gc
from kafkawire.delivery import BatchOutcome, RecordFuture

async def main():
    outcome = BatchOutcome("t", 0, asyncio.get_running_loop())
    outcome.timestamps.append(7)
    future = RecordFuture(outcome, 0)
    asyncio.get_running_loop().call_soon(outcome.succeed, 40)
    print(bool(RecordFuture.__flags__ & (1 << 14)), gc.is_tracked(future), await future)

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("pure", "collectable"), [(False, False), (True, True)], ids=["compiled", "pure-python"]
)
def test_the_environment_chooses_the_storage_in_a_fresh_interpreter(pure: bool, collectable: bool) -> None:
    env = {name: value for name, value in os.environ.items() if name != "MQWIRE_PURE_PYTHON"}
    if pure:
        env["MQWIRE_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", BASE_SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    metadata = RecordMetadata("t", 0, 40, 7)
    assert done.stdout.strip() == f"{collectable} {collectable} {metadata}"


# --- State: before and after the batch settles ------------------------------------------------------


async def test_a_pending_future_is_not_done_and_has_no_result(mod: ModuleType) -> None:
    _, (future, *_) = batch(mod)
    assert (future.done(), future.cancelled()) == (False, False)
    with pytest.raises(asyncio.InvalidStateError):
        future.result()
    with pytest.raises(asyncio.InvalidStateError):
        future.exception()


async def test_success_gives_each_record_its_offset_and_own_timestamp(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    outcome.succeed(100)
    assert [f.done() for f in futures] == [True, True, True]
    assert [f.cancelled() for f in futures] == [False, False, False]
    assert [f.exception() for f in futures] == [None, None, None]
    results = [f.result() for f in futures]
    assert results == [
        RecordMetadata(TOPIC, PARTITION, 100, 1_000),
        RecordMetadata(TOPIC, PARTITION, 101, 1_005),
        RecordMetadata(TOPIC, PARTITION, 102, 1_010),
    ]
    assert all(type(r) is RecordMetadata for r in results)
    assert results[2].topic_partition == (TOPIC, PARTITION)


async def test_log_append_time_replaces_the_record_timestamps(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    outcome.succeed(7, log_append_time=5_000)
    assert [(f.result().offset, f.result().timestamp) for f in futures] == [(7, 5_000), (8, 5_000), (9, 5_000)]


async def test_an_untold_base_offset_gives_offset_minus_one(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    outcome.succeed(-1)  # acks=0: the broker tells nothing
    assert [f.result() for f in futures] == [RecordMetadata(TOPIC, PARTITION, -1, s) for s in STAMPS]


INT64_MAX = 2**63 - 1


@pytest.mark.parametrize("base_offset", [INT64_MAX - 3, INT64_MAX - 2, INT64_MAX - 1, INT64_MAX])
async def test_a_base_offset_that_puts_the_last_record_past_int64_fails_the_batch(
    mod: ModuleType, base_offset: int
) -> None:
    # Three records from base_offset: the last one's offset must still be an int64, else the response is
    # malformed and every record's future raises ProtocolError (compiled or not, no sum past int64 is made).
    outcome, futures = batch(mod)
    outcome.succeed(base_offset)
    if base_offset + 2 <= INT64_MAX:
        assert [f.result().offset for f in futures] == [base_offset, base_offset + 1, base_offset + 2]
    else:
        for future in futures:
            assert isinstance(future.exception(), ProtocolError)
            with pytest.raises(ProtocolError):
                future.result()


async def test_the_compiled_result_gives_an_offset_past_int64_as_the_written_one() -> None:
    # A future whose place in a stored batch would take the sum past int64 (never made by the producer):
    # the compiled result() gives exactly what the written one gives, rather than a wrapped-around sum.
    outcome, _ = batch(delivery)
    outcome.succeed(INT64_MAX - 2)
    beyond = delivery.RecordFuture(outcome, 5)
    outcome.timestamps.extend([1, 2, 3])
    assert beyond.result() == PLAIN.RecordFuture.result(beyond) == RecordMetadata(TOPIC, PARTITION, INT64_MAX + 3, 3)


async def test_failure_raises_the_same_error_object(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    error = ConnectionError("broker gone")
    outcome.fail(error)
    for future in futures:
        assert (future.done(), future.cancelled()) == (True, False)
        assert future.exception() is error
        with pytest.raises(ConnectionError) as raised:
            future.result()
        assert raised.value is error


async def test_an_outcome_settles_once(mod: ModuleType) -> None:
    succeeded, (first, *_) = batch(mod)
    succeeded.succeed(10)
    succeeded.fail(RuntimeError("late"))
    succeeded.succeed(99, 1)
    assert first.result() == RecordMetadata(TOPIC, PARTITION, 10, 1_000)
    failed, (other, *_) = batch(mod)
    error = RuntimeError("first")
    failed.fail(error)
    failed.succeed(10)
    failed.fail(RuntimeError("second"))
    assert other.exception() is error


# --- await ------------------------------------------------------------------------------------------


async def test_await_waits_until_the_batch_settles(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    waiting = asyncio.create_task(_await(futures[1]))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not waiting.done()
    outcome.succeed(50)
    assert await waiting == RecordMetadata(TOPIC, PARTITION, 51, 1_005)


async def test_await_of_a_settled_future_returns_without_suspending(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    outcome.succeed(50)
    steps = futures[2].__await__()
    with pytest.raises(StopIteration) as stop:
        next(steps)
    assert stop.value.value == RecordMetadata(TOPIC, PARTITION, 52, 1_010)
    assert await futures[0] == RecordMetadata(TOPIC, PARTITION, 50, 1_000)


async def test_await_of_a_failed_future_raises_its_error(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    waiting = asyncio.create_task(_await(futures[0]))
    await asyncio.sleep(0)
    error = TimeoutError("delivery timeout")
    outcome.fail(error)
    with pytest.raises(TimeoutError) as raised:
        await waiting
    assert raised.value is error
    with pytest.raises(TimeoutError):
        await futures[1]  # already failed


async def test_several_tasks_await_one_record(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    waiting = [asyncio.create_task(_await(futures[0])) for _ in range(3)]
    await asyncio.sleep(0)
    outcome.succeed(0)
    assert await asyncio.gather(*waiting) == [RecordMetadata(TOPIC, PARTITION, 0, 1_000)] * 3


async def _await(future: Any) -> Any:
    return await future


# --- cancel -----------------------------------------------------------------------------------------


async def test_cancel_succeeds_once(mod: ModuleType) -> None:
    _, (future, other, _) = batch(mod)
    assert future.cancel() is True
    assert future.cancel() is False
    assert (future.done(), future.cancelled()) == (True, True)
    with pytest.raises(asyncio.CancelledError):
        future.result()
    with pytest.raises(asyncio.CancelledError):
        future.exception()
    assert (other.done(), other.cancelled()) == (False, False)


async def test_a_task_awaiting_a_future_cancelled_elsewhere_is_cancelled(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    waiting = asyncio.create_task(_await(futures[0]))
    await asyncio.sleep(0)
    futures[0].cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert waiting.cancelled()
    outcome.succeed(0)


async def test_cancelling_the_awaiting_task_cancels_only_its_record(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    first = asyncio.create_task(_await(futures[0]))
    second = asyncio.create_task(_await(futures[1]))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert futures[0].cancelled()
    assert [f.done() for f in futures[1:]] == [False, False]
    assert not second.done()
    outcome.succeed(20)
    assert await second == RecordMetadata(TOPIC, PARTITION, 21, 1_005)
    assert futures[2].result().offset == 22


async def test_settling_after_cancel_leaves_it_cancelled(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    futures[1].cancel()
    outcome.succeed(0)
    assert futures[1].cancelled()
    with pytest.raises(asyncio.CancelledError):
        futures[1].result()
    assert futures[0].result().offset == 0
    failed, (other, *_) = batch(mod)
    other.cancel()
    failed.fail(RuntimeError("x"))
    assert other.cancelled()
    with pytest.raises(asyncio.CancelledError):
        other.exception()


async def test_cancel_after_settling_does_nothing(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    outcome.succeed(5)
    assert futures[0].cancel() is False
    assert not futures[0].cancelled()
    assert futures[0].result().offset == 5
    failed, (other, *_) = batch(mod)
    failed.fail(RuntimeError("x"))
    assert other.cancel() is False
    assert not other.cancelled()


# --- Done callbacks ---------------------------------------------------------------------------------

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def test_callbacks_run_through_the_loop_with_the_future(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    seen: list[tuple[str, Any]] = []
    futures[0].add_done_callback(lambda f: seen.append(("a", f)))
    futures[2].add_done_callback(lambda f: seen.append(("b", f)))
    futures[0].add_done_callback(lambda f: seen.append(("c", f)))
    await asyncio.sleep(0)
    assert seen == []
    outcome.succeed(0)
    assert seen == []  # not synchronously inside succeed()
    await asyncio.sleep(0)
    assert seen == [("a", futures[0]), ("b", futures[2]), ("c", futures[0])]
    assert seen[0][1] is futures[0]


async def test_a_callback_added_before_the_await_has_run_when_the_awaiting_task_resumes(mod: ModuleType) -> None:
    # As with an asyncio.Future, whose callbacks (the awaiting task's wake-up among them) run in the order
    # added: a sender that traces its record in a callback sees the trace ended once its await returns.
    outcome, futures = batch(mod)
    seen: list[str] = []
    futures[1].add_done_callback(lambda _: seen.append("callback"))

    async def sender() -> None:
        await futures[1]
        seen.append("resumed")

    task = asyncio.ensure_future(sender())
    await asyncio.sleep(0)  # the task is awaiting now
    outcome.succeed(0)
    await task
    assert seen == ["callback", "resumed"]


async def test_callbacks_run_in_the_given_context(mod: ModuleType) -> None:
    outcome, (future, *_) = batch(mod)
    context = contextvars.copy_context()
    context.run(VAR.set, "given")
    seen: list[str] = []
    future.add_done_callback(lambda _f: seen.append(VAR.get()), context=context)
    VAR.set("settler")
    outcome.succeed(0)
    await asyncio.sleep(0)
    assert seen == ["given"]


async def test_callbacks_without_context_run_in_the_context_they_were_added_in(mod: ModuleType) -> None:
    # asyncio.Future.add_done_callback copies the current context when the callback is added.
    outcome, (future, *_) = batch(mod)
    seen: list[str] = []

    async def register() -> None:
        VAR.set("registrant")
        future.add_done_callback(lambda _f: seen.append(VAR.get()))

    await asyncio.create_task(register())
    VAR.set("settler")
    outcome.succeed(0)
    await asyncio.sleep(0)
    assert seen == ["registrant"]


async def test_a_callback_added_when_done_runs_soon_not_now(mod: ModuleType) -> None:
    outcome, (future, *_) = batch(mod)
    outcome.succeed(0)
    seen: list[Any] = []
    future.add_done_callback(seen.append)
    assert seen == []
    await asyncio.sleep(0)
    assert seen == [future]


async def test_removed_callbacks_are_counted_and_never_run(mod: ModuleType) -> None:
    outcome, (future, other, _) = batch(mod)
    seen: list[str] = []

    def removed(_f: Any) -> None:
        seen.append("removed")

    def kept(_f: Any) -> None:
        seen.append("kept")

    future.add_done_callback(removed)
    future.add_done_callback(kept)
    future.add_done_callback(removed)
    other.add_done_callback(removed)  # the same function on another record stays
    assert future.remove_done_callback(removed) == 2
    assert future.remove_done_callback(removed) == 0
    outcome.succeed(0)
    await asyncio.sleep(0)
    assert seen == ["kept", "removed"]
    assert future.remove_done_callback(kept) == 0  # already ran


async def test_a_raising_callback_is_reported_and_the_others_still_run(mod: ModuleType) -> None:
    # As asyncio runs a future's callbacks: each error goes to the loop's exception handler, in order.
    errors = loop_errors()
    outcome, futures = batch(mod)
    seen: list[str] = []

    def boom(_f: Any) -> None:
        seen.append("boom")
        raise ValueError("in a callback")

    futures[0].add_done_callback(boom)
    futures[1].add_done_callback(lambda _f: seen.append("after"))
    futures[2].add_done_callback(boom)
    outcome.succeed(0)
    await asyncio.sleep(0)
    assert seen == ["boom", "after", "boom"]
    assert errors == [repr(ValueError("in a callback"))] * 2


async def test_callbacks_of_a_cancelled_future_run_on_cancel(mod: ModuleType) -> None:
    outcome, (future, other, _) = batch(mod)
    seen: list[Any] = []
    future.add_done_callback(seen.append)
    other.add_done_callback(seen.append)
    future.cancel()
    assert seen == []
    await asyncio.sleep(0)
    assert seen == [future]
    outcome.succeed(0)
    await asyncio.sleep(0)
    assert seen == [future, other]  # the cancelled one's callback ran once


# --- asyncio functions ------------------------------------------------------------------------------


async def test_it_is_a_future_to_asyncio(mod: ModuleType) -> None:
    _, (future, *_) = batch(mod)
    assert asyncio.isfuture(future)
    assert asyncio.ensure_future(future) is future
    assert future.get_loop() is asyncio.get_running_loop()


async def test_gather_returns_the_metadata_in_order(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, futures = batch(mod)
    asyncio.get_running_loop().call_soon(outcome.succeed, 30)
    results = await asyncio.gather(futures[2], futures[0], futures[1])
    assert list(results) == [
        RecordMetadata(TOPIC, PARTITION, 32, 1_010),
        RecordMetadata(TOPIC, PARTITION, 30, 1_000),
        RecordMetadata(TOPIC, PARTITION, 31, 1_005),
    ]
    assert errors == []


async def test_gather_raises_the_batch_error(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, futures = batch(mod)
    error = ValueError("record too large")
    asyncio.get_running_loop().call_soon(outcome.fail, error)
    with pytest.raises(ValueError) as raised:
        await asyncio.gather(*futures)
    assert raised.value is error
    assert await asyncio.gather(*futures, return_exceptions=True) == [error, error, error]
    assert errors == []


async def test_gather_of_a_cancelled_record_ends_cancelled(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, futures = batch(mod)
    futures[0].cancel()
    gathered = asyncio.gather(*futures)
    await until_done(gathered)
    assert gathered.done(), f"gather never completed; the loop logged {errors}"
    with pytest.raises(asyncio.CancelledError):
        gathered.result()
    outcome.succeed(0)
    collected = asyncio.gather(*futures, return_exceptions=True)
    await until_done(collected)
    assert collected.done(), f"gather never completed; the loop logged {errors}"
    results = collected.result()
    assert isinstance(results[0], asyncio.CancelledError)
    assert results[1:] == [RecordMetadata(TOPIC, PARTITION, 1, 1_005), RecordMetadata(TOPIC, PARTITION, 2, 1_010)]
    assert errors == []


async def test_cancelling_a_gather_cancels_its_records(mod: ModuleType) -> None:
    # Also what wait_for(gather(...), timeout) and cancelling a task awaiting gather(...) do.
    errors = loop_errors()
    outcome, futures = batch(mod)
    gathered = asyncio.gather(*futures)
    await asyncio.sleep(0)
    assert gathered.cancel() is True
    await until_done(gathered)
    assert [f.cancelled() for f in futures] == [True, True, True]
    assert gathered.done(), f"gather never completed; the loop logged {errors}"
    with pytest.raises(asyncio.CancelledError):
        gathered.result()
    assert errors == []
    outcome.succeed(0)


async def test_wait_for_around_a_gather_of_records_times_out(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, futures = batch(mod)
    waiting = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(*futures), timeout=0.05))
    await until_done(waiting, timeout=1.0)
    if not waiting.done():
        waiting.cancel()  # leave no task behind
        await until_done(waiting)
        pytest.fail(f"wait_for never returned; the loop logged {errors}")
    with pytest.raises(TimeoutError):
        waiting.result()
    assert [f.cancelled() for f in futures] == [True, True, True]
    assert errors == []
    outcome.succeed(0)


async def test_wait_returns_the_same_objects(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    other, (elsewhere, *_) = batch(mod)
    asyncio.get_running_loop().call_later(0.01, outcome.succeed, 0)
    done, pending = await asyncio.wait([*futures, elsewhere], return_when=asyncio.FIRST_COMPLETED)
    assert done == set(futures)
    assert pending == {elsewhere}
    assert all(any(f is d for d in done) for f in futures)
    asyncio.get_running_loop().call_later(0.01, other.fail, RuntimeError("x"))
    done, pending = await asyncio.wait([*futures, elsewhere], return_when=asyncio.ALL_COMPLETED)
    assert (done, pending) == ({*futures, elsewhere}, set())
    done, pending = await asyncio.wait(futures, return_when=asyncio.FIRST_EXCEPTION)
    assert (done, pending) == (set(futures), set())


async def test_wait_for_times_out_and_cancels_the_record(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, (future, other, _) = batch(mod)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(future, timeout=0.05)
    assert future.cancelled()
    assert not other.done()
    outcome.succeed(0)
    assert errors == []


async def test_wait_for_returns_when_settled_in_time(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    asyncio.get_running_loop().call_later(0.01, outcome.succeed, 8)
    assert await asyncio.wait_for(futures[1], timeout=5) == RecordMetadata(TOPIC, PARTITION, 9, 1_005)


async def test_timeout_context_cancels_the_awaited_record(mod: ModuleType) -> None:
    outcome, (future, *_) = batch(mod)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.02):
            await future
    assert future.cancelled()
    outcome.succeed(0)


async def test_shield_keeps_the_record_future_from_cancellation(mod: ModuleType) -> None:
    errors = loop_errors()
    outcome, (future, other, _) = batch(mod)
    shielded = asyncio.shield(future)
    assert shielded is not future
    shielded.cancel()
    await asyncio.sleep(0)
    assert not future.done()
    kept = asyncio.shield(other)
    outcome.succeed(70)
    assert await kept == RecordMetadata(TOPIC, PARTITION, 71, 1_005)
    assert future.result().offset == 70
    assert asyncio.shield(future) is future  # already done: shield hands it back
    assert errors == []


async def test_as_completed_yields_each_result(mod: ModuleType) -> None:
    first, (a, *_) = batch(mod)
    second, (b, *_) = batch(mod, [2_000])
    loop = asyncio.get_running_loop()
    loop.call_later(0.02, first.succeed, 10)
    loop.call_later(0.01, second.fail, RuntimeError("later batch failed"))
    outcomes: list[Any] = []
    for next_done in asyncio.as_completed([a, b], timeout=5):
        try:
            outcomes.append(await next_done)
        except RuntimeError as error:
            outcomes.append(str(error))
    assert outcomes == ["later batch failed", RecordMetadata(TOPIC, PARTITION, 10, 1_000)]


async def test_repr_tells_the_state(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    assert repr(futures[1]) == "<RecordFuture orders-3 #1 pending>"
    futures[2].cancel()
    outcome.succeed(40)
    assert repr(futures[1]) == "<RecordFuture orders-3 #1 offset 41>"
    assert repr(futures[2]) == "<RecordFuture orders-3 #2 cancelled>"
    failed, (lost, *_) = batch(mod)
    failed.fail(ValueError("bad"))
    assert repr(lost) == "<RecordFuture orders-3 #0 failed: ValueError('bad')>"


# --- No cycles left once settled (compiled futures are invisible to the cycle collector) ------------


async def test_settling_drops_the_callbacks_and_waiters(mod: ModuleType) -> None:
    outcome, futures = batch(mod)
    futures[0].add_done_callback(lambda _f: None)
    waiting = asyncio.create_task(_await(futures[1]))
    await asyncio.sleep(0)
    assert outcome._callbacks is not None and outcome._waiters is not None
    outcome.succeed(0)
    assert (outcome._callbacks, outcome._waiters) == (None, None)
    await waiting
    failed, (lost, *_) = batch(mod)
    lost.add_done_callback(lambda _f: None)
    failed.fail(RuntimeError("x"))
    assert (failed._callbacks, failed._waiters) == (None, None)


async def test_cancel_drops_only_that_records_callbacks_and_waiters(mod: ModuleType) -> None:
    outcome, (future, other, _) = batch(mod)
    future.add_done_callback(lambda _f: None)
    other.add_done_callback(lambda _f: None)
    tasks = [asyncio.create_task(_await(f)) for f in (future, other)]
    await asyncio.sleep(0)
    future.cancel()
    assert [entry[0] for entry in outcome._callbacks] == [other]
    assert [entry[0] for entry in outcome._waiters] == [1]
    outcome.succeed(0)
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_settled_batch_keeps_nothing_alive(mod: ModuleType) -> None:
    class Marker:
        pass

    marker = Marker()
    alive = weakref.ref(marker)
    outcome, futures = batch(mod)
    # Cycles through the outcome while pending: future -> outcome -> callback/waiter -> future.
    futures[0].add_done_callback(lambda _f, keep=(marker, futures): None)
    waiting = asyncio.create_task(_await(futures[1]))
    await asyncio.sleep(0)
    gc.disable()  # only reference counting from here: a cycle left behind would keep the marker
    try:
        outcome.succeed(0)
        await waiting
        await asyncio.sleep(0)
        del marker, outcome, futures, waiting
        assert alive() is None
    finally:
        gc.enable()
