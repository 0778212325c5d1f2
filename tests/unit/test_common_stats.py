"""The statistics types: the latency histogram, the counters and their snapshots, and the logger names."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from types import MappingProxyType

import pytest

from mqwire.common.errors import ConnectionLostError, RequestTimeoutError
from mqwire.common.stats import (
    LATENCY_BOUNDS_MS,
    ClientCounters,
    ConsumerCounters,
    LatencyRecorder,
    PartitionLag,
    ProducerCounters,
    split_children,
)


def test_histogram_buckets_and_quantiles() -> None:
    recorder = LatencyRecorder()
    assert recorder.snapshot().quantile(0.5) is None and recorder.snapshot().mean_ms is None
    recorder.observe(0.0005)  # 0.5 ms: the first bucket
    recorder.observe(0.001)  # exactly 1 ms: still the first (bounds are inclusive)
    recorder.observe(0.015, 8)  # 15 ms, eight messages of one batch
    recorder.observe(60.0)  # above the last bound
    snapshot = recorder.snapshot()
    assert len(snapshot.counts) == len(LATENCY_BOUNDS_MS) + 1
    assert snapshot.counts[0] == 2 and snapshot.counts[LATENCY_BOUNDS_MS.index(20)] == 8
    assert snapshot.counts[-1] == 1 and snapshot.count == 11
    assert snapshot.sum_ms == pytest.approx(0.5 + 1 + 8 * 15 + 60_000)
    assert snapshot.quantile(0.1) == 1
    assert snapshot.quantile(0.5) == 20
    assert snapshot.quantile(1.0) == float("inf")
    with pytest.raises(ValueError):
        snapshot.quantile(1.5)
    recorder.observe(0.002)
    assert snapshot.count == 11  # a snapshot does not move


def test_producer_counters_snapshot() -> None:
    counters = ProducerCounters()
    counters.requests += 2
    counters.acknowledged(10, 1000, 0.004)
    counters.retries += 1
    counters.error(RequestTimeoutError("late"))
    counters.error(RequestTimeoutError)
    stats = counters.snapshot("kafka", "t", in_flight=1, buffered_records=3, buffered_bytes=300)
    assert (stats.records_sent, stats.bytes_sent, stats.batches_sent, stats.requests_sent) == (10, 1000, 1, 2)
    assert stats.errors == {"RequestTimeoutError": 2}
    assert isinstance(stats.errors, MappingProxyType)
    assert (stats.requests_in_flight, stats.buffered_records, stats.buffered_bytes) == (1, 3, 300)
    assert stats.send_latency.count == 10
    counters.error(ValueError("x"))
    assert stats.errors == {"RequestTimeoutError": 2}  # the snapshot's copy does not change
    with pytest.raises(AttributeError):
        stats.records_sent = 0  # type: ignore[misc]


def test_consumer_counters_sort_the_lag_and_sum_it() -> None:
    counters = ConsumerCounters()
    lag = [PartitionLag("t", 1, 5, 9, 4), PartitionLag("t", 0, None, None, None), PartitionLag("a", 0, 0, 1, 1)]
    stats = counters.snapshot("pulsar", ["t"], buffered_records=0, lag=lag)
    assert [(p.topic, p.partition) for p in stats.lag] == [("a", 0), ("t", 0), ("t", 1)]
    assert stats.total_lag == 5
    assert counters.snapshot("pulsar", [], buffered_records=0, lag=[]).total_lag is None


def test_client_counters_tell_reconnects_from_first_connections() -> None:
    counters = ClientCounters()
    counters.opened(("a", 1))
    counters.opened(("b", 1))
    counters.lost(ConnectionLostError("gone"))
    counters.opened(("a", 1))
    stats = counters.snapshot("tubemq", connections=2)
    assert (stats.connects, stats.reconnects, stats.connections_lost) == (3, 1, 1)
    assert stats.errors == {"ConnectionLostError": 1}


def test_split_children_by_kind() -> None:
    class Producing:
        def stats(self) -> object:
            return ProducerCounters().snapshot("kafka", "t", in_flight=0, buffered_records=0, buffered_bytes=0)

    class Consuming:
        def stats(self) -> object:
            return ConsumerCounters().snapshot("kafka", ["t"], buffered_records=0, lag=[])

    class Admin:
        pass

    producers, consumers = split_children([Producing(), Consuming(), Admin(), Consuming()])
    assert len(producers) == 1 and len(consumers) == 2


@pytest.mark.parametrize("package", ["kafkawire", "pulsarwire", "tubemqwire", "mqwire.common"])
def test_loggers_are_named_after_the_public_packages(package: str) -> None:
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if info.name.endswith("_pb2"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, logging.Logger):
                assert value.name.startswith(f"{package}."), (info.name, value.name)
    names = logging.root.manager.loggerDict
    assert not [n for n in names if n.startswith(("common.", "brokers."))]
