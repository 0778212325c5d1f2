"""Seeking a kafkawire consumer by time (ListOffsets with a timestamp), on both broker lines."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

BASE = 1_700_000_000_000


@pytest.fixture(scope="module", params=["kafka-4.3", "kafka-3.9"])
def broker(request: pytest.FixtureRequest) -> KafkaBroker:
    name = "kafka_broker" if request.param == "kafka-4.3" else "kafka3_broker"
    found: KafkaBroker = request.getfixturevalue(name)
    return found


async def test_seek_to_timestamp_and_offsets_for_times(broker: KafkaBroker) -> None:
    topic = f"kw-time-{uuid.uuid4().hex[:8]}"
    tps = [TopicPartition(topic, p) for p in range(2)]
    async with kafkawire.connect(broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2)
        async with client.producer(topic) as producer:
            # Record i of each partition is stamped BASE + i seconds.
            for i in range(20):
                for tp in tps:
                    await producer.enqueue(b"%d" % i, partition=tp.partition, timestamp_ms=BASE + i * 1000)
            await producer.flush()
        async with client.consumer(topic, partitions=tps, start="earliest") as consumer:
            found = await consumer.offsets_for_times({tps[0]: BASE + 7_500, tps[1]: BASE + 60_000})
            assert found[tps[0]] is not None and found[tps[0]].offset == 8
            assert found[tps[0]].timestamp == BASE + 8_000
            assert found[tps[1]] is None  # nothing that late
            await consumer.seek_to_timestamp(BASE + 15_000)
            got: list[kafkawire.Message] = []
            async with asyncio.timeout(30):
                while len(got) < 10:
                    got.extend(await consumer.getmany(timeout_ms=1000))
            assert sorted((m.partition, int(m.value or b"")) for m in got) == sorted(
                (tp.partition, i) for tp in tps for i in range(15, 20)
            )
            assert all(m.timestamp >= BASE + 15_000 for m in got)
            with pytest.raises(ValueError):
                await consumer.offsets_for_times({tps[0]: -5})
