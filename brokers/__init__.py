"""Real Kafka, Pulsar and TubeMQ brokers as local JVMs, for tests and the demo.

``python -m brokers start|status|stop|kill|create-topic|fetch`` drives them from a shell; the
pytest plugin (``brokers.pytest_plugin``) provides the ``kafka_broker``, ``kafka3_broker`` (Kafka 3.9),
``pulsar_broker``, ``tubemq_broker`` and ``broker_urls`` fixtures; ``Launcher`` does the same from Python.
"""

from brokers.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from brokers.errors import BrokerError, BrokerStartError
from brokers.launcher import BrokerStatus, Launcher

__all__ = [
    "BrokerError",
    "BrokerStartError",
    "BrokerStatus",
    "KafkaBroker",
    "Launcher",
    "PulsarBroker",
    "TubeMQBroker",
]
