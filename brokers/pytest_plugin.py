"""pytest fixtures for real brokers: ``kafka_broker``, ``pulsar_broker``, ``tubemq_broker``, ``broker_urls``,
and ``kafka3_broker`` (Kafka 3.9, started only by the tests that ask for it); ``schema_registry``, a schema
registry (Apicurio Registry, started by the tests that ask for it).

Installed with ``mqwire[testing]``, this plugin is registered through the ``pytest11`` entry point, so pytest
loads it in any project without a conftest line (``examples/testing_conftest.py`` shows a conftest that uses
it). TubeMQ topics are deployed when the broker starts: list them in the ``mqwire_tubemq_topics`` ini value;
``tubemq_fresh_topics`` hands out fresh ones from a stock of spares deployed at start as well
(``mqwire_tubemq_spare_topics``), since a topic added later waits ~30 s before producers may use it.

Choose where they come from with ``--brokers=local|testcontainers|external`` or ``MQWIRE_BROKERS``
(default ``local``: JVMs started here on first use and stopped when the session ends). A broker
that cannot be had fails the tests that need it; it is never a skip.
"""

from __future__ import annotations

import os
import signal
import types
from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import pytest

from mqwire.testing.endpoints import (
    Endpoint,
    KafkaBroker,
    PulsarBroker,
    SchemaRegistry,
    TubeMQBroker,
    split_url,
    summary,
)
from mqwire.testing.errors import BrokerError
from mqwire.testing.paths import DEFAULT_BROKERS
from mqwire.testing.procs import log_tails
from mqwire.testing.providers import PROVIDERS, Provider, make_provider, parse_topics
from mqwire.testing.tubemq_spares import FreshTopics, parse_spares, spare_topic_names

E = TypeVar("E", KafkaBroker, PulsarBroker, TubeMQBroker, SchemaRegistry)

_provider_key = pytest.StashKey[Provider]()
_spares_key = pytest.StashKey[dict[str, int]]()
# The fixtures that start brokers, and the brokers each starts.
FIXTURE_BROKERS: dict[str, tuple[str, ...]] = {
    "kafka_broker": ("kafka",),
    "pulsar_broker": ("pulsar",),
    "tubemq_broker": ("tubemq",),
    "tubemq_fresh_topics": ("tubemq",),
    "kafka3_broker": ("kafka3",),
    "broker_urls": DEFAULT_BROKERS,
}
LOG_TAIL_LINES = 60


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mqwire-brokers", "real brokers for integration tests")
    group.addoption(
        "--brokers",
        choices=PROVIDERS,
        default=None,
        help="where brokers come from: local JVMs (default), testcontainers, or external "
        "(MQWIRE_*_URL variables); also MQWIRE_BROKERS",
    )
    group.addoption(
        "--tubemq-topics",
        default=None,
        metavar="NAME[:PARTITIONS],...",
        help="TubeMQ topics deployed while the local TubeMQ starts (each later one costs ~30 s); "
        "also MQWIRE_TUBEMQ_TOPICS or the mqwire_tubemq_topics ini value",
    )
    parser.addini(
        "mqwire_tubemq_topics",
        "TubeMQ topics (NAME[:PARTITIONS],...) deployed while the local TubeMQ starts",
        default="",
    )
    parser.addini(
        "mqwire_tubemq_spare_topics",
        "spare TubeMQ topics (PARTITIONS:COUNT,...) deployed while the local TubeMQ starts, handed out by "
        "the tubemq_fresh_topics fixture",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs the real brokers started by brokers/")


def _provider_name(config: pytest.Config) -> str:
    name = config.getoption("--brokers") or os.environ.get("MQWIRE_BROKERS") or "local"
    if name not in PROVIDERS:
        raise pytest.UsageError(f"MQWIRE_BROKERS={name!r}: choose from {', '.join(PROVIDERS)}")
    return str(name)


def _on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    # Turn SIGTERM into an ordinary exit so atexit handlers stop the JVMs.
    raise SystemExit(128 + signum)


@pytest.fixture(scope="session")
def mqwire_brokers(request: pytest.FixtureRequest) -> Iterator[Provider]:
    """The session's broker provider (``.get("kafka")`` etc.); closed at the end of the session."""
    config = request.config
    topics = parse_topics(
        config.getoption("--tubemq-topics")
        or os.environ.get("MQWIRE_TUBEMQ_TOPICS")
        or str(config.getini("mqwire_tubemq_topics"))
    )
    try:
        spares = spare_topic_names(parse_spares(str(config.getini("mqwire_tubemq_spare_topics"))))
    except ValueError as err:
        raise pytest.UsageError(f"mqwire_tubemq_spare_topics: {err}") from None
    config.stash[_spares_key] = spares
    topics = {**spares, **topics}
    provider = make_provider(_provider_name(config), topics)
    config.stash[_provider_key] = provider
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield provider
    finally:
        try:
            provider.close()
        finally:
            if previous is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _get(request: pytest.FixtureRequest, provider: Provider, name: str, kind: type[E]) -> E:
    try:
        endpoint = provider.get(name)
    except (BrokerError, OSError) as err:
        pytest.fail(f"{name} broker unavailable ({provider.name} provider): {err}", pytrace=False)
    if not isinstance(endpoint, kind):
        pytest.fail(f"{name}: provider returned {type(endpoint).__name__}", pytrace=False)
    return endpoint


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest, mqwire_brokers: Provider) -> KafkaBroker:
    """A Kafka broker (``.url``, ``.bootstrap_servers``), started once per session."""
    return _get(request, mqwire_brokers, "kafka", KafkaBroker)


@pytest.fixture(scope="session")
def kafka3_broker(request: pytest.FixtureRequest, mqwire_brokers: Provider) -> KafkaBroker:
    """A Kafka 3.9 broker, for checking version negotiation against an older release."""
    return _get(request, mqwire_brokers, "kafka3", KafkaBroker)


@pytest.fixture(scope="session")
def pulsar_broker(request: pytest.FixtureRequest, mqwire_brokers: Provider) -> PulsarBroker:
    """A Pulsar standalone (``.url``, ``.admin_url``), started once per session."""
    return _get(request, mqwire_brokers, "pulsar", PulsarBroker)


@pytest.fixture(scope="session")
def tubemq_broker(request: pytest.FixtureRequest, mqwire_brokers: Provider) -> TubeMQBroker:
    """A TubeMQ master and broker (``.url`` of the master, ``.admin_url``), started once per session."""
    return _get(request, mqwire_brokers, "tubemq", TubeMQBroker)


@pytest.fixture(scope="session")
def tubemq_fresh_topics(request: pytest.FixtureRequest, tubemq_broker: TubeMQBroker) -> FreshTopics:
    """Fresh TubeMQ topics on ``tubemq_broker``: ``.take({"role": partitions, ...})`` gives role: topic name,
    from the spares deployed at start while they last (at once), else deployed then (~30 s)."""
    spares: dict[str, int] = request.config.stash.get(_spares_key, {})
    return FreshTopics(tubemq_broker, spares)


@pytest.fixture(scope="session")
def schema_registry(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchemaRegistry]:
    """A schema registry (``.url``, the base of its REST API), whatever the broker provider.

    ``MQWIRE_SCHEMA_REGISTRY_URL`` names one that runs; otherwise Apicurio Registry is started here (a JVM,
    ready in about 20 s; it needs no broker; in a container with ``--brokers=testcontainers``) and stopped
    when the session ends. One that cannot start fails the tests that need it.
    """
    url = os.environ.get("MQWIRE_SCHEMA_REGISTRY_URL")
    if url:
        at = split_url(url, 8081)
        yield SchemaRegistry(at.host, at.port, url.rstrip("/"))
        return
    if _provider_name(request.config) == "testcontainers":
        provider: Provider = request.getfixturevalue("mqwire_brokers")
        yield _get(request, provider, "registry", SchemaRegistry)
        return
    from mqwire.testing.launcher import Launcher

    root = tmp_path_factory.mktemp("schema-registry")
    launcher = Launcher(state_dir=root / "state", work_root=root, owned=True)
    try:
        status = launcher.start("registry")
    except (BrokerError, OSError) as err:
        pytest.fail(f"schema registry unavailable: {err}", pytrace=False)
    try:
        if not isinstance(status.endpoint, SchemaRegistry):
            pytest.fail(f"schema registry: the launcher returned {type(status.endpoint).__name__}", pytrace=False)
        yield status.endpoint
    finally:
        launcher.stop("registry")


@pytest.fixture(scope="session")
def broker_urls(request: pytest.FixtureRequest, mqwire_brokers: Provider) -> dict[str, str]:
    """All three brokers (started side by side), as the URL map ``python -m mqwire.testing status`` prints."""
    names = list(DEFAULT_BROKERS)
    try:
        endpoints: dict[str, Endpoint] = mqwire_brokers.get_many(names)
    except (BrokerError, OSError) as err:
        pytest.fail(f"brokers unavailable ({mqwire_brokers.name} provider): {err}", pytrace=False)
    return {k: str(v) for k, v in summary(endpoints).items()}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed and item.get_closest_marker("integration") is not None:
        provider = item.config.stash.get(_provider_key, None)
        if provider is not None:
            names: list[str] = []
            for fixture in getattr(item, "fixturenames", ()):
                names.extend(n for n in FIXTURE_BROKERS.get(fixture, ()) if n not in names)
            for name in names:
                files = provider.log_files(name)
                if files:
                    report.sections.append((f"{name} broker log tail", log_tails(files, LOG_TAIL_LINES)))
    return report
