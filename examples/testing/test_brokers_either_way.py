"""Your tests, the same whether the brokers are local JVMs or containers (see conftest.py)."""

from __future__ import annotations

import asyncio
from types import ModuleType

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker


async def _send(module: ModuleType, url: str, topic: str) -> str:
    async with module.connect(url) as client, client.producer(topic) as producer:
        return str((await producer.send(b"order-1", key=b"k")).topic)


def test_orders_reach_kafka_and_come_back(kafka_broker: KafkaBroker, topic: str, group: str) -> None:
    async def main() -> bytes | None:
        async with kafkawire.connect(kafka_broker.url) as client:
            async with client.producer(topic) as producer:
                await producer.send(b"order-1", key=b"k")
            async with client.consumer(topic, group=group, start="earliest") as consumer:
                received: bytes | None = (await consumer.receive(timeout=30)).value
                return received

    assert asyncio.run(main()) == b"order-1"


def test_orders_reach_pulsar(pulsar_broker: PulsarBroker, topic: str) -> None:
    assert asyncio.run(_send(pulsarwire, pulsar_broker.url, topic)).endswith(topic)


def test_orders_reach_tubemq(tubemq_broker: TubeMQBroker, tubemq_topic: str) -> None:
    assert asyncio.run(_send(tubemqwire, tubemq_broker.url, tubemq_topic)) == tubemq_topic
