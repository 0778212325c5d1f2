"""The event loop every async test runs on: asyncio's own (default) or uvloop's, chosen with ``--loop`` or
``MQWIRE_TEST_LOOP``. The whole suite runs on either; CI runs the clients' tests on both."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

import pytest

pytest_plugins = ["mqwire.testing.pytest_plugin", "mqwire.testing.cluster_fixtures"]

LOOPS = ("asyncio", "uvloop")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--loop",
        choices=LOOPS,
        default=None,
        help="the event loop the async tests run on (default asyncio; also MQWIRE_TEST_LOOP)",
    )


def chosen_loop(config: pytest.Config) -> str:
    """The name of the loop this run uses."""
    name = config.getoption("--loop") or os.environ.get("MQWIRE_TEST_LOOP") or "asyncio"
    if name not in LOOPS:
        raise pytest.UsageError(f"MQWIRE_TEST_LOOP={name!r}: choose from {', '.join(LOOPS)}")
    return str(name)


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """A function making a new loop of that kind; uvloop missing fails the run (it is never a skip)."""
    if name == "uvloop":
        import uvloop  # only a uvloop run needs it

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    name = chosen_loop(config)
    return {name: loop_factory(name)}


def pytest_report_header(config: pytest.Config) -> str:
    return f"event loop: {chosen_loop(config)}"
