"""The Python worker's session: values kept between tasks, reopened when idle too long, closed on failure."""

from __future__ import annotations

from sparkwire.worker_session import WorkerSession


class Value:
    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_a_value_kept_within_its_idle_limit_is_taken_again_and_otherwise_replaced() -> None:
    now = [0.0]
    session = WorkerSession(clock=lambda: now[0])
    opened: list[Value] = []

    async def open_value() -> Value:
        opened.append(Value(len(opened)))
        return opened[-1]

    first = session.run(session.take("k", open_value, idle_limit=10))
    session.keep("k", first)
    now[0] = 9.5
    assert session.run(session.take("k", open_value, idle_limit=10)) is first
    session.keep("k", first)
    other = session.run(session.take("other key", open_value, idle_limit=10))
    assert other is not first and not first.closed
    now[0] = 20.0  # idle for 10.5 s: closed and replaced
    again = session.run(session.take("k", open_value, idle_limit=10))
    assert again is not first and first.closed and not again.closed
    assert len(opened) == 3
    session.close()


def test_a_discarded_value_is_closed_and_not_taken_again() -> None:
    session = WorkerSession()
    opened: list[Value] = []

    async def open_value() -> Value:
        opened.append(Value(len(opened)))
        return opened[-1]

    first = session.run(session.take("k", open_value, idle_limit=60))
    session.run(session.discard(first))
    assert first.closed
    second = session.run(session.take("k", open_value, idle_limit=60))
    assert second is not first


def test_closing_the_session_closes_what_it_kept_and_its_loop_runs_again_after() -> None:
    session = WorkerSession()

    async def open_value() -> Value:
        return Value(0)

    kept = session.run(session.take("k", open_value, idle_limit=60))
    session.keep("k", kept)
    session.close()
    assert kept.closed
    assert session.run(session.take("k", open_value, idle_limit=60)) is not kept
    session.close()
