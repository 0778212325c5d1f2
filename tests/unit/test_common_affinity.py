"""A client belongs to one process and one event loop: another loop, another thread or a forked child gets a
typed error at the first call, never a hang."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.affinity import Affinity
from mqwire.common.errors import FatalError, ForkedClientError, WrongLoopError

# Nothing listens here: every check under test must fail before a connection is tried.
URLS = {
    "kafka": "kafka://127.0.0.1:9",
    "pulsar": "pulsar://127.0.0.1:9",
    "tubemq": "tubemq://127.0.0.1:9",
}


def make_client(system: str) -> Any:
    if system == "kafka":
        return kafkawire.connect(URLS[system])
    if system == "pulsar":
        return pulsarwire.connect(URLS[system])
    return tubemqwire.connect(URLS[system])


def run_in_thread(work: Callable[[], Coroutine[Any, Any, None]]) -> BaseException | None:
    """Run ``work()`` with ``asyncio.run`` on a thread of its own; what it raised."""
    raised: list[BaseException] = []

    def body() -> None:
        try:
            asyncio.run(work())
        except BaseException as exc:  # handed to the test
            raised.append(exc)

    thread = threading.Thread(target=body, name="other-thread")
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the call on the other thread hung"
    return raised[0] if raised else None


# ------------------------------------------------------------------------------------- Affinity itself
def test_errors_are_fatal_runtime_errors_of_the_shared_hierarchy() -> None:
    for error in (ForkedClientError, WrongLoopError):
        assert issubclass(error, FatalError) and issubclass(error, RuntimeError)
        for package in (kafkawire, pulsarwire, tubemqwire):
            assert getattr(package, error.__name__) is error
            assert error.__name__ in package.__all__


def test_made_outside_a_loop_it_takes_the_loop_of_its_first_use() -> None:
    affinity = Affinity("test client")
    affinity.check()  # no loop yet: nothing to compare

    async def use() -> asyncio.AbstractEventLoop:
        affinity.check()
        return asyncio.get_running_loop()

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(use()) is loop
        assert affinity.loop is loop
        affinity.check()  # a plain call from the loop's thread between two runs of it
        loop.run_until_complete(use())  # the same loop again
    finally:
        loop.close()


def test_a_second_asyncio_run_gets_wrong_loop_error_naming_both_loops() -> None:
    affinity = Affinity("test client")

    async def use() -> None:
        affinity.check()

    asyncio.run(use())
    with pytest.raises(WrongLoopError) as caught:
        asyncio.run(use())
    text = str(caught.value)
    assert "test client belongs to event loop" in text and "(closed)" in text
    assert "used from event loop" in text and "MainThread" in text


def test_made_inside_a_loop_it_belongs_to_that_loop() -> None:
    async def make() -> Affinity:
        return Affinity("test client")

    affinity = asyncio.run(make())

    async def use() -> None:
        affinity.check()

    with pytest.raises(WrongLoopError):
        asyncio.run(use())


def test_another_thread_gets_wrong_loop_error_naming_the_threads() -> None:
    affinity = Affinity("test client")

    async def use() -> None:
        affinity.check()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(use())
        raised = run_in_thread(use)
        assert isinstance(raised, WrongLoopError)
        assert "'MainThread'" in str(raised) and "'other-thread'" in str(raised)
        # A plain call (no loop) from another thread is refused as well.
        plain: list[BaseException] = []
        thread = threading.Thread(target=lambda: _capture(affinity.check, plain))
        thread.start()
        thread.join()
        assert plain and isinstance(plain[0], WrongLoopError) and "no event loop" in str(plain[0])
    finally:
        loop.close()


def _capture(call: Callable[[], None], into: list[BaseException]) -> None:
    try:
        call()
    except BaseException as exc:
        into.append(exc)


def test_from_another_thread_only_work_handed_to_the_owning_loop_goes_through() -> None:
    affinity = Affinity("test client")

    async def use() -> str:
        affinity.check()
        return "done"

    async def main() -> None:
        affinity.check()
        loop = asyncio.get_running_loop()
        # The thread's own loop is refused; the same coroutine handed to the client's loop runs there.
        raised = await asyncio.to_thread(run_in_thread, lambda: _discard(use()))
        assert isinstance(raised, WrongLoopError)
        result = await asyncio.to_thread(lambda: asyncio.run_coroutine_threadsafe(use(), loop).result(10))
        assert result == "done"

    asyncio.run(main())


async def _discard(work: Coroutine[Any, Any, str]) -> None:
    await work


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a platform without fork has nothing to check here")
def test_a_forked_child_gets_forked_client_error_and_the_parent_is_unaffected() -> None:
    async def use(affinity: Affinity) -> None:
        affinity.check()

    loop = asyncio.new_event_loop()
    try:
        affinity = Affinity("test client")
        loop.run_until_complete(use(affinity))
        code = _in_child(lambda: _child_sees_fork(affinity))
        assert code == 0, f"child check failed with code {code}"
        assert not affinity.forked
        loop.run_until_complete(use(affinity))
    finally:
        loop.close()


def _child_sees_fork(affinity: Affinity) -> int:
    if not affinity.forked:
        return 2
    try:
        affinity.check()
    except ForkedClientError as exc:
        if "Connect a new client in the child" not in str(exc):
            return 3
    else:
        return 4
    return 0 if not affinity.may_close() else 5


def _in_child(body: Callable[[], int]) -> int:
    """Fork, run ``body`` in the child (its result is the exit code), and return that code."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


# ------------------------------------------------------------------------------------- the three clients
@pytest.mark.parametrize("system", ["kafka", "pulsar", "tubemq"])
def test_factories_of_a_client_used_on_a_finished_loop_raise(system: str) -> None:
    client = make_client(system)

    async def first() -> Any:
        return client.producer("affinity")

    producer = asyncio.run(first())

    async def second() -> None:
        client.producer("affinity")

    with pytest.raises(WrongLoopError):
        asyncio.run(second())

    async def send() -> None:
        await producer.send(b"v")

    with pytest.raises(WrongLoopError):
        asyncio.run(send())

    async def start() -> None:
        await client.start()

    with pytest.raises(WrongLoopError):
        asyncio.run(start())


@pytest.mark.parametrize("system", ["kafka", "pulsar", "tubemq"])
def test_a_consumer_used_from_another_threads_loop_raises(system: str) -> None:
    client = make_client(system)
    loop = asyncio.new_event_loop()
    try:

        async def make() -> Any:
            return client.consumer("affinity", group="affinity")

        consumer = loop.run_until_complete(make())

        async def receive() -> None:
            await consumer.receive(timeout=0.01)

        assert isinstance(run_in_thread(receive), WrongLoopError)

        async def close() -> None:
            await client.close()

        assert isinstance(run_in_thread(close), WrongLoopError)
    finally:
        loop.run_until_complete(client.close())
        loop.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a platform without fork has nothing to check here")
@pytest.mark.parametrize("system", ["kafka", "pulsar", "tubemq"])
def test_a_client_made_before_a_fork_refuses_the_child_and_closes_to_nothing_there(system: str) -> None:
    client = make_client(system)

    def child() -> int:
        async def main() -> int:
            try:
                client.producer("affinity")
            except ForkedClientError:
                pass
            else:
                return 2
            try:
                await client.start()
            except ForkedClientError:
                pass
            else:
                return 3
            await client.close()  # leaves the parent's client alone, raises nothing
            return 0 if not client.closed else 4

        return asyncio.run(main())

    assert _in_child(child) == 0

    async def parent() -> None:
        client.producer("affinity")  # still the parent's to use
        await client.close()

    asyncio.run(parent())
