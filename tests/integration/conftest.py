"""Fixtures shared by the integration modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.crash import OwnBroker

# The secured TubeMQ's topics: the signed-client tests' and the Spark data source's.
SECURED_TUBEMQ_TOPICS = {"signed": 2, "sparksigned": 2}


@pytest.fixture(scope="session")
def secured_tubemq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    """A TubeMQ of its own whose master requires signed consumer registrations and whose master and broker also
    listen with TLS (client certificates required): started once for every module that needs it (~40 s)."""
    state = tmp_path_factory.mktemp("secured-tubemq") / "state"
    topics = [option for name, partitions in SECURED_TUBEMQ_TOPICS.items() for option in
              ("--tubemq-topic", f"{name}:{partitions}")]
    broker = OwnBroker("tubemq", state, *topics, "--tubemq-authentication", "--tubemq-tls")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
