"""The data pipeline on a Spark standalone cluster (a master and two workers started from the pyspark
package) whose executors have only the packed environment of ``make spark-env``: for each system a batch
read with exact contents, a batch write read back with the client, and a stream stopped and restarted from
its checkpoint, each record exactly once in its parquet sink. The jobs are submitted as docs/spark.md says."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.spark_cluster import SparkCluster
from mqwire.testing.tubemq_spares import FreshTopics
from tests.spark_cluster.conftest import submit

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

JOB = Path(__file__).resolve().parent / "pipeline_job.py"
FIRST, SECOND = 2000, 1000
PARTITIONS = 2


def values(prefix: str, count: int) -> list[bytes]:
    return [b"%s-%d" % (prefix.encode(), i) for i in range(count)]


@dataclass
class System:
    """One system's URL and the topics and client calls the test needs."""

    name: str
    url: str
    source: str
    copy: str
    produce: Callable[[str, list[bytes]], None]
    read_back: Callable[[str, int], list[bytes]]


# --- Kafka
async def _kafka_create(url: str, name: str, partitions: int) -> None:
    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)


async def _kafka_produce(url: str, topic: str, data: list[bytes]) -> None:
    async with kafkawire.connect(url) as client, client.producer(topic) as producer:
        for i, value in enumerate(data):
            await producer.enqueue(value, key=b"k%d" % (i % 7), headers={"i": value.split(b"-")[-1]})
        await producer.flush()


async def _kafka_read(url: str, topic: str, count: int) -> list[bytes]:
    async with kafkawire.connect(url) as client:
        consumer = client.consumer(topic, partitions=list(range(PARTITIONS)), enable_auto_commit=False)
        try:
            await consumer.start()
            for p in range(PARTITIONS):
                consumer.seek((topic, p), 0)
            got: list[bytes] = []
            for _ in range(120):
                got.extend(m.value for m in await consumer.getmany(timeout_ms=500))
                if len(got) >= count:
                    break
            return got
        finally:
            await consumer.close()


def kafka_system(url: str) -> System:
    source, copy = f"swc-{uuid.uuid4().hex[:8]}", f"swc-copy-{uuid.uuid4().hex[:8]}"
    asyncio.run(_kafka_create(url, source, PARTITIONS))
    asyncio.run(_kafka_create(url, copy, PARTITIONS))
    return System(
        "kafka",
        url,
        source,
        copy,
        lambda t, d: asyncio.run(_kafka_produce(url, t, d)),
        lambda t, n: asyncio.run(_kafka_read(url, t, n)),
    )


# --- Pulsar
async def _pulsar_produce(url: str, topic: str, data: list[bytes]) -> None:
    async with pulsarwire.connect(url) as client, client.producer(topic) as producer:
        # Keyed, so both partitions get records: without a key, round robin with batching stays on one
        # partition for 10 ms, which a fast producer can fill with every record.
        futures = [
            await producer.enqueue(v, key=b"k%d" % (i % 7), headers={"i": v.split(b"-")[-1]})
            for i, v in enumerate(data)
        ]
        await producer.flush()
        for future in futures:
            await future


async def _pulsar_read(url: str, topic: str, count: int) -> list[bytes]:
    got: list[bytes] = []
    async with pulsarwire.connect(url) as client, client.reader(topic, start="earliest") as reader:
        while len(got) < count:
            message: Any = await reader.receive(timeout=60)
            if message is None:
                break
            got.append(message.value)
    return got


def pulsar_system(url: str, admin_url: str) -> System:
    run = uuid.uuid4().hex[:8]
    source = pulsar_admin.create_partitioned_topic(admin_url, f"persistent://public/default/swc-{run}", PARTITIONS)
    copy = f"persistent://public/default/swc-copy-{run}"
    return System(
        "pulsar",
        url,
        source,
        copy,
        lambda t, d: asyncio.run(_pulsar_produce(url, t, d)),
        lambda t, n: asyncio.run(_pulsar_read(url, t, n)),
    )


# --- TubeMQ
async def _tubemq_produce(url: str, topic: str, data: list[bytes]) -> None:
    async with tubemqwire.connect(url) as client, client.producer(topic) as producer:
        futures = [await producer.enqueue(v, headers={"i": v.split(b"-")[-1].decode()}) for v in data]
        await producer.flush()
        for future in futures:
            await future


async def _tubemq_read(url: str, topic: str, count: int) -> list[bytes]:
    got: list[bytes] = []
    async with (
        tubemqwire.connect(url) as client,
        client.consumer(topic, group=f"swc_{secrets.token_hex(4)}", start="earliest") as consumer,
    ):
        while len(got) < count:
            message = await consumer.getone(timeout=60)
            got.append(message.value)
            await consumer.ack(message)
    return got


def tubemq_system(broker: TubeMQBroker, fresh_topics: FreshTopics) -> System:
    topics = fresh_topics.take({"source": PARTITIONS, "copy": PARTITIONS})
    source, copy = topics["source"], topics["copy"]
    return System(
        "tubemq",
        broker.url,
        source,
        copy,
        lambda t, d: asyncio.run(_tubemq_produce(broker.url, t, d)),
        lambda t, n: asyncio.run(_tubemq_read(broker.url, t, n)),
    )


def run_job(
    cluster: SparkCluster, driver: Path, archive: Path, system: System, tmp: Path, phase: str
) -> dict[str, Any]:
    result = tmp / f"{phase}.json"
    done = submit(
        cluster,
        driver,
        archive,
        JOB,
        system.name,
        system.url,
        system.source,
        system.copy,
        str(tmp / "sink"),
        str(tmp / "checkpoint"),
        str(result),
        phase,
    )
    if done.returncode != 0:
        # Spark's INFO lines hide the Python traceback: keep everything else.
        shown = [line for line in done.stderr.splitlines() if not re.match(r"\d\d/\d\d/\d\d \S+ INFO ", line)]
        pytest.fail(f"spark-submit failed ({done.returncode}):\n" + "\n".join(shown[-150:]))
    facts: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    # The executors ran the archive's Python, and the compiled speedups from it.
    for fact in facts["executors"]:
        assert fact["prefix"].endswith("/env"), fact
        assert fact["kafkawire"].startswith(fact["prefix"]), fact
        for key in ("kafka_speedups", "pulsar_speedups", "delivery_speedups"):
            assert fact[key] and fact[key].startswith(fact["prefix"]) and fact[key].endswith(".so"), fact
    return facts


def sink_values(tmp: Path) -> list[str]:
    return sorted(pq.read_table(tmp / "sink").column("value").to_pylist())


def check_pipeline(cluster: SparkCluster, driver: Path, archive: Path, system: System, tmp: Path) -> None:
    first = values("first", FIRST)
    system.produce(system.source, first)

    facts = run_job(cluster, driver, archive, system, tmp, "batch")
    want = sorted(v.decode() for v in first)
    assert [row[0] for row in facts["read"]] == want
    assert all(row[2] == {"i": row[0].split("-")[-1]} for row in facts["read"])
    assert {row[1] for row in facts["read"]} == set(range(PARTITIONS))
    assert sorted(v.decode() for v in system.read_back(system.copy, FIRST)) == want
    assert sink_values(tmp) == want

    second = values("second", SECOND)
    system.produce(system.source, second)
    run_job(cluster, driver, archive, system, tmp, "stream")
    # The restarted stream went on from its checkpoint: every record once, none twice.
    assert sink_values(tmp) == sorted(v.decode() for v in first + second)


def test_kafka_pipeline_on_a_standalone_cluster(
    cluster: SparkCluster, driver_dir: Path, env_archive: Path, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    check_pipeline(cluster, driver_dir, env_archive, kafka_system(kafka_broker.url), tmp_path)


def test_pulsar_pipeline_on_a_standalone_cluster(
    cluster: SparkCluster, driver_dir: Path, env_archive: Path, pulsar_broker: PulsarBroker, tmp_path: Path
) -> None:
    check_pipeline(
        cluster, driver_dir, env_archive, pulsar_system(pulsar_broker.url, pulsar_broker.admin_url), tmp_path
    )


def test_tubemq_pipeline_on_a_standalone_cluster(
    cluster: SparkCluster,
    driver_dir: Path,
    env_archive: Path,
    tubemq_broker: TubeMQBroker,
    tubemq_fresh_topics: FreshTopics,
    tmp_path: Path,
) -> None:
    check_pipeline(cluster, driver_dir, env_archive, tubemq_system(tubemq_broker, tubemq_fresh_topics), tmp_path)
