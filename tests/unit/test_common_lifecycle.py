"""Start once, close once, and no owned task left after close."""

from __future__ import annotations

import asyncio

import pytest

from mqwire.common.errors import ClosedError
from mqwire.common.lifecycle import Lifecycle


async def test_start_runs_once_for_concurrent_callers_and_close_ends_every_task() -> None:
    life = Lifecycle("thing")
    starts = 0

    async def start() -> None:
        nonlocal starts
        starts += 1
        await asyncio.sleep(0.01)
        life.tasks.spawn(asyncio.sleep(3600), name="forever")

    before = asyncio.all_tasks()
    await asyncio.gather(life.start(start), life.start(start), life.start(start))
    assert starts == 1 and life.started and len(life.tasks) == 1
    closes = 0

    async def close() -> None:
        nonlocal closes
        closes += 1

    await asyncio.gather(life.close(close), life.close(close))
    assert closes == 1 and life.closed and len(life.tasks) == 0
    assert asyncio.all_tasks() == before
    with pytest.raises(ClosedError, match="thing is closed"):
        life.check_open()
    with pytest.raises(ClosedError):
        await life.start(start)


async def test_a_failed_start_can_be_retried() -> None:
    life = Lifecycle("thing")
    attempts = 0

    async def start() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("refused")

    with pytest.raises(OSError):
        await life.start(start)
    await life.start(start)
    assert attempts == 2 and life.started
    await life.close()


async def test_close_during_start_cancels_it_and_tasks_spawned_while_closing_end_too() -> None:
    life = Lifecycle("thing")
    gate = asyncio.Event()

    async def start() -> None:
        await gate.wait()

    starting = asyncio.ensure_future(life.start(start))
    await asyncio.sleep(0)

    async def close() -> None:
        life.tasks.spawn(asyncio.sleep(3600))

    await life.close(close)
    assert len(life.tasks) == 0
    with pytest.raises(asyncio.CancelledError):
        await starting


async def test_a_failed_background_task_is_logged_and_an_awaited_one_is_left_to_its_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mqwire.common.lifecycle import OwnedTasks

    tasks = OwnedTasks("thing")

    async def fail(text: str) -> None:
        raise RuntimeError(text)

    background = tasks.spawn(fail("nobody waits for me"), name="background")
    awaited = tasks.spawn(fail("my caller sees me"), name="request", awaited=True)
    with pytest.raises(RuntimeError, match="my caller sees me"):
        await awaited
    await asyncio.gather(background, return_exceptions=True)
    await asyncio.sleep(0)  # the done callbacks run
    failures = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert failures == ["background task thing: background failed"]
    assert len(tasks) == 0
