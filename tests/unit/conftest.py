"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mqwire.common import blocking_enqueue
from mqwire.common.blocking import Bridge


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    """A blocking bridge (its loop thread running) for one test, stopped after it."""
    made = Bridge("test-bridge")
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture(params=["compiled", "python"])
def enqueue_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Blocking producers and queues made in the test take this way of their per-record steps: the compiled
    ``mqwire.common._enqueue_speedups`` (skipped where it is not in use) or the Python code."""
    if request.param == "compiled":
        if not blocking_enqueue.COMPILED:
            pytest.skip("the compiled _enqueue_speedups is not in use (MQWIRE_PURE_PYTHON or no build)")
    else:
        monkeypatch.setattr(blocking_enqueue, "_speedups", None)
    return str(request.param)
