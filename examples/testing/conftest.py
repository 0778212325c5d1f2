"""A ``conftest.py`` for your own tests against real Kafka, Pulsar and TubeMQ brokers, run either way:

- **local JVMs** (the default, no Docker): ``pytest``. Needs a JDK 17 and Maven on PATH; the first run fetches
  the brokers' jars into ``~/.m2``. Kafka is ready about 5 s after the first test asks for it, Pulsar about
  15 s, TubeMQ (master and broker) about 40 s; they start side by side.
- **containers** (Docker): ``pytest --brokers=testcontainers`` (or ``MQWIRE_BROKERS=testcontainers``, or
  ``addopts = "--brokers=testcontainers"`` in your pytest settings). The images are built once, here, from the
  same jars, with no image registry: ``python -m mqwire.testing images build`` (about 2 minutes the first
  time, a few seconds when nothing changed; it needs a JDK, Maven and, for the base image, root with
  ``debootstrap``). Each broker then runs in a container with its ports published on 127.0.0.1 only, ready in
  about the same time as the local JVM, and every container is removed when the session ends.

Install ``mqwire[testing]``: pytest loads the plugin ``mqwire.testing.pytest_plugin`` by itself, so this file
needs no ``pytest_plugins`` line. The fixtures are the same both ways: ``kafka_broker``, ``pulsar_broker``,
``tubemq_broker`` (each with a ``.url``), ``broker_urls`` (all three), ``kafka3_broker`` (Kafka 3.9) and
``schema_registry``. TubeMQ topics are deployed while its broker starts: list them in the
``mqwire_tubemq_topics`` ini value (this folder's ``pytest.ini``); the first is the ``tubemq_topic`` fixture.
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def topic() -> str:
    """A fresh Kafka or Pulsar topic name per test, so that no test reads another one's messages."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def group() -> str:
    """A fresh consumer group name per test, starting from no committed position."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tubemq_topic(pytestconfig: pytest.Config) -> str:
    """The first TubeMQ topic of the ``mqwire_tubemq_topics`` ini value (TubeMQ topics must be deployed)."""
    topics = [entry.split(":")[0].strip() for entry in str(pytestconfig.getini("mqwire_tubemq_topics")).split(",")]
    if not topics[0]:
        pytest.fail("list your TubeMQ topics in the mqwire_tubemq_topics ini value", pytrace=False)
    return topics[0]
