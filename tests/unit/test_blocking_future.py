"""The per-record future of the blocking producers behaves as a ``concurrent.futures.Future`` in every use.

``RecordFuture`` makes its condition only when a second thread needs it; these check each standard use with
the future pending and settled, and that a waiter in another thread is never left waiting when the settling
thread takes the short way at the same moment. It also checks that a future stays outside the cycle
collector's scans only while nothing that could refer back to it is attached, and that the cycles such things
make are collected.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import subprocess
import sys
import threading
import types
import weakref
from collections.abc import Callable

import pytest

from mqwire.common import blocking_future
from mqwire.common.blocking_future import QueuedFuture, RecordFuture


def settled(result: object = None, error: BaseException | None = None) -> RecordFuture[object]:
    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    future.finish(result, error)
    return future


@pytest.fixture(params=["compiled", "python"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """start_many and finish_many_lazily walk their futures this way (``_enqueue_speedups`` in C, or Python)."""
    if request.param == "compiled":
        if blocking_future._compiled is None:
            pytest.skip("the compiled _enqueue_speedups is not in use (MQWIRE_PURE_PYTHON or no build)")
    else:
        monkeypatch.setattr(blocking_future, "_compiled", None)
    return str(request.param)


def test_is_a_concurrent_future_and_settles_without_a_condition() -> None:
    future = settled("receipt")
    assert isinstance(future, concurrent.futures.Future)
    assert future._made_condition is None  # nobody else needed it
    assert future.done() and not future.cancelled() and not future.running()
    assert future.result() == "receipt" and future.result(timeout=0) == "receipt"
    assert future.exception() is None
    assert "finished returned str" in repr(future)


def test_an_error_is_raised_by_result_and_returned_by_exception() -> None:
    error = ConnectionError("the broker refused it")
    future = settled(error=error)
    with pytest.raises(ConnectionError) as raised:
        future.result()
    assert raised.value is error
    assert future.exception() is error


def test_a_second_finish_changes_nothing() -> None:
    future = settled("first")
    future.finish("second")
    future.finish(error=RuntimeError("late"))
    assert future.result() == "first"


def test_cancelled_before_start_is_not_started() -> None:
    future: RecordFuture[object] = RecordFuture()
    assert future.cancel()
    assert not future.start()
    assert future.cancelled()
    future.finish("ignored")  # a close racing the cancel: no error
    with pytest.raises(concurrent.futures.CancelledError):
        future.result()


def test_a_started_future_cannot_be_cancelled() -> None:
    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    assert not future.cancel()
    assert future.running()
    future.finish(1)
    assert future.result() == 1


def test_done_callbacks_run_once_whether_added_before_or_after() -> None:
    calls: list[object] = []
    future: RecordFuture[object] = RecordFuture()
    future.add_done_callback(lambda f: calls.append(("before", f.result())))
    future.start()
    future.finish(7)
    future.add_done_callback(lambda f: calls.append(("after", f.result())))
    assert calls == [("before", 7), ("after", 7)]


def test_result_times_out_while_pending() -> None:
    future: RecordFuture[object] = RecordFuture()
    with pytest.raises(concurrent.futures.TimeoutError):
        future.result(timeout=0.01)
    with pytest.raises(concurrent.futures.TimeoutError):
        future.exception(timeout=0.01)


def test_wait_and_as_completed_see_both_kinds_of_settling() -> None:
    early = settled("early")
    late: RecordFuture[object] = RecordFuture()
    late.start()
    pending: RecordFuture[object] = RecordFuture()
    timer = threading.Timer(0.05, late.finish, args=("late",))
    timer.start()
    done, not_done = concurrent.futures.wait([early, late, pending], timeout=5, return_when="FIRST_EXCEPTION")
    timer.join()
    assert early in done and pending in not_done
    done, _ = concurrent.futures.wait([early, late], timeout=5)
    assert done == {early, late}
    assert sorted(f.result() for f in concurrent.futures.as_completed([early, late], timeout=5)) == ["early", "late"]


def test_a_waiter_in_another_thread_is_always_woken() -> None:
    # Many rounds of a thread waiting on result() while this one settles at the same moment: a lost wake-up
    # would show as a TimeoutError (or a thread left waiting).
    lost = 0
    for round_ in range(2000):
        future: RecordFuture[int] = RecordFuture()
        future.start()
        got: list[object] = []
        ready = threading.Event()

        def wait(f: RecordFuture[int] = future, out: list[object] = got, go: threading.Event = ready) -> None:
            go.set()
            try:
                out.append(f.result(timeout=5))
            except concurrent.futures.TimeoutError as error:
                out.append(error)

        waiter = threading.Thread(target=wait)
        waiter.start()
        ready.wait()
        future.finish(round_)
        waiter.join(timeout=10)
        assert not waiter.is_alive()
        lost += got != [round_]
    assert lost == 0


def test_a_settled_future_holds_no_lists_until_a_second_thread_needs_them() -> None:
    future = settled("x")
    assert "_done_callbacks" not in vars(future) and not hasattr(future, "_waiters")
    future.add_done_callback(lambda f: None)  # settled: run at once, nothing kept
    assert "_done_callbacks" not in vars(future)


def test_start_many_starts_each_future_once_and_reports_the_cancelled(walk: str) -> None:
    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(4)]
    assert futures[1].cancel()
    waited: list[object] = []
    futures[2].add_done_callback(waited.append)  # its condition exists: the standard start
    assert RecordFuture.start_many(futures) == [True, False, True, True]
    assert [future.running() for future in futures] == [True, False, True, True]
    assert RecordFuture.start_many(futures) == [False, False, False, False]  # started already: not again


def test_finish_many_settles_each_with_its_own_result_or_all_with_one_error(walk: str) -> None:
    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(3)]
    RecordFuture.start_many(futures)
    told: list[object] = []
    futures[1].add_done_callback(told.append)
    RecordFuture.finish_many(futures, [1, 2, 3], lambda source: source * 10)
    assert [future.result(0) for future in futures] == [10, 20, 30]
    assert told == [futures[1]]
    assert futures[0]._made_condition is None  # settled the short way

    failed: list[RecordFuture[object]] = [RecordFuture() for _ in range(3)]
    RecordFuture.start_many(failed)
    error = ConnectionError("the batch failed")
    RecordFuture.finish_many(failed, [1, 2, 3], error=error)
    assert all(future.exception(0) is error for future in failed)
    RecordFuture.finish_many(failed, [4, 5, 6])  # settled already: nothing changes
    assert all(future.exception(0) is error for future in failed)


def test_finish_many_lazily_makes_each_result_when_it_is_asked_for(walk: str) -> None:
    reads: list[tuple[object, int]] = []

    def read(source: object, place: int) -> tuple[object, int]:
        reads.append((source, place))
        return (source, place)

    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(4)]
    assert futures[3].cancel()
    RecordFuture.start_many(futures)
    told: list[object] = []
    futures[1].add_done_callback(told.append)
    RecordFuture.finish_many_lazily(futures, read, "batch", 5)
    assert told == [futures[1]] and reads == []  # settled, nothing made yet
    assert [future.result(0) for future in futures[:3]] == [("batch", 5), ("batch", 6), ("batch", 7)]
    assert reads == [("batch", 5), ("batch", 6), ("batch", 7)]
    assert futures[1].exception() is None and futures[0]._made_condition is None
    assert futures[3].cancelled()  # cancelled before the hand-over: stays so
    RecordFuture.finish_many_lazily(futures, read, "other", 0)  # settled already: nothing changes
    assert futures[0].result() == ("batch", 5)


def test_a_lazily_settled_future_gives_its_result_to_the_standard_methods(walk: str) -> None:
    # A thread that reaches the standard Future.result (it saw the future pending, then made the condition)
    # reads _result: made when the condition is.
    future: RecordFuture[object] = RecordFuture()
    RecordFuture.start_many([future])
    RecordFuture.finish_many_lazily([future], lambda source, place: (source, place), "batch", 2)
    assert future._condition is not None
    assert concurrent.futures.Future.result(future, 0) == ("batch", 2)
    assert "finished returned tuple" in repr(future)


def test_finish_many_lazily_wakes_a_waiter_in_another_thread(walk: str) -> None:
    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(2)]
    RecordFuture.start_many(futures)
    results: list[object] = []
    waiter = threading.Thread(target=lambda: results.append(futures[0].result(30)))
    waiter.start()
    while futures[0]._made_condition is None:
        threading.Event().wait(0.001)
    RecordFuture.finish_many_lazily(futures, lambda source, place: (source, place), "batch", 0)
    waiter.join(30)
    assert results == [("batch", 0)] and futures[1].result(0) == ("batch", 1)


SETTLED_IN_A_FRESH_INTERPRETER = """
import gc, sys
from mqwire.common.blocking_future import RecordFuture
early = [RecordFuture() for _ in range(100)]  # the class's shared table of names takes no new ones by now
futures = [RecordFuture() for _ in range(1000)]
sources = list(range(1000))
gc.disable()
before = gc.get_count()[0]
RecordFuture.start_many(futures)
if sys.argv[1] == "lazily":
    RecordFuture.finish_many_lazily(futures, lambda source, place: place, "batch", 0)
else:
    RecordFuture.finish_many(futures, sources)
print(gc.get_count()[0] - before)
"""


@pytest.mark.parametrize("way", ["lazily", "with results"])
def test_settled_futures_get_no_dictionary_of_their_own(way: str) -> None:
    # A future given an attribute name missing from its class's shared table gets a dictionary of its own: one
    # more object for the cycle collector per record. In a fresh interpreter, so that no other test has put the
    # names in the table first.
    answer = subprocess.run(
        [sys.executable, "-c", SETTLED_IN_A_FRESH_INTERPRETER, way], capture_output=True, text=True, check=True
    )
    assert int(answer.stdout) < 100  # not one per future


def test_finish_many_wakes_a_waiter_in_another_thread(walk: str) -> None:
    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(2)]
    RecordFuture.start_many(futures)
    results: list[object] = []
    waiter = threading.Thread(target=lambda: results.append(futures[0].result(30)))
    waiter.start()
    while futures[0]._made_condition is None:  # the waiter is in result(): the condition is made
        threading.Event().wait(0.001)
    RecordFuture.finish_many(futures, ["a", "b"])
    waiter.join(30)
    assert results == ["a"] and futures[1].result(0) == "b"


def test_a_callback_added_while_pending_makes_no_condition_and_runs_in_the_settling_thread(walk: str) -> None:
    futures: list[RecordFuture[object]] = [RecordFuture() for _ in range(3)]
    ran: list[tuple[object, int]] = []
    futures[1].add_done_callback(lambda f: ran.append((f.result(), threading.get_ident())))
    futures[1].add_done_callback(lambda f: 1 / 0)  # reported, as Future reports it; the others still run
    futures[2].add_done_callback(lambda f: ran.append((f.result(), threading.get_ident())))
    assert all(future._made_condition is None for future in futures)
    assert not futures[1].done()
    RecordFuture.start_many(futures)
    settler = threading.Thread(target=RecordFuture.finish_many, args=(futures[:2], ["a", "b"]))
    settler.start()
    settler.join(30)
    futures[2].finish("c")
    assert ran == [("b", settler.ident), ("c", threading.get_ident())]
    assert futures[0]._made_condition is None and futures[2]._made_condition is None  # (the report's repr of
    # futures[1] takes its condition)
    late: list[object] = []
    futures[0].add_done_callback(late.append)  # settled already: at once
    assert late == [futures[0]]


def test_a_callback_added_before_a_waiter_made_the_condition_still_runs() -> None:
    future: RecordFuture[object] = RecordFuture()
    ran: list[object] = []
    future.add_done_callback(ran.append)
    assert future.start()
    waiter = threading.Thread(target=future.result, args=(30,))
    waiter.start()
    while future._made_condition is None:
        threading.Event().wait(0.001)
    future.finish("x")
    waiter.join(30)
    assert ran == [future]


# ------------------------------------------------------------------------------ the cycle collector
needs_compiled = pytest.mark.skipif(
    not blocking_future.COMPILED, reason="the compiled _gc_speedups is not in use (MQWIRE_PURE_PYTHON or no build)"
)


def test_the_compiled_switches_are_in_use_unless_pure_python_is_asked() -> None:
    # A build that fell back to Python would skip the tests below in silence: so it fails here instead.
    assert blocking_future.COMPILED is not bool(os.environ.get("MQWIRE_PURE_PYTHON"))


@needs_compiled
def test_a_future_settled_with_a_receipt_stays_outside_the_collector() -> None:
    future: RecordFuture[object] = RecordFuture()
    assert not gc.is_tracked(future)
    RecordFuture.start_many([future])
    RecordFuture.finish_many([future], [("topic", 0, 7, 1)])
    assert not gc.is_tracked(future)
    assert future.result() == ("topic", 0, 7, 1)


@needs_compiled
@pytest.mark.parametrize(
    "attach",
    [
        pytest.param(lambda f: f.add_done_callback(lambda _: None), id="a callback"),
        pytest.param(lambda f: f._condition, id="a condition (a waiter in another thread)"),
        pytest.param(lambda f: f.finish(error=ConnectionError("refused")), id="an error"),
        pytest.param(lambda f: RecordFuture.finish_many([f], error=ConnectionError("refused")), id="an error, many"),
        pytest.param(lambda f: RecordFuture.finish_many([f], [None], read=lambda _: 1 // 0), id="a failed read"),
    ],
)
def test_the_collector_sees_a_future_once_something_that_could_refer_back_is_attached(
    attach: Callable[[RecordFuture[object]], object],
) -> None:
    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    attach(future)
    assert gc.is_tracked(future)


@pytest.mark.parametrize("settle", [True, False], ids=["settled", "pending"])
def test_a_cycle_through_a_futures_callback_is_collected(settle: bool) -> None:
    # The callback refers back to the future: unless the collector sees the future again, the pair would
    # never be freed.
    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    holder = [future]
    future.add_done_callback(holder.append)  # future -> its callbacks -> holder -> future
    if settle:
        future.finish("receipt")
    gone = weakref.ref(future)
    del future, holder
    gc.collect()
    assert gone() is None


def test_a_cycle_through_a_futures_error_is_collected() -> None:
    def fail(future: RecordFuture[object]) -> None:
        try:
            raise ConnectionError("refused")
        except ConnectionError as error:  # its traceback holds this frame, which holds the future
            future.finish(error=error)

    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    fail(future)
    gone = weakref.ref(future)
    del future
    gc.collect()
    assert gone() is None


def test_the_switches_leave_other_objects_as_they_were() -> None:
    untrack, track = blocking_future._untrack, blocking_future._track
    for atomic in (1, "text", b"bytes", None):  # not collectable at all: nothing to do
        untrack(atomic)
        track(atomic)
    kept = [object()]
    track(kept)  # tracked already: stays so (the C call must not track it twice)
    assert gc.is_tracked(kept)


@pytest.mark.parametrize("many", [False, True], ids=["finish", "finish_many"])
def test_callbacks_are_dropped_once_run_and_the_future_leaves_the_collector_again(many: bool) -> None:
    # A caller sampling some records' latency keeps every future: what a sampled one held must not stay.
    ran: list[object] = []
    future: RecordFuture[object] = RecordFuture()
    assert future.start()
    future.add_done_callback(ran.append)
    if many:
        RecordFuture.finish_many([future], ["receipt"])
    else:
        future.finish("receipt")
    assert ran == [future]
    assert future._done_callbacks == ()
    if blocking_future.COMPILED:
        assert not gc.is_tracked(future)
    future.add_done_callback(ran.append)  # settled: runs at once, as Future's
    assert ran == [future, future]


# ------------------------------------------------------------------------------ a queued record's future
@needs_compiled
def test_a_queued_futures_callback_leaves_it_outside_the_collector_until_settled(walk: str) -> None:
    ran: list[object] = []
    future: QueuedFuture[object] = QueuedFuture()
    assert future.start()
    future.add_done_callback(ran.append)
    future.add_done_callback(ran.append)
    assert not gc.is_tracked(future)
    assert not gc.is_tracked(future._done_callbacks)
    RecordFuture.finish_many_lazily([future], lambda source, place: (source, place), "batch", 3)
    assert ran == [future, future]
    assert future._done_callbacks == ()
    assert not gc.is_tracked(future)
    assert future.result() == ("batch", 3)


def test_a_cycle_through_a_queued_futures_callback_is_collected_once_settled() -> None:
    future: QueuedFuture[object] = QueuedFuture()
    assert future.start()
    holder = [future]
    future.add_done_callback(holder.append)  # future -> its callbacks -> holder -> future, until settled
    future.finish("receipt")
    gone = weakref.ref(future)
    del future, holder
    gc.collect()
    assert gone() is None


def test_a_queued_futures_callbacks_come_under_the_collector_with_its_condition() -> None:
    # A waiter's condition makes it a standard Future, which keeps its callbacks once run: a cycle through them
    # must then be found by the collector even if the future is never settled.
    future: QueuedFuture[object] = QueuedFuture()
    assert future.start()
    holder = [future]
    future.add_done_callback(holder.append)
    assert future._condition is not None
    if blocking_future.COMPILED:
        assert gc.is_tracked(future) and gc.is_tracked(future._done_callbacks)
    gone = weakref.ref(future)
    del future, holder
    gc.collect()
    assert gone() is None


def test_a_queued_future_is_a_record_future_with_the_same_shared_attribute_names() -> None:
    future: QueuedFuture[object] = QueuedFuture()
    assert isinstance(future, RecordFuture)
    assert future.start()
    future.finish("receipt")
    future.add_done_callback(lambda _: None)
    assert future.result() == "receipt"


def test_a_future_whose_slots_were_never_set_is_refused_not_read(walk: str) -> None:
    # A subclass that skips RecordFuture.__init__ leaves its slots empty: the compiled steps must not read them.
    class Unset(RecordFuture[object]):
        def __init__(self) -> None:
            pass

    with pytest.raises((TypeError, AttributeError)):
        RecordFuture.start_many([Unset()])
    with pytest.raises((TypeError, AttributeError)):
        RecordFuture.finish_many_lazily([Unset()], lambda source, place: place, None, 0)
    with pytest.raises(AttributeError):
        Unset().result(0)
    with pytest.raises(AttributeError):
        Unset().add_done_callback(lambda _: None)


def test_callbacks_are_kept_compiled_where_the_speedups_are() -> None:
    written_in_python = isinstance(RecordFuture.__dict__["add_done_callback"], types.FunctionType)
    assert written_in_python is (blocking_future._compiled is None)
