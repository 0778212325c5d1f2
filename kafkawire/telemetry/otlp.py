"""Points encoded as an OpenTelemetry ``MetricsData`` protobuf, the payload of PushTelemetry.

Imported only when a broker offers client telemetry: it needs the ``opentelemetry-proto`` package (the
``telemetry`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    Gauge,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from kafkawire.telemetry.points import Point

__all__ = ["encode"]


def _attributes(pairs: Sequence[tuple[str, str]]) -> list[KeyValue]:
    return [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in pairs]


def encode(
    points: Sequence[Point],
    *,
    resource: Mapping[str, str],
    scope_version: str,
    start_ns: int,
    now_ns: int,
    delta: bool,
) -> bytes:
    """The serialized ``MetricsData``: one metric per name, its data points by attributes.

    ``start_ns`` begins the interval the running totals cover (the previous push with delta temporality,
    the client's start otherwise); gauges are values at ``now_ns``.
    """
    temporality = (
        AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
        if delta
        else AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    )
    metrics: dict[str, Metric] = {}
    for point in points:
        metric = metrics.get(point.name)
        if metric is None:
            metric = metrics[point.name] = Metric(name=point.name)
            if point.monotonic:
                metric.sum.CopyFrom(Sum(aggregation_temporality=temporality, is_monotonic=True))
            else:
                metric.gauge.CopyFrom(Gauge())
        data = NumberDataPoint(attributes=_attributes(point.attributes), time_unix_nano=now_ns)
        if point.monotonic:
            data.start_time_unix_nano = start_ns
            data.as_int = int(point.value)
            metric.sum.data_points.append(data)
        else:
            data.as_double = float(point.value)
            metric.gauge.data_points.append(data)
    payload = MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=Resource(attributes=_attributes(sorted(resource.items()))),
                scope_metrics=[
                    ScopeMetrics(
                        scope=InstrumentationScope(name="kafkawire", version=scope_version),
                        metrics=list(metrics.values()),
                    )
                ],
            )
        ]
    )
    return payload.SerializeToString()
