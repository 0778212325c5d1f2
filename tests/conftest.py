"""The event loop every async test runs on: asyncio's own (default), uvloop's, or ``both`` (each async test
twice, once on each loop, in one session and against the same brokers), chosen with ``--loop`` or
``MQWIRE_TEST_LOOP``. CI runs the suite with ``both``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

import pytest

pytest_plugins = [
    "mqwire.testing.pytest_plugin",
    "mqwire.testing.cluster_fixtures",
    "tests.secret_scan",
    "tests.early_start",
]

LOOPS = ("asyncio", "uvloop")
CHOICES = (*LOOPS, "both")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--loop",
        choices=CHOICES,
        default=None,
        help="the event loop the async tests run on: asyncio (default), uvloop, or both (each async test on "
        "each loop); also MQWIRE_TEST_LOOP",
    )


def chosen_loop(config: pytest.Config) -> str:
    """The loop choice of this run: a loop's name, or ``both``."""
    name = config.getoption("--loop") or os.environ.get("MQWIRE_TEST_LOOP") or "asyncio"
    if name not in CHOICES:
        raise pytest.UsageError(f"MQWIRE_TEST_LOOP={name!r}: choose from {', '.join(CHOICES)}")
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
    choice = chosen_loop(config)
    names = LOOPS if choice == "both" else (choice,)
    if choice == "both" and item.get_closest_marker("asyncio_loop_only") is not None:
        names = ("asyncio",)
    return {name: loop_factory(name) for name in names}


def pytest_report_header(config: pytest.Config) -> str:
    return f"event loop: {chosen_loop(config)}"


# With --loop=both, runs against the older Kafka line (3.9) stay on asyncio's loop: what they add is that
# broker's answers, which are the same bytes whatever loop reads them; the same tests against Kafka 4.3 run on
# both loops. They are deselected, so the summary counts them as such.
OLDER_BROKER_PARAMS = frozenset({"kafka-3.9", "kafka3"})


# With --loop=both, a test marked loop_per_case("fault") runs each fault on one loop, alternating (the faults
# of a proxy between client and broker: what each adds is how the client's reconnection meets that fault, and
# both loops still meet faults of each kind across the three systems).


def _other_loops_case(item: pytest.Item, on_uvloop: bool) -> bool:
    """Whether ``item`` is a case that a loop_per_case marker gives to the other loop."""
    marker = item.get_closest_marker("loop_per_case")
    callspec = getattr(item, "callspec", None)
    if marker is None or callspec is None:
        return False
    name = marker.args[0]
    cases = next(len(m.args[1]) for m in item.iter_markers("parametrize") if m.args[0] == name)
    # The case's place in its parametrize list (pytest counts on across the loops' parametrization).
    place = callspec.indices[name] % cases
    return (LOOPS[place % len(LOOPS)] == "uvloop") is not on_uvloop


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if chosen_loop(config) != "both":
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        older = callspec is not None and any(
            isinstance(value, str) and value in OLDER_BROKER_PARAMS for value in callspec.params.values()
        )
        on_uvloop = callspec is not None and "uvloop" in callspec.id.split("-")
        (dropped if (older and on_uvloop) or _other_loops_case(item, on_uvloop) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
