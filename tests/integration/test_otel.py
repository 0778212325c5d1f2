"""OpenTelemetry against the real brokers, with the SDK's in-memory exporters: spans and metrics for each
system, a producer's context as the parent of its consumer's span, one trace from Kafka into Pulsar, a trace
begun by aiokafka under opentelemetry-python-contrib's instrumentation continued by kafkawire, and span
processors or exporters that raise or block without slowing or breaking sending."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.otel import Telemetry
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.tubemq_spares import FreshTopics

pytestmark = pytest.mark.integration

COUNT = 3


@pytest.fixture(scope="module")
def tubemq_topics(tubemq_fresh_topics: FreshTopics) -> dict[str, str]:
    """A fresh TubeMQ topic for each event loop the test runs on."""
    return tubemq_fresh_topics.take(dict.fromkeys(("asyncio", "uvloop"), 1))


def running_loop_kind() -> str:
    """``uvloop`` when the running event loop is uvloop's, else ``asyncio``."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


class Traces:
    """A tracer provider and meter provider recording into memory, and the Telemetry over them."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.telemetry = Telemetry(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)

    def finished(self) -> Sequence[ReadableSpan]:
        assert self.telemetry.flush(10)
        return self.spans.get_finished_spans()

    def metric(self, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        out = {}
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            out[tuple(sorted((point.attributes or {}).items()))] = point.value  # type: ignore[union-attr]
        return out


@pytest.fixture
def traces() -> Iterator[Traces]:
    made = Traces()
    yield made
    made.telemetry.close()
    made.tracer_provider.shutdown()
    made.meter_provider.shutdown()


def check_round_trip(traces: Traces, system: str, topic: str, *, partitioned: bool = True) -> None:
    spans = traces.finished()
    sends = [s for s in spans if s.kind == SpanKind.PRODUCER and s.name == f"send {topic}"]
    receives = [s for s in spans if s.kind == SpanKind.CONSUMER and s.name == f"receive {topic}"]
    assert len(sends) == COUNT and len(receives) == COUNT
    by_id = {s.context.span_id: s for s in sends}
    for span in receives:
        assert span.parent is not None and span.parent.span_id in by_id
        assert span.context.trace_id == by_id[span.parent.span_id].context.trace_id
        assert span.attributes is not None and span.attributes["messaging.system"] == system
        assert span.attributes["messaging.destination.name"] == topic
        assert ("messaging.destination.partition.id" in span.attributes) is partitioned
    assert {s.parent.span_id for s in receives if s.parent} == set(by_id)
    for span in sends:
        assert span.attributes is not None and span.attributes["messaging.operation.type"] == "send"
        assert ("messaging.destination.partition.id" in span.attributes) is partitioned
    sent = traces.metric("messaging.client.sent.messages")
    assert sent[(("messaging.destination.name", topic), ("messaging.system", system))] == COUNT
    consumed = traces.metric("messaging.client.consumed.messages")
    assert sum(v for k, v in consumed.items() if ("messaging.system", system) in k) == COUNT
    durations = traces.metrics.get_metrics_data()
    assert durations is not None
    assert traces.metric("mqwire.client.connections")[(("messaging.system", system),)] >= 1


async def test_kafka_spans_and_metrics(kafka_broker: KafkaBroker, traces: Traces) -> None:
    topic = f"otel_{secrets.token_hex(4)}"
    async with kafkawire.connect(kafka_broker.url) as client:
        traces.telemetry.observe(client)
        consumer = traces.telemetry.consumer(client.consumer(topic, group=f"g{secrets.token_hex(3)}", start="earliest"))
        # Both stay open while the metrics are read: the meter sees the producers and consumers open now.
        async with traces.telemetry.producer(client.producer(topic)) as producer, consumer:
            for index in range(COUNT):
                await producer.send(b"v%d" % index, headers={"app": b"x"})
            got = []
            while len(got) < COUNT:
                got.extend(await consumer.getmany(timeout=10))
            assert all(m.headers["app"] == b"x" and "traceparent" in m.headers for m in got)
            check_round_trip(traces, "kafka", topic)
            lag = traces.metric("mqwire.consumer.lag")
            assert list(lag.values()) == [0]
            assert ("messaging.destination.partition.id", "0") in next(iter(lag))


async def test_pulsar_spans_and_metrics(pulsar_broker: PulsarBroker, traces: Traces) -> None:
    # Given by its short name to the consumer and by tenant/namespace to the producer: spans and metrics all
    # say the complete name, and nothing names a partition of this topic without partitions.
    short = f"otel-{secrets.token_hex(4)}"
    topic = f"persistent://public/default/{short}"
    async with pulsarwire.connect(pulsar_broker.url) as client:
        traces.telemetry.observe(client)
        consumer = traces.telemetry.consumer(client.consumer(short, subscription="otel"))
        async with consumer, traces.telemetry.producer(client.producer(f"public/default/{short}")) as producer:
            for index in range(COUNT):
                await producer.send(b"v%d" % index)
            for _ in range(COUNT):
                await consumer.ack(await consumer.receive(10))
            check_round_trip(traces, "pulsar", topic, partitioned=False)
            consumed = traces.metric("messaging.client.consumed.messages")
            assert consumed[(("messaging.destination.name", topic), ("messaging.system", "pulsar"))] == COUNT
            for attributes in traces.metric("mqwire.consumer.lag"):
                assert dict(attributes)["messaging.destination.name"] == topic
                assert "messaging.destination.partition.id" not in dict(attributes)


async def test_tubemq_spans_and_metrics(
    tubemq_broker: TubeMQBroker, tubemq_topics: dict[str, str], traces: Traces
) -> None:
    topic = tubemq_topics[running_loop_kind()]
    async with tubemqwire.connect(tubemq_broker.url, heartbeat_interval_ms=1000) as client:
        traces.telemetry.observe(client)
        consumer = traces.telemetry.consumer(client.consumer(topic, group=f"g{secrets.token_hex(3)}", start="earliest"))
        async with traces.telemetry.producer(client.producer(topic)) as producer, consumer:
            for index in range(COUNT):
                await producer.send(b"v%d" % index)
            for _ in range(COUNT):
                await consumer.ack(await consumer.receive(60))
            check_round_trip(traces, "tubemq", topic)


async def test_one_trace_from_kafka_into_pulsar(
    kafka_broker: KafkaBroker, pulsar_broker: PulsarBroker, traces: Traces
) -> None:
    source = f"otel_{secrets.token_hex(4)}"
    target = f"persistent://public/default/otel-{secrets.token_hex(4)}"
    telemetry = traces.telemetry
    async with kafkawire.connect(kafka_broker.url) as kafka, pulsarwire.connect(pulsar_broker.url) as pulsar:
        pulsar_consumer = telemetry.consumer(pulsar.consumer(target, subscription="otel"))
        async with pulsar_consumer, telemetry.producer(pulsar.producer(target)) as pulsar_producer:
            async with telemetry.producer(kafka.producer(source)) as kafka_producer:
                await kafka_producer.send(b"order")
            kafka_consumer = telemetry.consumer(kafka.consumer(source, group="copier", start="earliest"))
            async with kafka_consumer:
                message = await kafka_consumer.receive(10)
                with kafka_consumer.process(message):
                    await pulsar_producer.send(message.value)
            copied = await pulsar_consumer.receive(10)
            assert copied.value == b"order"
    spans = traces.finished()
    (first,) = [s for s in spans if s.name == f"send {source}"]
    (last,) = [s for s in spans if s.name == f"receive {target}"]
    assert {s.context.trace_id for s in spans} == {first.context.trace_id}
    # send source <- process source <- send target <- receive target
    names = {s.context.span_id: s for s in spans}
    chain = []
    span: ReadableSpan | None = last
    while span is not None:
        chain.append(span.name)
        span = names.get(span.parent.span_id) if span.parent is not None else None
    assert chain == [f"receive {target}", f"send {target}", f"process {source}", f"send {source}"]


async def test_aiokafka_under_contrib_instrumentation_continues_in_kafkawire(
    kafka_broker: KafkaBroker, traces: Traces
) -> None:
    import aiokafka
    from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

    topic = f"otel_{secrets.token_hex(4)}"
    instrumentor = AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=traces.tracer_provider)
    try:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_broker.url.removeprefix("kafka://"))
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"from aiokafka")
        finally:
            await producer.stop()
    finally:
        instrumentor.uninstrument()
    async with kafkawire.connect(kafka_broker.url) as client:
        consumer = traces.telemetry.consumer(client.consumer(topic, group="otel", start="earliest"))
        async with consumer:
            message = await consumer.receive(10)
            assert message.value == b"from aiokafka"
    spans = traces.finished()
    (sent,) = [s for s in spans if s.kind == SpanKind.PRODUCER]
    (received,) = [s for s in spans if s.name == f"receive {topic}"]
    assert received.parent is not None and received.parent.span_id == sent.context.span_id
    assert received.context.trace_id == sent.context.trace_id


# ------------------------------------------------------------------------------------------ bad exporters
class RaisingProcessor(SpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor broken")


class BlockingExporter(SpanExporter):
    """Holds each export until released (or 30 s), counting the exports that finished."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(30)
        self.finished += 1
        return SpanExportResult.SUCCESS


class BadMetricExporter(MetricExporter):
    def __init__(self, block: bool) -> None:
        super().__init__()
        self.block = block
        self.calls = 0

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        self.calls += 1
        if self.block:
            time.sleep(5)
        raise RuntimeError("metric exporter broken")

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


async def test_exporters_that_raise_or_block_never_slow_or_break_sending(
    kafka_broker: KafkaBroker, caplog: pytest.LogCaptureFixture
) -> None:
    topic = f"otel_{secrets.token_hex(4)}"
    raising = TracerProvider()
    raising.add_span_processor(RaisingProcessor())
    blocking_exporter = BlockingExporter()
    blocking = TracerProvider()
    blocking.add_span_processor(SimpleSpanProcessor(blocking_exporter))
    bad_metrics = [BadMetricExporter(block=False), BadMetricExporter(block=True)]
    meter_provider = MeterProvider(
        metric_readers=[PeriodicExportingMetricReader(e, export_interval_millis=50) for e in bad_metrics]
    )
    sent = 200
    try:
        async with kafkawire.connect(kafka_broker.url) as client:
            for provider in (raising, blocking):
                telemetry = Telemetry(tracer_provider=provider, meter_provider=meter_provider, span_queue_size=20)
                telemetry.observe(client)
                with caplog.at_level(logging.WARNING, logger="mqwire.otel"):
                    async with telemetry.producer(client.producer(topic)) as producer:
                        futures = [await producer.enqueue(b"x") for _ in range(sent)]
                        acknowledged = [await future for future in futures]
                # A raising exporter would fail sends: every one was acknowledged.
                assert len(acknowledged) == sent
                # A send that waited for the exporter could not finish before an export did: none has (the
                # blocked one is held until released, after this loop).
                assert blocking_exporter.finished == 0, "a send waited for the blocked exporter"
                if provider is raising:
                    assert telemetry.flush(10)
                    # Each span was either ended (its processor raised) or dropped from the full queue.
                    assert telemetry.span_errors >= 1 and telemetry.span_errors + telemetry.dropped_spans == sent
                    assert sum("ending a span failed" in r.getMessage() for r in caplog.records) == 1
                else:
                    assert telemetry.dropped_spans >= sent - 25  # the queue holds 20, the stuck export 1
                    assert sum("spans are dropped" in r.getMessage() for r in caplog.records) == 1
                caplog.clear()
                telemetry.close()
            assert all(e.calls >= 1 for e in bad_metrics[:1])
    finally:
        blocking_exporter.release.set()
        meter_provider.shutdown(timeout_millis=1000)
