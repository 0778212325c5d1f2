"""A ``conftest.py`` for your own project's tests against real Kafka, Pulsar and TubeMQ brokers.

Install ``mqwire[testing]`` (the brokers run as local JVMs: a JDK 17 and Maven on PATH, no Docker). pytest
then loads the plugin ``mqwire.testing.pytest_plugin`` by itself, through its entry point; this file needs no
``pytest_plugins`` line. Every test can ask for these session fixtures:

- ``kafka_broker``: ``.url`` (``kafka://host:port``) and ``.bootstrap_servers``;
- ``pulsar_broker``: ``.url`` (``pulsar://host:port``) and ``.admin_url``;
- ``tubemq_broker``: ``.url`` (the master, ``tubemq://host:port``) and ``.admin_url``;
- ``broker_urls``: all three started side by side; ``kafka3_broker``: a Kafka 3.9.

Each broker starts on first use and stops when the session ends (the first run also fetches the brokers'
jars into ``~/.m2``). ``--brokers=external`` (or ``MQWIRE_BROKERS=external``) uses brokers that already run,
from ``MQWIRE_KAFKA_URL``, ``MQWIRE_PULSAR_URL``, ``MQWIRE_PULSAR_ADMIN_URL``, ``MQWIRE_TUBEMQ_URL`` and
``MQWIRE_TUBEMQ_ADMIN_URL``.

Kafka and Pulsar create a topic when it is first used. TubeMQ topics are deployed while its broker starts;
list them in your ``pyproject.toml`` (the first one is the ``tubemq_topic`` fixture below)::

    [tool.pytest.ini_options]
    mqwire_tubemq_topics = "orders:1"

Copy this file into your tests folder as ``conftest.py`` and adapt the fixtures. A test then reads::

    import asyncio
    import kafkawire

    def test_orders_reach_kafka(kafka_broker, topic):
        async def main() -> bytes | None:
            async with kafkawire.connect(kafka_broker.url) as client:
                async with client.producer(topic) as producer:
                    await producer.send(b"order-1", key=b"k")
                async with client.consumer(topic, group="test", start="earliest") as consumer:
                    return (await consumer.receive(timeout=30)).value

        assert asyncio.run(main()) == b"order-1"

(With pytest-asyncio or anyio's pytest plugin installed, the tests can be ``async def`` instead.)
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def topic() -> str:
    """A fresh Kafka or Pulsar topic name per test, so that no test reads another one's messages."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tubemq_topic(pytestconfig: pytest.Config) -> str:
    """The first TubeMQ topic of the ``mqwire_tubemq_topics`` ini value (TubeMQ topics must be deployed)."""
    topics = [entry.split(":")[0].strip() for entry in str(pytestconfig.getini("mqwire_tubemq_topics")).split(",")]
    if not topics[0]:
        pytest.fail("list your TubeMQ topics in the mqwire_tubemq_topics ini value", pytrace=False)
    return topics[0]


@pytest.fixture
def group() -> str:
    """A fresh consumer group (or Pulsar subscription) name per test, starting from no committed position."""
    return f"test-{uuid.uuid4().hex[:12]}"
