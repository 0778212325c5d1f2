"""Fixtures shared by the integration modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.crash import OwnBroker
from tests.integration.early_brokers import EarlyBrokers

# The secured TubeMQ's topics: the signed-client tests' and the Spark data source's.
SECURED_TUBEMQ_TOPICS = {"signed": 2, "sparksigned": 2}
# The topic of the TubeMQ that test_faults_tubemq.py crashes.
CRASHED_TUBEMQ_TOPIC = "crash"


def _secured_tubemq(state: Path) -> OwnBroker:
    topics = [option for name, partitions in SECURED_TUBEMQ_TOPICS.items() for option in
              ("--tubemq-topic", f"{name}:{partitions}")]
    return OwnBroker("tubemq", state, *topics, "--tubemq-authentication", "--tubemq-tls")


def _crashed_tubemq(state: Path) -> OwnBroker:
    return OwnBroker("tubemq", state, "--tubemq-topic", f"{CRASHED_TUBEMQ_TOPIC}:2")


@pytest.fixture(scope="session", autouse=True)
def early_brokers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EarlyBrokers]:
    """The brokers of the tests' own that take long to start, begun in the background when the first integration
    test sets up, for the fixtures below."""
    early = EarlyBrokers(
        {"secured_tubemq": _secured_tubemq, "crashed_tubemq": _crashed_tubemq}, tmp_path_factory.mktemp("early")
    )
    early.begin({name for item in request.session.items for name in getattr(item, "fixturenames", ())})
    try:
        yield early
    finally:
        early.stop_all()


@pytest.fixture(scope="session")
def secured_tubemq(early_brokers: EarlyBrokers) -> OwnBroker:
    """A TubeMQ of its own whose master requires signed consumer registrations and whose master and broker also
    listen with TLS (client certificates required): started once for every module that needs it (~40 s)."""
    return early_brokers.ready("secured_tubemq")


@pytest.fixture
def crashed_tubemq(early_brokers: EarlyBrokers) -> OwnBroker:
    """A TubeMQ of its own for one test to crash (killed and started again); stopped with the session."""
    return early_brokers.ready("crashed_tubemq")
