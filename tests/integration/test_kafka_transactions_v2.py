"""Transaction version 2 (KIP-890 part 2) on the wire: Kafka 4.3 finalizes it, Kafka 3.9 does not.

Every request kafkawire sends is recorded (API key and version) by wrapping the connection's request and
send; the records committed under version 2 are then read by the Java client at read_committed.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kafkawire
from kafkawire import TopicPartition
from kafkawire.connection import KafkaConnection
from kafkawire.handshake import kafka_handshake
from mqwire.testing import classpath
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.java import find_java

pytestmark = pytest.mark.integration

PRODUCE, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 0, 24, 25, 26, 28
JAVA_SOURCE = Path(__file__).with_name("java") / "ReadCommitted.java"


def unique(label: str) -> str:
    return f"kw-txn2-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """(API key, version) of every request kafkawire's connections send during the test."""
    sent: list[tuple[int, int]] = []
    request, send = KafkaConnection.request, KafkaConnection.send

    async def recorded_request(self: KafkaConnection, body: Any, **kwargs: Any) -> Any:
        sent.append((body.API_KEY, kwargs.get("version") or self.version_for(body.API_KEY)))
        return await request(self, body, **kwargs)

    async def recorded_send(self: KafkaConnection, body: Any, **kwargs: Any) -> None:
        sent.append((body.API_KEY, kwargs.get("version") or self.version_for(body.API_KEY)))
        await send(self, body, **kwargs)

    monkeypatch.setattr(KafkaConnection, "request", recorded_request)
    monkeypatch.setattr(KafkaConnection, "send", recorded_send)
    yield sent


def versions(sent: list[tuple[int, int]], api_key: int) -> list[int]:
    return [version for key, version in sent if key == api_key]


async def committed_offset(client: kafkawire.Client, group: str, tp: TopicPartition) -> int | None:
    """The group's offset for ``tp`` once the transaction's markers made it visible (None if never in 10 s)."""
    async with client.admin() as admin:
        for _ in range(50):
            offset = (await admin.list_consumer_group_offsets(group, [tp]))[tp]
            if offset is not None:
                return offset
            await asyncio.sleep(0.2)
    return None


def java_read_committed(bootstrap: str, topic: str, expect: int) -> list[str]:
    """The values the Java client reads at read_committed (the source file run by the JDK's launcher)."""
    java = find_java("kafka").executable
    done = subprocess.run(
        [java, "-Xmx256m", "-cp", classpath.classpath("kafka"), str(JAVA_SOURCE), bootstrap, topic, str(expect)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[-1:] == ["done"], done.stderr[-2000:]
    return lines[:-1]


async def test_version_2_adds_partitions_and_offsets_implicitly_and_java_reads_only_the_committed(
    kafka_broker: KafkaBroker, wire: list[tuple[int, int]]
) -> None:
    features = (await kafka_handshake(kafka_broker.url))["finalized_features"]
    assert features.get("transaction.version", 0) >= 2, f"no transaction version 2: {features}"
    topic, source, group = unique("out"), unique("in"), unique("group")
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
            await admin.create_topic(source, partitions=1)
        async with client.producer(topic, transactional_id=unique("tid"), linger_ms=0) as producer:
            start = len(wire)
            async with producer.transaction():
                for i in range(6):
                    await producer.enqueue(b"committed-%d" % i, partition=i % 2)
                await producer.send_offsets_to_transaction({TopicPartition(source, 0): 17}, group)
            await producer.begin_transaction()
            for i in range(6):
                await producer.enqueue(b"aborted-%d" % i, partition=i % 2)
            await producer.flush()  # written already: only the abort hides them
            await producer.abort_transaction()
            await producer.begin_transaction()
            await producer.send(b"committed-last", partition=1)
            await producer.commit_transaction()
            ours = wire[start:]
        offset = await committed_offset(client, group, TopicPartition(source, 0))
    assert ADD_PARTITIONS not in [key for key, _ in ours]
    assert ADD_OFFSETS not in [key for key, _ in ours]
    # A fresh broker may answer "retry" (coordinator loading, concurrent transactions): count ends, not requests.
    assert len(versions(ours, END_TXN)) >= 3 and set(versions(ours, END_TXN)) == {5}
    assert set(versions(ours, TXN_OFFSET_COMMIT)) == {5}
    assert versions(ours, PRODUCE) and min(versions(ours, PRODUCE)) >= 12
    assert offset == 17
    committed = sorted([f"committed-{i}" for i in range(6)] + ["committed-last"])
    read = await asyncio.to_thread(java_read_committed, kafka_broker.bootstrap_servers, topic, len(committed))
    assert sorted(read) == committed


async def test_version_1_on_kafka_3_9_still_adds_partitions_and_offsets_first(
    kafka3_broker: KafkaBroker, wire: list[tuple[int, int]]
) -> None:
    features = (await kafka_handshake(kafka3_broker.url))["finalized_features"]
    assert features.get("transaction.version", 0) < 2, features
    topic, source, group = unique("out3"), unique("in3"), unique("group3")
    async with kafkawire.connect(kafka3_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
            await admin.create_topic(source, partitions=1)
        async with client.producer(topic, transactional_id=unique("tid3"), linger_ms=0) as producer:
            start = len(wire)
            async with producer.transaction():
                for i in range(4):
                    await producer.enqueue(b"committed-%d" % i, partition=i % 2)
                await producer.send_offsets_to_transaction({TopicPartition(source, 0): 3}, group)
            ours = wire[start:]
        offset = await committed_offset(client, group, TopicPartition(source, 0))
    keys = [key for key, _ in ours]
    assert ADD_PARTITIONS in keys and keys.index(ADD_PARTITIONS) < keys.index(PRODUCE)
    assert keys.index(ADD_OFFSETS) < keys.index(TXN_OFFSET_COMMIT)
    assert set(versions(ours, END_TXN)) == {4} and max(versions(ours, PRODUCE)) <= 11
    assert offset == 3
