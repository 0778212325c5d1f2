"""The session's brokers start while the tests that need none run.

A session starts the brokers its tests ask for (through the plugin's fixtures) in threads as soon as its first
test sets up, and runs the tests that need no broker first: the brokers' start-up
(TubeMQ's alone is about 40 s, mostly its master's fixed waits) overlaps them instead of holding up the first
integration test. The order within each group is the collected one. A broker that fails to start fails the tests
that want it, as it would have without this (the provider remembers the failure).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest

from mqwire.testing.errors import BrokerError
from mqwire.testing.providers import Provider
from mqwire.testing.pytest_plugin import FIXTURE_BROKERS


def _is_integration(item: pytest.Item) -> bool:
    return item.get_closest_marker("integration") is not None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_is_integration)  # stable: each group keeps its order


def brokers_wanted(items: list[pytest.Item]) -> list[str]:
    """The brokers the collected tests ask for through the plugin's fixtures, in a stable order."""
    wanted = {broker for item in items for name in getattr(item, "fixturenames", ()) for broker in
              FIXTURE_BROKERS.get(name, ())}
    return sorted(wanted)


@pytest.fixture(scope="session", autouse=True)
def brokers_started_early(request: pytest.FixtureRequest) -> Iterator[None]:
    """Start the brokers the session wants in the background (the first test to need one waits for it); at the
    session's end, wait for those starts before the provider stops the brokers, so that none is left running."""
    wanted = brokers_wanted(request.session.items)
    starts: list[threading.Thread] = []
    if wanted:
        provider: Provider = request.getfixturevalue("mqwire_brokers")
        for broker in wanted:
            starts.append(threading.Thread(target=_start, args=(provider, broker), name=f"early-{broker}", daemon=True))
            starts[-1].start()
    yield
    for thread in starts:
        thread.join()


def _start(provider: Provider, broker: str) -> None:
    # The provider starts each broker once and remembers a failure, which the tests that want it raise.
    with contextlib.suppress(BrokerError, OSError):
        provider.get(broker)
