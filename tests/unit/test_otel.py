"""mqwire.otel without a broker: the header carriers, the pass-through when nothing is sampled, and the
span thread's bounded queue."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased

from mqwire.common.stats import ConsumerCounters, PartitionLag, ProducerCounters
from mqwire.otel import Telemetry, extract_context, inject_context


def test_context_travels_through_each_header_shape() -> None:
    provider = TracerProvider()
    span = provider.get_tracer("t").start_span("send")
    context = trace.set_span_in_context(span)
    as_dict = inject_context({"app": b"1"}, context)
    assert as_dict["app"] == b"1" and as_dict["traceparent"].startswith(b"00-")
    as_list = inject_context([("app", b"1"), ("traceparent", b"stale")], context)
    assert [name for name, _ in as_list] == ["app", "traceparent"] and as_list[1][1] == as_dict["traceparent"]
    assert inject_context(None, context) == {"traceparent": as_dict["traceparent"]}
    parent = trace.get_current_span(extract_context(as_dict)).get_span_context()
    assert parent.trace_id == span.get_span_context().trace_id and parent.span_id == span.get_span_context().span_id
    assert not trace.get_current_span(extract_context({})).get_span_context().is_valid
    assert not trace.get_current_span(extract_context({"traceparent": b"\xff garbage"})).get_span_context().is_valid


class Raw:
    topic = "t"

    async def enqueue(self, value: Any, /, *, headers: Any = None, **kwargs: Any) -> asyncio.Future[Any]:
        self.headers = headers
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        loop.call_soon(future.set_result, None)  # acknowledged on the next turn of the loop, as by a broker
        return future

    async def send(self, value: Any, /, **kwargs: Any) -> Any:
        return await (await self.enqueue(value, **kwargs))

    def stats(self) -> None:
        return None


@pytest.mark.parametrize("sampler", [ALWAYS_OFF, TraceIdRatioBased(0)])
async def test_nothing_sampled_passes_calls_straight_through(sampler: Any) -> None:
    telemetry = Telemetry(tracer_provider=TracerProvider(sampler=sampler))
    assert telemetry.never_samples
    raw = Raw()
    traced = telemetry.producer(raw)
    assert traced.enqueue == raw.enqueue and traced.send == raw.send
    await traced.send(b"x")
    assert raw.headers is None


async def test_parent_based_sampler_at_zero_follows_a_sampled_parent() -> None:
    telemetry = Telemetry(tracer_provider=TracerProvider(sampler=ParentBased(TraceIdRatioBased(0))))
    assert not telemetry.never_samples
    raw = Raw()
    traced = telemetry.producer(raw)
    await traced.send(b"x")
    assert raw.headers is None  # a root send is not sampled and continues no trace: nothing to carry
    parent = TracerProvider().get_tracer("upstream").start_span("process")
    with trace.use_span(parent):
        await traced.send(b"x")
    assert raw.headers["traceparent"].split(b"-")[1] == format(parent.get_span_context().trace_id, "032x").encode()
    assert telemetry.flush(5)


class Received:
    topic = "t"
    partition = 0
    offset = 1

    def __init__(self, headers: dict[str, bytes]) -> None:
        self.headers = headers


class RawConsumer:
    group = "g"

    def __init__(self, messages: list[Received]) -> None:
        self.messages = messages

    async def receive(self, timeout: float | None = None) -> Received:
        return self.messages.pop(0)


async def test_parent_based_at_zero_skips_only_what_has_no_parent() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=provider)
    assert telemetry.never_samples_roots and not telemetry.never_samples
    raw = Raw()
    traced = telemetry.producer(raw)
    await traced.send(b"root")
    assert raw.headers is None
    # A sampled parent (from a provider that samples) gets a recorded child span and its traceparent.
    parent = TracerProvider().get_tracer("upstream").start_span("process")
    with trace.use_span(parent):
        await traced.send(b"child")
    sent_under_parent = raw.headers
    assert sent_under_parent["traceparent"].split(b"-")[1] == format(
        parent.get_span_context().trace_id, "032x").encode()
    # An unsampled parent still passes its context on.
    unsampled = provider.get_tracer("t").start_span("unsampled root")
    assert not unsampled.is_recording()
    with trace.use_span(unsampled):
        await traced.send(b"under unsampled")
    assert int(raw.headers["traceparent"].split(b"-")[3], 16) & 1 == 0  # passed on, flagged not sampled
    # Received: a message carrying a sampled context gets its receive span, one without none.
    consumer = telemetry.consumer(RawConsumer([Received({}), Received(dict(sent_under_parent))]))
    await consumer.receive()
    await consumer.receive()
    assert telemetry.flush(5)
    spans = [(s.name, s.context.trace_id) for s in exporter.get_finished_spans()]
    trace_id = parent.get_span_context().trace_id
    assert spans == [("send t", trace_id), ("receive t", trace_id)]


def test_observe_needs_stats() -> None:
    with pytest.raises(TypeError):
        Telemetry().observe(object())
    with pytest.raises(ValueError):
        Telemetry(span_queue_size=0)


class Stuck(SpanProcessor):
    def __init__(self) -> None:
        self.release = threading.Event()

    def on_end(self, span: ReadableSpan) -> None:
        self.release.wait(10)


async def test_a_stuck_processor_fills_the_queue_then_spans_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    stuck = Stuck()
    provider = TracerProvider()
    provider.add_span_processor(stuck)
    telemetry = Telemetry(tracer_provider=provider, span_queue_size=5)
    traced = telemetry.producer(Raw())
    try:
        with caplog.at_level(logging.WARNING, logger="mqwire.otel"):
            async with asyncio.timeout(2):  # 50 sends against a processor stuck for 10 s each
                for _ in range(50):
                    await traced.send(b"x")
        assert 44 <= telemetry.dropped_spans <= 45  # the queue holds 5, the stuck one took 1 or not yet
        assert sum("spans are dropped" in r.getMessage() for r in caplog.records) == 1
    finally:
        stuck.release.set()
    assert telemetry.flush(10)
    telemetry.close()


class PulsarProducer(Raw):
    """Shaped as pulsarwire's producer reports itself: the complete topic name, receipts of partition -1."""

    __module__ = "pulsarwire.producer"
    topic = "persistent://public/default/orders"

    async def enqueue(self, value: Any, /, *, headers: Any = None, **kwargs: Any) -> asyncio.Future[Any]:
        self.headers = headers
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(Receipt())
        return future

    def stats(self) -> Any:
        counters = ProducerCounters()
        counters.records = 1
        return counters.snapshot("pulsar", self.topic, in_flight=0, buffered_records=0, buffered_bytes=0)


class Receipt:
    partition = -1


class PulsarReceived(Received):
    topic = "orders"  # as given to the consumer
    partition = -1


class PulsarConsumer(RawConsumer):
    __module__ = "pulsarwire.consumer"

    def stats(self) -> Any:
        counters = ConsumerCounters()
        counters.records = 1
        lag = [PartitionLag("orders", -1, None, None, 0)]
        return counters.snapshot("pulsar", ["orders"], buffered_records=0, lag=lag)


async def test_a_pulsar_topic_has_one_name_and_no_partition_when_it_has_none() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    telemetry = Telemetry(tracer_provider=provider, meter_provider=MeterProvider(metric_readers=[reader]))
    raw = PulsarProducer()
    await telemetry.producer(raw).send(b"x")
    await asyncio.sleep(0)  # the receipt's callback, which ends the send span
    consumer = telemetry.consumer(PulsarConsumer([PulsarReceived(raw.headers)]))
    message = await consumer.receive()
    with consumer.process(message):
        pass
    telemetry.observe(raw)
    telemetry.observe(consumer.wrapped)
    assert telemetry.flush(5)
    full = "persistent://public/default/orders"
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [f"process {full}", f"receive {full}", f"send {full}"]
    for span in spans:
        assert span.attributes is not None and span.attributes["messaging.destination.name"] == full
        assert "messaging.destination.partition.id" not in span.attributes
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        metric.name: [dict(p.attributes or {}) for p in metric.data.data_points]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    for name in ("messaging.client.sent.messages", "messaging.client.consumed.messages", "mqwire.consumer.lag"):
        assert points[name] == [{"messaging.system": "pulsar", "messaging.destination.name": full}], name
    telemetry.close()
