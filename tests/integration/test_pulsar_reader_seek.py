"""A reader's seek by message id and by publish time, and has_message_available around them."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def read_all(reader: pulsarwire.Reader) -> list[bytes]:
    values = []
    while await reader.has_message_available():
        values.append((await reader.receive(timeout=10)).value)
    return values


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
async def test_reader_seeks_by_id_and_by_time(pulsar_broker: PulsarBroker, batching: bool) -> None:
    topic = unique("reader-seek")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic, batching_enabled=batching) as producer:
            ids = [await producer.send(b"%d" % i) for i in range(5)]
            await asyncio.sleep(0.05)
            boundary = int(time.time() * 1000)
            await asyncio.sleep(0.05)
            ids += [await producer.send(b"%d" % i) for i in range(5, 10)]
        expected = [b"%d" % i for i in range(10)]
        async with client.reader(topic, start="earliest") as reader:
            assert await read_all(reader) == expected
            assert not await reader.has_message_available()
            await reader.seek(ids[3])  # that message is read next
            assert await reader.has_message_available()
            assert await read_all(reader) == expected[3:]
            await reader.seek(boundary)
            assert await reader.has_message_available()
            assert await read_all(reader) == expected[5:]
            await reader.seek(int(time.time() * 1000) + 60_000)  # after every message
            assert not await reader.has_message_available()
            with pytest.raises(ReceiveTimeoutError):
                await reader.receive(timeout=1)
            await reader.seek_to_beginning()
            assert await read_all(reader) == expected
        async with client.reader(topic, start="latest") as reader:
            assert not await reader.has_message_available()
            async with client.producer(topic) as producer:
                await producer.send(b"new")
            assert await reader.has_message_available()
            assert (await reader.receive(timeout=10)).value == b"new"
            assert not await reader.has_message_available()


async def test_reader_of_a_partitioned_topic_seeks_by_time(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, unique("reader-seek-parts"), 3)
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic, batching_enabled=False) as producer:
            for i in range(9):
                await producer.send(b"old-%d" % i)
            await asyncio.sleep(0.05)
            boundary = int(time.time() * 1000)
            await asyncio.sleep(0.05)
            for i in range(9):
                await producer.send(b"new-%d" % i)
        async with client.reader(topic, start="earliest") as reader:
            assert len(await read_all(reader)) == 18
            with pytest.raises(ValueError, match="partitions"):
                await reader.seek(pulsarwire.MessageId(0, 0))
            await reader.seek(boundary)
            assert sorted(await read_all(reader)) == sorted(b"new-%d" % i for i in range(9))
