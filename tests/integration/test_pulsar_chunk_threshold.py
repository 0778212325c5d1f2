"""``chunk_max_message_size`` is the chunking threshold, as in the Java client: a message above it goes in
chunks even when the broker would take it whole."""

from __future__ import annotations

import os
import uuid

import pytest

import pulsarwire
from mqwire.testing import rest
from mqwire.testing.endpoints import PulsarBroker
from mqwire.testing.pulsar_admin import topic_path

pytestmark = pytest.mark.integration


def published(broker: PulsarBroker, topic: str) -> int:
    """Messages the broker took in on ``topic`` (each chunk counts as one)."""
    reply = rest.get(f"{broker.admin_url}/admin/v2/{topic_path(topic)}/stats")
    assert reply.ok, reply.text()
    return int(reply.json()["msgInCounter"])


async def test_a_message_above_chunk_max_message_size_goes_in_chunks(pulsar_broker: PulsarBroker) -> None:
    topic = f"persistent://public/default/chunk-threshold-{uuid.uuid4().hex[:12]}"
    value = os.urandom(250_000)  # far below the broker's 5 MiB maximum
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="reader", start="earliest") as consumer,
        client.producer(
            topic, batching_enabled=False, chunking_enabled=True, chunk_max_message_size=100_000
        ) as producer,
    ):
        await producer.send(value)
        await producer.send(b"small")
        first = await consumer.receive(timeout=30)
        second = await consumer.receive(timeout=30)
        await consumer.ack(first)
        await consumer.ack(second)
    assert (first.value, second.value) == (value, b"small")
    assert published(pulsar_broker, topic) == 3 + 1  # three chunks of at most 100,000 bytes, then the small one
