"""The benchmark suite's pooled latency percentiles against percentiles of the samples themselves."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from measure import LATENCY_BIN, Latencies
from suite import Row, medians, pooled_percentile


def latencies(samples_ms: list[float]) -> Latencies:
    lat = Latencies()
    lat.samples = [ms / 1000 for ms in samples_ms]
    return lat


def test_pooled_p99_is_the_samples_p99_to_within_a_bin() -> None:
    rng = random.Random(7)
    rounds = [[rng.lognormvariate(1.5, 0.6) for _ in range(1500)] for _ in range(5)]
    rounds[2][:60] = [120.0 + i for i in range(60)]  # a stall in one round only
    everything = sorted(ms for samples in rounds for ms in samples)
    exact = everything[int(0.99 * len(everything))]
    pooled = pooled_percentile([latencies(samples).histogram() for samples in rounds], 0.99)
    assert pooled is not None
    assert exact <= pooled <= exact * LATENCY_BIN * 1.0001


def test_medians_pool_the_rounds_and_keep_the_median_of_their_p99s() -> None:
    fast = [5.0] * 990 + [9.0] * 10
    stalled = [5.0] * 900 + [150.0] * 100
    rows = []
    for index, samples in enumerate([fast, fast, stalled, stalled, fast]):
        lat = latencies(samples)
        p99 = lat.percentile(0.99)
        assert p99 is not None
        rows.append(Row("kafka", 100, 8, "kafkawire", "produce@5000", 15000, 3.0, 0.1, 50.0, 5.0, p99 * 1000,
                        round=index, latency_bins=lat.histogram()))
    (median,) = medians(rows)
    assert median.p99_rounds_ms == 9.0
    # 200 of 5,000 samples are 150 ms: the pooled p99 falls among them.
    assert median.p99_ms is not None and 150.0 <= median.p99_ms <= 150.0 * LATENCY_BIN


def test_a_run_without_samples_falls_back_to_the_median_of_p99s() -> None:
    rows = [Row("kafka", 100, 1, "kafka-java-perf", "produce@5000", 15000, 3.0, 0.1, 50.0, 5.0, p99, round=i)
            for i, p99 in enumerate([7.0, 8.0, 30.0])]
    (median,) = medians(rows)
    assert median.p99_ms == median.p99_rounds_ms == 8.0
