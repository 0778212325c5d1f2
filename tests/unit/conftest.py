"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mqwire.common.blocking import Bridge


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    """A blocking bridge (its loop thread running) for one test, stopped after it."""
    made = Bridge("test-bridge")
    try:
        yield made
    finally:
        made.stop()
