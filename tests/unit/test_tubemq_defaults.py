"""tubemqwire's defaults that shape throughput, latency and memory, as the porting guide states them."""

from __future__ import annotations

from mqwire.common.options import build_config
from tubemqwire.options import ClientConfig, ConsumerConfig, ProducerConfig


def test_the_producer_defaults_are_these() -> None:
    # A change to any of them is deliberate: docs/porting.md's "Defaults that differ (TubeMQ)" states them.
    made = build_config(ProducerConfig, "producer", {})
    assert made.max_in_flight == 1000
    assert made.retries == 3
    assert made.retry_backoff == 0.100
    assert made.metadata_timeout == 30.0
    assert not made.checksum


def test_the_consumer_defaults_are_these() -> None:
    # A change to any of them is deliberate: docs/porting.md's "Defaults that differ (TubeMQ)" states them.
    made = build_config(ConsumerConfig, "consumer", {})
    assert made.start == "latest"
    assert made.confirm_timeout == 60.0
    assert made.msg_not_found_wait == 0.400
    assert made.rebalance_confirm_wait == 3.0


def test_the_client_defaults_are_these() -> None:
    # A change to any of them is deliberate: docs/porting.md's "Defaults that differ (TubeMQ)" states them.
    made = build_config(ClientConfig, "client", {})
    assert made.request_timeout == 10.0
    assert made.connect_timeout == 10.0
    assert made.heartbeat_interval == 13.0
