"""max_poll_interval_ms: when a member counts as no longer polling, and how its next poll brings it back."""

from __future__ import annotations

import asyncio

from kafkawire.group.poll_watch import PollWatch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_overdue_only_after_the_interval_without_a_poll() -> None:
    clock = Clock()
    watch = PollWatch(5.0, clock)
    clock.now += 4.9
    assert not watch.overdue()
    clock.now += 0.2
    assert watch.overdue()


def test_a_poll_restarts_the_interval() -> None:
    clock = Clock()
    watch = PollWatch(5.0, clock)
    clock.now += 4.0
    watch.polls += 1
    assert not watch.overdue()
    clock.now += 4.0
    assert not watch.overdue()
    clock.now += 1.1
    assert watch.overdue()


def test_a_poll_waiting_for_records_is_polling() -> None:
    clock = Clock()
    watch = PollWatch(5.0, clock)
    watch.waiting += 1
    clock.now += 60.0
    assert not watch.overdue()
    watch.waiting -= 1
    clock.now += 4.0
    assert not watch.overdue()
    clock.now += 1.1
    assert watch.overdue()


async def test_after_leaving_the_member_waits_for_the_next_poll() -> None:
    clock = Clock()
    watch = PollWatch(5.0, clock)
    clock.now += 6.0
    assert watch.overdue()
    watch.mark_left()
    waiter = asyncio.create_task(watch.wait_resumed())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    watch.polls += 1
    watch.resume()
    await asyncio.wait_for(waiter, 1.0)
    assert not watch.left
    assert not watch.overdue()  # the interval starts again from the poll that brought it back
