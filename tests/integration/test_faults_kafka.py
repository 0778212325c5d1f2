"""Kafka killed with SIGKILL and restarted while kafkawire produces and consumes.

What the client promises there: every record whose send was acknowledged is in the log after the restart,
none twice (the idempotent producer), and a group's consumer resumes from the committed offsets.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator

import pytest

import kafkawire
from kafkawire import TopicPartition
from tests.integration.crash import OwnBroker

# What these tests show is recovery from a broker's crash or freeze, through the clients' reconnects; how a connection
# is lost and made again on each event loop is shown on both loops by the fault-proxy tests. They run on asyncio's
# loop only, which keeps CI within its time.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]

PARTITIONS = 3


@pytest.fixture(scope="module")
def module_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    with OwnBroker.for_module("kafka", tmp_path_factory.mktemp("own-kafka") / "state") as broker:
        yield broker


@pytest.fixture
def own_kafka(module_kafka: OwnBroker) -> OwnBroker:
    """The module's own broker, up (each test uses topics and groups of its own on it)."""
    return module_kafka.revived()


async def read_all(url: str, topic: str, timeout: float = 90, partitions: int = PARTITIONS) -> list[bytes]:
    """Every record value of the topic."""
    seen: list[bytes] = []
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            ends = await admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(partitions)})
        total = sum(end.offset for end in ends.values())
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(timeout):
                while len(seen) < total:
                    seen.extend(m.value or b"" for m in await consumer.getmany(timeout_ms=500))
    return seen


async def test_acknowledged_records_survive_a_crash_exactly_once(own_kafka: OwnBroker) -> None:
    topic = "crash-produce"
    async with kafkawire.connect(own_kafka.url, request_timeout_ms=5_000) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=PARTITIONS)
        futures: list[asyncio.Future[kafkawire.RecordMetadata]] = []
        options = {"enable_idempotence": True, "linger_ms": 2, "delivery_timeout_ms": 120_000}
        async with client.producer(topic, **options) as producer:

            stop = asyncio.Event()

            async def produce() -> None:
                # Steady traffic before, during and after the crash, 200 records every 50 ms.
                i = 0
                while not stop.is_set():
                    futures.append(await producer.enqueue(b"%d" % i, key=b"%d" % (i % 97)))
                    i += 1
                    if i % 200 == 0:
                        await asyncio.sleep(0.05)

            producing = asyncio.create_task(produce())
            await asyncio.sleep(2)
            before_crash = len(futures)
            await own_kafka.crash_and_restart(down_seconds=2)
            after_restart = len(futures)
            await asyncio.sleep(2)
            stop.set()
            await producing
            # The crash fell in the middle of the traffic.
            assert 0 < before_crash < after_restart < len(futures)
            outcomes = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 150)
    acknowledged = {i for i, outcome in enumerate(outcomes) if not isinstance(outcome, BaseException)}
    failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    # With retries up to the delivery timeout, a short outage costs nothing.
    assert not failed, f"{len(failed)} sends failed, first: {failed[0]!r}"
    seen = await read_all(own_kafka.url, topic)
    counts = collections.Counter(int(value) for value in seen)
    assert acknowledged <= counts.keys(), f"lost {len(acknowledged - counts.keys())} acknowledged records"
    duplicates = [value for value, n in counts.items() if n > 1]
    assert not duplicates, f"{len(duplicates)} records written twice, e.g. {duplicates[:5]}"


async def test_a_group_resumes_from_its_committed_offsets_after_a_crash(own_kafka: OwnBroker) -> None:
    topic = "crash-consume"
    group = "crash-group"
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    async with kafkawire.connect(own_kafka.url, request_timeout_ms=5_000) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=PARTITIONS)
        async with client.producer(topic) as producer:
            for i in range(3_000):
                await producer.enqueue(b"%d" % i, key=b"%d" % i)
            await producer.flush()
        processed: list[int] = []
        async with client.consumer(
            topic, group=group, partitions=partitions, start="earliest", enable_auto_commit=False
        ) as consumer:
            async with asyncio.timeout(60):
                while len(processed) < 1_000:
                    for message in await consumer.getmany(timeout_ms=500, max_records=100):
                        processed.append(int(message.value or b""))
                        await consumer.ack(message)
            await consumer.commit()
            committed = {tp: await consumer.committed(tp) for tp in partitions}
        await own_kafka.crash_and_restart(down_seconds=2)
        # The same group after the crash: it starts exactly at what was committed and reads the rest.
        async with client.consumer(topic, group=group, partitions=partitions, start="earliest") as consumer:
            async with asyncio.timeout(90):
                first: dict[TopicPartition, int] = {}
                while len(processed) < 3_000:
                    for message in await consumer.getmany(timeout_ms=500):
                        tp = TopicPartition(message.topic, message.partition)
                        first.setdefault(tp, message.offset)
                        processed.append(int(message.value or b""))
    assert any(committed.values())
    for tp, offset in first.items():
        # Nothing committed for a partition: the group starts it at "earliest".
        assert offset == (committed[tp] or 0), f"{tp}: resumed at {offset}, committed {committed[tp]}"
    assert sorted(processed) == list(range(3_000))


async def test_a_stalled_broker_bounds_the_buffer_and_the_waits_then_recovers(own_kafka: OwnBroker) -> None:
    topic = "stall"
    buffer_memory = 256 * 1024
    async with kafkawire.connect(own_kafka.url, request_timeout_ms=2_000) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        async with client.producer(topic, buffer_memory=buffer_memory, max_block_ms=1_500, linger_ms=1) as producer:
            await producer.send(b"before")
            pending: list[asyncio.Future[kafkawire.RecordMetadata]] = []
            with own_kafka.stalled():
                # The buffer fills, then enqueue waits max_block_ms and gives up with a named error.
                with pytest.raises(kafkawire.BufferFullError):
                    async with asyncio.timeout(30):
                        while True:
                            pending.append(await producer.enqueue(b"x" * 1_000))
                assert producer.stats().buffered_bytes <= buffer_memory
                assert 0 < len(pending) <= buffer_memory // 1_000
                # A request to the frozen broker ends at its timeout instead of hanging.
                async with client.admin() as admin:
                    with pytest.raises(kafkawire.RequestTimeoutError):
                        async with asyncio.timeout(30):
                            await admin.describe_cluster()
            # Unfrozen: everything buffered is delivered, and new sends go through.
            async with asyncio.timeout(90):
                await asyncio.gather(*pending)
                await producer.send(b"after")
    seen = await read_all(own_kafka.url, topic, partitions=1)
    assert len(seen) == len(pending) + 2
