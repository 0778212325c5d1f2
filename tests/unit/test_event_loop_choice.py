"""The loop a run asks for is the loop its tests get: a uvloop run that quietly ran on asyncio would prove
nothing."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import chosen_loop


async def test_the_tests_run_on_the_chosen_loop(request: pytest.FixtureRequest) -> None:
    loop = asyncio.get_running_loop()
    choice = chosen_loop(request.config)
    if choice == "both":
        # The test's id names the loop it was given.
        choice = "uvloop" if "uvloop" in request.node.name else "asyncio"
        assert request.node.name.endswith(f"[{choice}]"), request.node.name
    if choice == "uvloop":
        assert type(loop).__module__.startswith("uvloop"), type(loop)
    else:
        assert isinstance(loop, asyncio.BaseEventLoop) and not type(loop).__module__.startswith("uvloop")
