"""One round trip per client, the same on the compiled speedups and on the pure-Python fallback (the runtime
matrix runs this module with ``MQWIRE_PURE_PYTHON=1``): a few hundred records over several partitions, with
keys, headers and every codec the protocol has, produced in batches and consumed back, every record checked.
Kafka's also carries a null value in every codec and checks each partition's order; Pulsar's also carries a
message larger than a batch in every codec, batched and not, and checks each partition's order.

TubeMQ's protocol has no compression, so its round trip has none; its topic is deployed while the broker
starts (``ROUND_TRIP_TUBEMQ_TOPICS`` in tests/matrix.py) or, if missing, here (~30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from typing import Any

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from kafkawire.partitioner import partition_for_key_py
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.tubemq import create_topics

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_CODEC = 80
KAFKA_CODECS = (None, "gzip", "snappy", "lz4", "zstd")
PULSAR_CODECS = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")
TUBEMQ_TOPIC = "roundtrip_runtime"
TUBEMQ_COUNT = 300
# Above the 128 KiB a Pulsar batch holds, and compressible: a batch of its own, compressed.
LARGE = bytes(range(256)) * 4000

Record = tuple[bytes | None, bytes | None, dict[str, bytes]]


def records(run: str, first: int, count: int, *, text_headers: bool = False) -> list[Record]:
    """``count`` records of this run: keys (some None), values of several sizes (some empty), headers (binary
    values unless ``text_headers``: Pulsar properties and TubeMQ attributes are text)."""
    out: list[Record] = []
    for i in range(first, first + count):
        key = None if i % 7 == 0 else b"key-%d" % (i % 11)
        value = b"" if i % 13 == 0 else (b"%s-%d|" % (run.encode(), i)) * (1 + i % 9)
        extra = b"x%d" % (i % 256) if text_headers else bytes([i % 256, 0, 255])
        headers = {} if i % 5 == 0 else {"run": run.encode(), "index": b"%d" % i, "extra": extra}
        out.append((key, value, headers))
    return out


def counted(items: list[Record]) -> Counter[str]:
    """Records as a multiset (values and headers compared exactly)."""
    return Counter(repr((k, v, sorted(h.items()))) for k, v, h in items)


def in_partition_order(positions: list[tuple[int, int]]) -> bool:
    """Whether (partition, offset) pairs, in the order received, go forward within each partition."""
    last: dict[int, int] = {}
    for partition, offset in positions:
        if offset <= last.get(partition, -1):
            return False
        last[partition] = offset
    return True


def keyed_partitions(pairs: list[tuple[bytes | None, int]]) -> dict[bytes, set[int]]:
    """The partitions each key's records landed in."""
    seen: dict[bytes, set[int]] = {}
    for key, partition in pairs:
        if key is not None:
            seen.setdefault(key, set()).add(partition)
    return seen


async def test_kafka_round_trip(kafka_broker: KafkaBroker) -> None:
    run = secrets.token_hex(4)
    topic = f"roundtrip-{run}"
    sent: list[Record] = []
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=PARTITIONS)
        receipts: list[Any] = []
        for n, codec in enumerate(KAFKA_CODECS):
            # A null value (a tombstone) with an empty header value, in every codec's batches.
            batch = [*records(run, n * PER_CODEC, PER_CODEC), (b"null-%d" % n, None, {"n": b""})]
            async with client.producer(topic, compression=codec, linger_ms=5) as producer:
                futures = [await producer.enqueue(v, key=k, headers=h) for k, v, h in batch]
                receipts += await asyncio.gather(*futures)
            sent += batch
        got: list[Any] = []
        async with client.consumer(topic, group=f"roundtrip-{run}", start="earliest") as consumer:
            async with asyncio.timeout(60):
                while len(got) < len(sent):
                    got += await consumer.getmany(timeout=1)
            got += await consumer.getmany(timeout=0.5)
    assert len(got) == len(sent)
    assert counted([(m.key, m.value, m.headers) for m in got]) == counted(sent)
    assert len({(r.partition, r.offset) for r in receipts}) == len(sent)
    assert in_partition_order([(m.partition, m.offset) for m in got])
    by_position = {(m.partition, m.offset): m for m in got}
    for (key, value, headers), receipt in zip(sent, receipts, strict=True):
        message = by_position[(receipt.partition, receipt.offset)]
        assert (message.key, message.value, message.headers) == (key, value, headers)
        assert message.timestamp == receipt.timestamp
    # Keyed records go where Java's partitioner (written here in Python) sends them.
    for (key, _, _), receipt in zip(sent, receipts, strict=True):
        if key is not None:
            assert receipt.partition == partition_for_key_py(key, PARTITIONS)
    assert {m.partition for m in got} == set(range(PARTITIONS))


async def test_pulsar_round_trip(pulsar_broker: PulsarBroker) -> None:
    run = secrets.token_hex(4)
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, f"roundtrip-{run}", PARTITIONS)
    sent: list[Record] = []
    receipts: list[Any] = []
    got: list[Any] = []
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group=f"roundtrip-{run}", start="earliest") as consumer,
    ):
        for n, codec in enumerate(PULSAR_CODECS):
            # A large message in every codec: after the small ones with batching on, then with batching off.
            batch = [*records(run, n * PER_CODEC, PER_CODEC, text_headers=True), (b"large-batched-%d" % n, LARGE, {})]
            async with client.producer(topic, compression_type=codec, batching_max_publish_delay_ms=5) as producer:
                futures = [await producer.enqueue(v, key=k, headers=h) for k, v, h in batch]
                await producer.flush()
                receipts += await asyncio.gather(*futures)
            unbatched: Record = (b"large-unbatched-%d" % n, LARGE, {})
            async with client.producer(topic, compression_type=codec, batching_enabled=False) as producer:
                receipts.append(await producer.send(LARGE, key=unbatched[0]))
            sent += [*batch, unbatched]
        # Until every record came or none came for 30 s; the comparison below then names what is missing.
        with contextlib.suppress(TimeoutError):
            while len(got) < len(sent):
                message = await consumer.receive(timeout=30)
                got.append(message)
                await consumer.ack(message)
        with pytest.raises(TimeoutError):
            extra = await consumer.receive(timeout=0.5)
            pytest.fail(f"a message more than was sent: {extra!r}")
    missing = counted(sent) - counted([(m.key, m.value, m.headers) for m in got])
    assert not missing, f"{len(got)} of {len(sent)} came; missing: {[entry[:200] for entry in sorted(missing)[:5]]}"
    assert counted([(m.key, m.value, m.headers) for m in got]) == counted(sent)
    # Each partition hands its messages out in the order they were stored.
    for partition in range(PARTITIONS):
        stored = [r for r in receipts if r.partition == partition]
        assert [m.message_id for m in got if m.partition == partition] == stored, f"partition {partition}"
    keyed = keyed_partitions([(m.key, m.partition) for m in got])
    assert all(len(partitions) == 1 for partitions in keyed.values()), keyed
    assert {m.partition for m in got} == set(range(PARTITIONS))


async def test_tubemq_round_trip(tubemq_broker: TubeMQBroker) -> None:
    # Returns at once when the topic was deployed with the broker.
    await asyncio.to_thread(create_topics, tubemq_broker, {TUBEMQ_TOPIC: PARTITIONS})
    run = secrets.token_hex(4)
    # The topic outlives the test: this run's records all carry its id in a header and are the ones counted.
    # TubeMQ refuses empty values.
    sent = [(k, v or b"-", {**h, "run": run.encode()}) for k, v, h in records(run, 0, TUBEMQ_COUNT, text_headers=True)]
    got: list[Any] = []
    async with (
        tubemqwire.connect(tubemq_broker.url) as client,
        client.consumer(TUBEMQ_TOPIC, group=f"roundtrip_{run}", start="earliest") as consumer,
    ):
        async with client.producer(TUBEMQ_TOPIC) as producer:
            futures = [await producer.enqueue(v, key=k, headers=h) for k, v, h in sent]
            await producer.flush()
            receipts = await asyncio.gather(*futures)
        deadline = time.monotonic() + 90
        while len(got) < len(sent) and time.monotonic() < deadline:
            for message in await consumer.getmany(timeout=1):
                await consumer.ack(message)
                if message.headers.get("run") == run.encode():
                    got.append(message)
    assert counted([(m.key, m.value, m.headers) for m in got]) == counted(sent)
    assert {r.partition for r in receipts} == set(range(PARTITIONS))
    keyed = keyed_partitions([(m.key, m.partition) for m in got])
    assert all(len(partitions) == 1 for partitions in keyed.values()), keyed
