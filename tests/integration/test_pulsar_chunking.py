"""Chunked messages (larger than the broker's limit) between pulsarwire and the official pulsar-client, both ways."""

from __future__ import annotations

import asyncio
import os
import uuid

import pulsar
import pytest

import pulsarwire
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration

# Above the standalone's 5 MiB maximum message size, so both clients must split it.
BIG = 7 * 1024 * 1024


def unique(prefix: str) -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:12]}"


async def test_chunked_from_ours_read_by_pulsar_client(pulsar_broker: PulsarBroker) -> None:
    topic = unique("chunks-ours")
    big = os.urandom(BIG)
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        consumer = theirs.subscribe(topic, "theirs", initial_position=pulsar.InitialPosition.Earliest)
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.producer(topic, batching_enabled=False, chunking_enabled=True) as producer,
        ):
            await producer.send(big, key=b"big", headers={"h": "v"}, event_time=1_700_000_000_123)
            await producer.send(b"small")
        first = await asyncio.to_thread(consumer.receive, 30_000)
        second = await asyncio.to_thread(consumer.receive, 30_000)
        consumer.acknowledge(first)
        consumer.acknowledge(second)
    finally:
        theirs.close()
    assert first.data() == big
    assert (first.partition_key(), first.properties(), first.event_timestamp()) == ("big", {"h": "v"},
                                                                                   1_700_000_000_123)
    assert second.data() == b"small"


async def test_chunked_from_pulsar_client_read_by_ours(pulsar_broker: PulsarBroker) -> None:
    topic = unique("chunks-theirs")
    big = os.urandom(BIG)
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.consumer(topic, group="ours", start="earliest") as consumer,
        ):
            producer = theirs.create_producer(topic, batching_enabled=False, chunking_enabled=True)
            await asyncio.to_thread(producer.send, big, {"h": "v"}, partition_key="big")
            await asyncio.to_thread(producer.send, b"small")
            first = await consumer.receive(timeout=30)
            second = await consumer.receive(timeout=30)
            await consumer.ack(first)
            await consumer.ack(second)
    finally:
        theirs.close()
    assert (first.value, first.key, first.headers) == (big, b"big", {"h": b"v"})
    assert second.value == b"small"
