"""Client telemetry (KIP-714) without a broker: the points read from the statistics and their OTLP encoding."""

from __future__ import annotations

from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from kafkawire.telemetry.measures import ClientMeasures
from kafkawire.telemetry.otlp import encode
from kafkawire.telemetry.points import Collector, Point, selected
from kafkawire.telemetry.reporter import choose_compression
from mqwire.common.stats import ConsumerCounters, ProducerCounters, ProducerStats


class _Producer:
    def __init__(self) -> None:
        self.counters = ProducerCounters()

    def stats(self) -> ProducerStats:
        return self.counters.snapshot("kafka", "t", in_flight=1, buffered_records=0, buffered_bytes=0)


class _Consumer:
    def __init__(self) -> None:
        self.counters = ConsumerCounters()

    def stats(self) -> object:
        return self.counters.snapshot("kafka", ["t"], buffered_records=0, lag=[])


def _by_name(points: list[Point]) -> dict[str, float]:
    return {p.name: p.value for p in points if not p.attributes}


def test_totals_are_pushed_as_increases_and_never_taken_back() -> None:
    measures = ClientMeasures()
    collector = Collector(measures)
    producer, consumer = _Producer(), _Consumer()
    producer.counters.acknowledged(10, 1000, 0.01)
    consumer.counters.records = 7
    measures.record_queue_time.observe(0.002)
    measures.record_queue_time.observe(0.004)
    measures.produce_latency(1).observe(0.003)
    measures.poll_idle = 0.5
    first = collector.collect([producer, consumer], connects=2, elapsed=1.0, delta=True)
    values = _by_name(first)
    assert values["org.apache.kafka.producer.record.send.total"] == 10
    assert values["org.apache.kafka.consumer.fetch.manager.records.consumed.total"] == 7
    assert values["org.apache.kafka.producer.record.queue.time.avg"] == 3.0
    assert values["org.apache.kafka.producer.record.queue.time.max"] == 4.0
    assert values["org.apache.kafka.consumer.poll.idle.ratio.avg"] == 0.5
    assert values["org.apache.kafka.producer.connection.creation.total"] == 2
    latency = [p for p in first if p.name == "org.apache.kafka.producer.node.request.latency.avg"]
    assert latency == [Point(latency[0].name, 3.0, False, (("node_id", "1"),))]

    producer.counters.acknowledged(5, 500, 0.01)
    second = _by_name(collector.collect([producer, consumer], connects=2, elapsed=1.0, delta=True))
    assert second["org.apache.kafka.producer.record.send.total"] == 5
    assert second["org.apache.kafka.producer.connection.creation.total"] == 0
    assert "org.apache.kafka.producer.record.queue.time.avg" not in second  # nothing observed since

    # The producer closed: cumulative totals keep what it sent.
    third = _by_name(collector.collect([consumer], connects=3, elapsed=1.0, delta=False))
    assert third["org.apache.kafka.producer.record.send.total"] == 15
    assert third["org.apache.kafka.consumer.fetch.manager.records.consumed.total"] == 7


def test_prefixes_select_and_a_star_selects_all() -> None:
    points = [Point("org.apache.kafka.producer.a", 1, True), Point("org.apache.kafka.consumer.b", 1, True)]
    assert selected(points, ["org.apache.kafka.producer."]) == points[:1]
    assert selected(points, ["*"]) == points
    assert selected(points, [""]) == points
    assert selected(points, []) == []


def test_encoded_as_otlp_metrics_data() -> None:
    points = [
        Point("org.apache.kafka.producer.record.send.total", 3, True),
        Point("org.apache.kafka.producer.node.request.latency.avg", 1.5, False, (("node_id", "1"),)),
        Point("org.apache.kafka.producer.node.request.latency.avg", 2.5, False, (("node_id", "2"),)),
    ]
    data = MetricsData.FromString(encode(points, resource={}, scope_version="1", start_ns=1, now_ns=2, delta=True))
    metrics = {m.name: m for m in data.resource_metrics[0].scope_metrics[0].metrics}
    total = metrics["org.apache.kafka.producer.record.send.total"]
    assert total.sum.is_monotonic and total.sum.aggregation_temporality == 1  # delta
    assert total.sum.data_points[0].as_int == 3 and total.sum.data_points[0].start_time_unix_nano == 1
    latency = metrics["org.apache.kafka.producer.node.request.latency.avg"].gauge.data_points
    assert [(p.attributes[0].value.string_value, p.as_double) for p in latency] == [("1", 1.5), ("2", 2.5)]


def test_compression_is_the_first_accepted_we_write() -> None:
    assert choose_compression([2, 4, 3, 1]) == 4
    assert choose_compression([2]) == 0
    assert choose_compression([]) == 0


def test_a_producer_closed_between_pushes_still_counts_once() -> None:
    collector = Collector(ClientMeasures())
    producer = _Producer()
    collector.collect([producer], connects=1, elapsed=1.0, delta=True)
    producer.counters.acknowledged(4, 100, 0.01)
    collector.retire(producer)
    assert _by_name(collector.collect([], connects=1, elapsed=1.0, delta=True))[
        "org.apache.kafka.producer.record.send.total"] == 4
    assert "org.apache.kafka.producer.record.send.total" not in _by_name(
        collector.collect([], connects=1, elapsed=1.0, delta=True))
