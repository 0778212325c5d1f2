"""Kafka client telemetry (KIP-714): the client's metrics pushed to the brokers that ask for them.

``measures`` holds the timings the statistics lack (request, queue, fetch and commit latencies), ``points``
turns them and the statistics into named metric points, ``otlp`` encodes points as an OpenTelemetry
``MetricsData`` protobuf (the ``telemetry`` extra), and ``reporter`` asks the broker for a subscription and
pushes at the interval it gives.
"""
