"""pulsarwire's defaults that shape throughput, latency and memory, as the porting guide states them."""

from __future__ import annotations

from mqwire.common.options import build_config
from pulsarwire.options import ClientConfig, ConsumerConfig, ProducerConfig
from pulsarwire.protocol.pulsar_api_pb2 import CommandSubscribe


def test_the_producer_defaults_are_these() -> None:
    # A change to any of them is deliberate: docs/porting.md's "Defaults that differ (Pulsar)" states them.
    made = ProducerConfig.build({})
    assert made.batching_enabled
    assert made.batching_max_messages == 1000
    assert made.batching_max_allowed_size_in_bytes == 131_072
    assert made.batching_max_publish_delay == 0.010
    assert made.max_pending_messages == 1000
    assert made.block_if_queue_full
    assert made.send_timeout == 30.0
    assert made.compression_type == "NONE"
    assert not made.chunking_enabled
    assert made.chunk_max_message_size is None
    assert made.auto_update_partitions_interval == 60.0


def test_the_consumer_defaults_are_these() -> None:
    # A change to any of them is deliberate: docs/porting.md's "Defaults that differ (Pulsar)" states them.
    made = ConsumerConfig.build({"group": "g"})
    assert made.receiver_queue_size == 1000
    assert made.max_total_receiver_queue_size_across_partitions == 50_000
    assert made.ack_group_time == 0.100
    assert made.ack_group_max_size == 1000
    assert made.ack_timeout == 0
    assert made.negative_ack_redelivery_delay == 60.0
    assert not made.batch_index_ack_enabled
    assert made.pattern_auto_discovery_period == 60.0
    assert made.auto_update_partitions_interval == 60.0
    assert made.subscription_type == CommandSubscribe.Exclusive
    assert made.initial_position == CommandSubscribe.Latest


def test_the_client_memory_limit_is_this() -> None:
    # A change to it is deliberate: docs/porting.md's "Defaults that differ (Pulsar)" states it.
    assert build_config(ClientConfig, "client", {}).memory_limit_bytes == 67_108_864
