"""A request to a group's coordinator is asked again while the answer says the coordinator moved, is loading
or is not available (as right after a broker starts), until the request timeout; other errors go through."""

from __future__ import annotations

import asyncio

import pytest

from kafkawire import errors
from kafkawire.metadata import BrokerNode
from kafkawire.options import ClientConfig
from kafkawire.session import GROUP_COORDINATOR, Session
from mqwire.common.options import build_config


def session(timeout_ms: int = 2_000) -> Session:
    options = {"retry_backoff_ms": 1, "retry_backoff_max_ms": 5, "request_timeout_ms": timeout_ms}
    return Session("kafka://127.0.0.1:1", build_config(ClientConfig, "connect", options))


def remembered(c: Session, key: str) -> bool:
    return (GROUP_COORDINATOR, key) in c._coordinators


class Answers:
    """An attempt that raises the given errors one after the other, then returns "done"."""

    def __init__(self, *raised: BaseException) -> None:
        self.raised = list(raised)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.raised:
            raise self.raised.pop(0)
        return "done"


@pytest.mark.parametrize(
    ("error", "looked_up_again"),
    [
        (errors.NotCoordinatorError("moved"), True),
        (errors.CoordinatorNotAvailableError("not available"), True),
        (errors.CoordinatorLoadInProgressError("loading"), False),
    ],
)
def test_a_coordinator_error_is_asked_again(error: errors.KafkaError, looked_up_again: bool) -> None:
    c = session()
    forgotten: list[str] = []

    def forget(key: str, key_type: int = GROUP_COORDINATOR) -> None:
        forgotten.append(key)

    c.forget_coordinator = forget  # type: ignore[method-assign]
    attempt = Answers(error, error)
    assert asyncio.run(c.with_coordinator("g", attempt)) == "done"
    assert attempt.calls == 3
    assert forgotten == (["g", "g"] if looked_up_again else [])


def test_a_moved_coordinator_is_forgotten_so_that_the_next_attempt_looks_it_up() -> None:
    c = session()
    c._coordinators[(GROUP_COORDINATOR, "g")] = BrokerNode(1, "127.0.0.1", 1)

    async def attempt() -> str:
        if remembered(c, "g"):
            raise errors.NotCoordinatorError("moved")
        return "asked the new one"

    assert asyncio.run(c.with_coordinator("g", attempt)) == "asked the new one"


def test_other_errors_are_not_retried() -> None:
    attempt = Answers(errors.GroupIdNotFoundError("no such group"))
    with pytest.raises(errors.GroupIdNotFoundError):
        asyncio.run(session().with_coordinator("g", attempt))
    assert attempt.calls == 1


def test_it_gives_up_after_the_request_timeout() -> None:
    attempt = Answers(*[errors.CoordinatorLoadInProgressError("loading")] * 10_000)

    async def timed() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(errors.CoordinatorLoadInProgressError):
            await session(timeout_ms=200).with_coordinator("g", attempt)
        return loop.time() - start

    elapsed = asyncio.run(timed())
    assert elapsed >= 0.2
    # It gave up on its own: answers were left (a client that ignored the timeout would have used them all
    # and got "done"), and it asked more than once before giving up.
    assert 2 < attempt.calls < 10_000 and attempt.raised
