"""Client telemetry (KIP-714) against a real Kafka 4.3 broker of the test's own, whose metric reporter
(tests/integration/java/TelemetryFileReporter.java, compiled here against the broker's class path) writes every
payload a client pushes to a file: a client-metrics subscription set, our producer's and consumer's metrics
arrive under the Java client's names with exact totals, a terminating push comes at close, and a client with
``enable_metrics_push=False`` pushes nothing."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

import kafkawire
from mqwire.testing import classpath
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.java import find_java
from mqwire.testing.launcher import Launcher

pytestmark = pytest.mark.integration

JAVA_SOURCE = Path(__file__).with_name("java") / "TelemetryFileReporter.java"
# The broker's floor is 100 ms; one second keeps the test short without pushing in a busy loop.
INTERVAL_MS = 1000
RECORDS = 25


@dataclass
class TelemetryBroker:
    broker: KafkaBroker
    payloads: Path
    java: str
    class_path: str

    def subscribe(self, name: str, match: str) -> None:
        """A client-metrics subscription to our producer and consumer metrics for client ids matching ``match``."""
        done = subprocess.run(
            [self.java, "-Xmx256m", "-cp", self.class_path, "TelemetryFileReporter", "subscribe",
             f"127.0.0.1:{self.broker.port}", name, str(INTERVAL_MS),
             "org.apache.kafka.producer.,org.apache.kafka.consumer.", f"client_id={match}"],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0 and "subscribed" in done.stdout, done.stderr[-2000:]

    def pushes(self, client_id: str) -> list[tuple[str, bool, MetricsData]]:
        """(client instance id, terminating, metrics) of every push from ``client_id`` so far."""
        if not self.payloads.exists():
            return []
        out = []
        for line in self.payloads.read_text(encoding="utf-8").splitlines():
            instance, who, terminating, _content_type, data = line.split(" ")
            if who == client_id:
                out.append((instance, terminating == "true", MetricsData.FromString(base64.b64decode(data))))
        return out


@pytest.fixture(scope="module")
def telemetry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TelemetryBroker]:
    java = find_java("kafka").executable
    jars = classpath.classpath("kafka")
    folder = tmp_path_factory.mktemp("telemetry-java")
    javac = Path(java).with_name("javac")
    compiled = subprocess.run([str(javac), "-cp", jars, "-d", str(folder), str(JAVA_SOURCE)],
                              capture_output=True, text=True, timeout=300)
    if compiled.returncode != 0:
        pytest.fail(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
    payloads = folder / "payloads.txt"
    state = tmp_path_factory.mktemp("telemetry-broker")
    launcher = Launcher(state_dir=state / "state", work_root=state / "work", owned=True)
    status = launcher.start(
        "kafka",
        kafka_properties={"metric.reporters": "TelemetryFileReporter", "mqwire.telemetry.file": str(payloads)},
        kafka_classpath=[str(folder)],
    )
    try:
        assert isinstance(status.endpoint, KafkaBroker)
        yield TelemetryBroker(status.endpoint, payloads, java, f"{folder}{os.pathsep}{jars}")
    finally:
        launcher.stop("kafka")


def _sums(pushes: list[tuple[str, bool, MetricsData]]) -> dict[str, int]:
    """Each pushed running total added up over the pushes (they are deltas)."""
    totals: dict[str, int] = {}
    for _, _, data in pushes:
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.HasField("sum"):
                        assert metric.sum.aggregation_temporality == 1  # the broker asks for delta
                        totals[metric.name] = totals.get(metric.name, 0) + sum(
                            p.as_int for p in metric.sum.data_points
                        )
    return totals


def _names(pushes: list[tuple[str, bool, MetricsData]]) -> set[str]:
    return {
        metric.name
        for _, _, data in pushes
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


async def _produce_and_consume(url: str, client_id: str, topic: str, **options: bool) -> None:
    async with kafkawire.connect(url, client_id=client_id, **options) as client:
        async with client.producer(topic, linger_ms=0) as producer:
            for i in range(RECORDS):
                await producer.send(f"v{i}".encode())
        async with client.consumer(topic, group=f"g-{client_id}", start="earliest") as consumer:
            for _ in range(RECORDS):
                await consumer.receive(timeout=30)
            await consumer.commit()
            # Long enough for two pushes at the subscription's interval.
            await asyncio.sleep(2.5 * INTERVAL_MS / 1000)


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_the_broker_receives_our_producer_and_consumer_metrics(telemetry_broker: TelemetryBroker) -> None:
    client_id = f"kw-telemetry-{uuid.uuid4().hex[:8]}"
    telemetry_broker.subscribe(f"sub-{client_id}", client_id)
    await asyncio.sleep(1)  # the subscription reaches the broker's client metrics manager through the metadata log
    url = telemetry_broker.broker.url
    await _produce_and_consume(url, client_id, f"kw-telemetry-{uuid.uuid4().hex[:8]}")
    pushes = telemetry_broker.pushes(client_id)
    assert len({instance for instance, _, _ in pushes}) == 1, pushes  # one client instance id
    assert pushes[-1][1], "the last push is the terminating one"
    assert sum(1 for _, terminating, _ in pushes if terminating) == 1
    totals = _sums(pushes)
    assert totals["org.apache.kafka.producer.record.send.total"] == RECORDS
    assert totals["org.apache.kafka.consumer.fetch.manager.records.consumed.total"] == RECORDS
    names = _names(pushes)
    for required in (
        "org.apache.kafka.producer.node.request.latency.avg",
        "org.apache.kafka.producer.node.request.latency.max",
        "org.apache.kafka.producer.record.queue.time.avg",
        "org.apache.kafka.producer.record.queue.time.max",
        "org.apache.kafka.producer.connection.creation.total",
        "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
        "org.apache.kafka.consumer.coordinator.commit.latency.avg",
        "org.apache.kafka.consumer.poll.idle.ratio.avg",
        "org.apache.kafka.consumer.node.request.latency.avg",
    ):
        assert required in names, sorted(names)


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_enable_metrics_push_false_pushes_nothing(telemetry_broker: TelemetryBroker) -> None:
    client_id = f"kw-telemetry-off-{uuid.uuid4().hex[:8]}"
    on_id = f"kw-telemetry-on-{uuid.uuid4().hex[:8]}"
    telemetry_broker.subscribe(f"sub-{client_id}", f"{client_id}|{on_id}")
    await asyncio.sleep(1)
    url = telemetry_broker.broker.url
    topic = f"kw-telemetry-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    # The same subscription matches both; only the client with the push on sends anything.
    await asyncio.gather(
        _produce_and_consume(url, client_id, topic, enable_metrics_push=False),
        _produce_and_consume(url, on_id, topic),
    )
    assert time.monotonic() - began >= 2 * INTERVAL_MS / 1000
    assert telemetry_broker.pushes(on_id), "the client with telemetry on pushed"
    assert telemetry_broker.pushes(client_id) == []
