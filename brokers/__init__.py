"""Real Kafka, Pulsar and TubeMQ brokers as local JVMs, for tests and the demo.

``python -m mqwire.testing start|status|stop|kill|create-topic|fetch`` drives them from a shell; the
pytest plugin (``mqwire.testing.pytest_plugin``) provides the ``kafka_broker``, ``kafka3_broker`` (Kafka 3.9),
``pulsar_broker``, ``tubemq_broker`` and ``broker_urls`` fixtures; ``Launcher`` does the same from Python.

Installed with ``pip install 'mqwire[testing]'`` (pytest and cryptography; the brokers need a JDK 17 and Maven,
not Docker). The plugin is registered as a ``pytest11`` entry point, so pytest loads it in any project that has
the distribution installed; ``examples/testing_conftest.py`` shows how a project's own tests use it.
"""

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.errors import BrokerError, BrokerStartError
from mqwire.testing.launcher import BrokerStatus, Launcher

__all__ = [
    "BrokerError",
    "BrokerStartError",
    "BrokerStatus",
    "KafkaBroker",
    "Launcher",
    "PulsarBroker",
    "TubeMQBroker",
]
