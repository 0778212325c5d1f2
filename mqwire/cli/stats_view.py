"""The statistics of a producer or consumer as text, for ``mqwire produce/consume --stats``."""

from __future__ import annotations

import dataclasses
from typing import IO

from mqwire.common.stats import ConsumerStats, LatencyHistogram, PartitionLag, ProducerStats

__all__ = ["write_stats"]


def write_stats(stats: ProducerStats | ConsumerStats, out: IO[str]) -> None:
    """One ``name value`` line per field; the latency as mean and percentiles, the lag one partition a line."""
    kind = "producer" if isinstance(stats, ProducerStats) else "consumer"
    out.write(f"{kind} statistics ({stats.system})\n")
    for field in dataclasses.fields(stats):
        value = getattr(stats, field.name)
        if field.name == "system":
            continue
        if isinstance(value, LatencyHistogram):
            out.write(f"  {field.name:<20} {_latency(value)}\n")
        elif field.name == "lag":
            out.write(f"  {'lag':<20} {_total(stats)}\n")
            for part in value:
                out.write(f"    {_partition(part)}\n")
        elif field.name == "errors":
            text = ", ".join(f"{name} {count}" for name, count in sorted(value.items())) or "none"
            out.write(f"  {'errors':<20} {text}\n")
        elif isinstance(value, tuple):
            out.write(f"  {field.name:<20} {', '.join(map(str, value))}\n")
        else:
            out.write(f"  {field.name:<20} {value if value is not None else '-'}\n")


def _latency(histogram: LatencyHistogram) -> str:
    if not histogram.count:
        return "-"
    parts = [f"mean {histogram.mean_ms:.1f} ms"]
    for q in (0.5, 0.99):
        parts.append(f"p{round(q * 100)} <= {histogram.quantile(q):g} ms")
    return ", ".join(parts)


def _total(stats: ProducerStats | ConsumerStats) -> str:
    total = stats.total_lag if isinstance(stats, ConsumerStats) else None
    return "-" if total is None else str(total)


def _partition(part: PartitionLag) -> str:
    def text(value: int | None) -> str:
        return "-" if value is None else str(value)

    return f"{part.topic}[{part.partition}] lag {text(part.lag)} (position {text(part.position)}, end {text(part.end)})"
