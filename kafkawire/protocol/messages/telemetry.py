"""GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72): KIP-714 client metrics.

The client asks which of its metrics the broker wants and how often, then pushes them, encoded as an
OpenTelemetry ``MetricsData`` protobuf, every ``push_interval_ms``.
"""

from __future__ import annotations

import uuid

from kafkawire.protocol.schema import BOOL, BYTES, INT8, INT16, INT32, STRING, UUID, Array, Request, Response, field


class GetTelemetrySubscriptionsRequest(Request, api_key=71, versions="0", flexible="0+"):
    # The zero uuid on the first request: the broker assigns one.
    client_instance_id: uuid.UUID = field(UUID)


class GetTelemetrySubscriptionsResponse(Response, api_key=71, versions="0", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    client_instance_id: uuid.UUID = field(UUID)
    subscription_id: int = field(INT32)
    accepted_compression_types: list[int] = field(Array(INT8))
    push_interval_ms: int = field(INT32)
    telemetry_max_bytes: int = field(INT32)
    delta_temporality: bool = field(BOOL)
    # Metric name prefixes; [] subscribes nothing, [""] everything.
    requested_metrics: list[str] = field(Array(STRING))


class PushTelemetryRequest(Request, api_key=72, versions="0", flexible="0+"):
    client_instance_id: uuid.UUID = field(UUID)
    subscription_id: int = field(INT32)
    terminating: bool = field(BOOL)
    compression_type: int = field(INT8)
    metrics: bytes = field(BYTES)


class PushTelemetryResponse(Response, api_key=72, versions="0", flexible="0+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
