"""Options are checked when a client, producer, consumer or admin is built, and errors name the option."""

from __future__ import annotations

from typing import Any

import pytest

import kafkawire
from kafkawire import Client, TopicPartition
from mqwire.common.errors import ConfigurationError


def client() -> Client:
    return kafkawire.connect("kafka://127.0.0.1:1")


def test_connect_rejects_a_bad_url_and_unknown_options() -> None:
    with pytest.raises(ConfigurationError, match="kafka://"):
        kafkawire.connect("pulsar://x:1")
    with pytest.raises(ConfigurationError, match="lingerr"):
        kafkawire.connect("kafka://x:1", lingerr=5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="request_timeout_ms"):
        kafkawire.connect("kafka://x:1", request_timeout_ms=0)


def test_producer_defaults_follow_the_java_client() -> None:
    producer = client().producer("t")
    assert producer.acks == -1
    assert producer.idempotent
    assert producer.batch_size == 16384
    assert producer.compression is None
    assert producer.max_request_size == 1048576
    assert producer.buffer_memory == 33554432


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"acks": 2}, ValueError, "acks"),
        ({"acks": "most"}, TypeError, "acks"),
        ({"linger_ms": -1}, ValueError, "linger_ms"),
        ({"linger_ms": "5"}, TypeError, "linger_ms"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_size": True}, TypeError, "batch_size"),
        ({"compression": "brotli"}, ValueError, "compression"),
        ({"compression_type": "rar"}, ValueError, "compression_type"),
        ({"compression": "gzip", "compression_type": "lz4"}, ValueError, "compression"),
        ({"max_request_size": 0}, ValueError, "max_request_size"),
        ({"request_timeout_ms": 0}, ValueError, "request_timeout_ms"),
        ({"delivery_timeout_ms": 1000}, ValueError, "delivery_timeout_ms"),
        ({"retry_backoff_ms": -5}, ValueError, "retry_backoff_ms"),
        ({"retries": -1}, ValueError, "retries"),
        ({"enable_idempotence": True, "acks": 1}, ValueError, "enable_idempotence"),
        ({"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, ValueError, "max_in_flight"),
        ({"enable_idempotence": "yes"}, TypeError, "enable_idempotence"),
        ({"max_in_flight_requests_per_connection": 0}, ValueError, "max_in_flight"),
        ({"buffer_memory": 0}, ValueError, "buffer_memory"),
        ({"max_buffer_size": -1}, ValueError, "max_buffer_size"),
        ({"max_block_ms": -1}, ValueError, "max_block_ms"),
        ({"partitioner": 3}, TypeError, "partitioner"),
    ],
)
def test_producer_rejects_bad_options(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        client().producer("t", **options)


def test_producer_rejects_unknown_options() -> None:
    with pytest.raises(TypeError, match="lingerms"):
        client().producer("t", lingerms=3)  # type: ignore[call-arg]


def test_idempotence_turns_itself_off_when_other_options_conflict() -> None:
    assert not client().producer("t", acks=1).idempotent
    assert not client().producer("t", max_in_flight_requests_per_connection=10).idempotent
    assert client().producer("t", acks="all").idempotent
    assert not client().producer("t", enable_idempotence=False).idempotent


def test_compression_names() -> None:
    for name in ("gzip", "snappy", "lz4", "zstd"):
        assert client().producer("t", compression=name).compression == name
        assert client().producer("t", compression_type=name).compression == name
    assert client().producer("t", compression="none").compression is None


async def test_enqueue_checks_its_arguments_before_buffering() -> None:
    producer = client().producer()
    with pytest.raises(ValueError, match="topic"):
        await producer.enqueue(b"v")
    with pytest.raises(TypeError, match="value"):
        await producer.enqueue("text", topic="t")
    with pytest.raises(TypeError, match="key"):
        await producer.enqueue(b"v", key=5, topic="t")
    with pytest.raises(TypeError, match="header"):
        await producer.enqueue(b"v", headers={"h": "text"}, topic="t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timestamp_ms"):
        await producer.enqueue(b"v", timestamp_ms=1.5, topic="t")  # type: ignore[arg-type]
    with pytest.raises(kafkawire.MessageTooLargeError):
        await producer.enqueue(b"x" * 2_000_000, topic="t")
    await producer.close()


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"start": "middle"}, ValueError, "start"),
        ({"start": 5}, TypeError, "start"),
        ({"isolation_level": "serializable"}, ValueError, "isolation_level"),
        ({"fetch_max_wait_ms": -1}, ValueError, "fetch_max_wait_ms"),
        ({"fetch_min_bytes": "1"}, TypeError, "fetch_min_bytes"),
        ({"fetch_max_bytes": 0}, ValueError, "fetch_max_bytes"),
        ({"max_partition_fetch_bytes": 0}, ValueError, "max_partition_fetch_bytes"),
        ({"max_buffered_records": 0}, ValueError, "max_buffered_records"),
        ({"auto_commit_interval_ms": 0}, ValueError, "auto_commit_interval_ms"),
        ({"enable_auto_commit": 1}, TypeError, "enable_auto_commit"),
        ({"group": ""}, TypeError, "group"),
        ({"partitions": ["x"]}, TypeError, "partitions"),
        ({"partitions": [("other", 0)]}, ValueError, "partitions"),
        ({"partitions": [-1]}, ValueError, "partitions"),
        ({"partitions": []}, ValueError, "partitions"),
    ],
)
def test_consumer_rejects_bad_options(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        client().consumer("t", **options)


def test_consumer_topics_and_partitions() -> None:
    consumer = client().consumer(["a", "b", "a"], partitions=[("a", 0), TopicPartition("b", 2)])
    assert consumer.topics == ["a", "b"]
    assert consumer._requested == [TopicPartition("a", 0), TopicPartition("b", 2)]
    single = client().consumer("a", partitions=[0, 1])
    assert single._requested == [TopicPartition("a", 0), TopicPartition("a", 1)]
    with pytest.raises(ValueError, match="exactly one topic"):
        client().consumer(["a", "b"], partitions=[0])
    assert client().consumer([]).subscription() == set()  # subscribe() or assign() comes later
    with pytest.raises(TypeError, match="topics"):
        client().consumer([1])  # type: ignore[list-item]


async def test_consumer_without_a_group_cannot_commit() -> None:
    consumer = client().consumer("t")
    with pytest.raises(ConfigurationError, match="group"):
        await consumer.commit()


def test_admin_options() -> None:
    with pytest.raises(ValueError, match="timeout_ms"):
        client().admin(timeout_ms=0)
    with pytest.raises(ValueError, match="num_partitions"):
        kafkawire.NewTopic("t", num_partitions=0)
    with pytest.raises(TypeError, match="name"):
        kafkawire.NewTopic("")


def test_the_option_typeddicts_live_in_options_and_are_the_ones_exported() -> None:
    import kafkawire.client
    import kafkawire.options
    from mqwire.common.errors import UnknownOptionError

    for name in kafkawire.options.__all__:
        declared = getattr(kafkawire.options, name)
        assert getattr(kafkawire, name) is declared
        assert getattr(kafkawire.client, name) is declared
    assert kafkawire.UnknownOptionError is kafkawire.client.UnknownOptionError is UnknownOptionError


@pytest.mark.parametrize(
    ("config", "declared", "factory", "given"),
    [
        ("ProducerConfig", "ProducerOptions", "kafkawire.producer:Producer", {}),
        ("ConsumerConfig", "ConsumerOptions", "kafkawire.consumer:Consumer", {}),
        ("ShareConsumerConfig", "ShareConsumerOptions", "kafkawire.share.consumer:ShareConsumer", {"group": "g"}),
        ("AdminConfig", "AdminOptions", "kafkawire.admin:Admin", {}),
    ],
)
def test_each_factory_takes_one_frozen_config_declaring_exactly_its_typeddict(
    config: str, declared: str, factory: str, given: dict[str, Any]
) -> None:
    # The option list is written once: the config's fields, tied to the TypedDict; the class takes no keywords.
    import dataclasses
    import importlib
    import inspect

    import kafkawire.options
    from mqwire.common.options import build_config, defaults

    checked = getattr(kafkawire.options, config)
    typed = getattr(kafkawire.options, declared)
    assert set(defaults(checked)) == typed.__required_keys__ | typed.__optional_keys__
    module, _, name = factory.partition(":")
    made = getattr(importlib.import_module(module), name)
    assert not [p for p in inspect.signature(made).parameters.values() if p.kind is p.KEYWORD_ONLY]
    built = build_config(checked, "factory", given)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.x = 1


def test_the_factories_defaults_are_the_documented_ones() -> None:
    from kafkawire.options import AdminConfig, ConsumerConfig, ProducerConfig, ShareConsumerConfig
    from mqwire.common.options import defaults

    producer = defaults(ProducerConfig)
    assert (producer["acks"], producer["linger_ms"], producer["batch_size"], producer["delivery_timeout_ms"]) == (
        "all", 5, None, 120_000
    )
    assert (producer["retries"], producer["buffer_memory"], producer["max_block_ms"]) == (2**31 - 1, 33_554_432, 60_000)
    consumer = defaults(ConsumerConfig)
    assert (consumer["start"], consumer["fetch_max_wait_ms"]) == ("latest", 500)
    assert consumer["fetch_max_bytes"] == 52_428_800
    assert consumer["partition_assignment_strategy"] == ("range", "roundrobin")
    assert (consumer["session_timeout_ms"], consumer["heartbeat_interval_ms"]) == (45_000, 3_000)
    assert consumer["fetch_max_decompressed_bytes"] == 67_108_864
    share = defaults(ShareConsumerConfig)
    assert (share["share_acknowledgement_mode"], share["max_poll_records"], share["share_acquire_mode"]) == (
        "implicit", 500, "batch_optimized"
    )
    assert defaults(AdminConfig) == {"timeout_ms": 60_000}


def test_the_producer_reads_its_config_in_seconds_and_resolves_aliases_once() -> None:
    from kafkawire.options import ProducerConfig
    from mqwire.common.options import build_config

    config = build_config(ProducerConfig, "producer", {"linger_ms": 20, "max_buffer_size": 1 << 20})
    assert (config.linger, config.request_timeout, config.max_block) == (0.02, 30.0, 60.0)
    assert config.buffer_memory == 1 << 20 and config.idempotent
    producer = client().producer("t", max_buffer_size=1 << 20, compression_type="lz4", transactional_id="tx")
    assert (producer.buffer_memory, producer.compression, producer.idempotent, producer.max_block) == (
        1 << 20, "lz4", True, 60.0
    )
    assert producer._accumulator.linger == 0.005
    with pytest.raises(ConfigurationError, match="transactional_id needs enable_idempotence"):
        client().producer("t", transactional_id="tx", enable_idempotence=False)
    with pytest.raises(ConfigurationError, match="needs acks='all'"):
        client().producer("t", transactional_id="tx", acks=1)
    with pytest.raises(ConfigurationError, match="needs retries > 0"):
        client().producer("t", enable_idempotence=True, retries=0)
    # The bound is inclusive: exactly linger_ms + request_timeout_ms is allowed.
    assert client().producer("t", linger_ms=5, request_timeout_ms=30_000, delivery_timeout_ms=30_005)
    with pytest.raises(ConfigurationError, match="retry_backoff_max_ms"):
        client().producer("t", retry_backoff_ms=500, retry_backoff_max_ms=100)


def test_the_consumer_resolves_start_and_the_rebalance_timeout_from_its_config() -> None:
    consumer = client().consumer("t", auto_offset_reset="earliest", group="g", max_poll_interval_ms=9_000)
    assert consumer.start_from == "earliest" and consumer._rebalance_timeout_ms == 9_000
    assert client().consumer("t", rebalance_timeout_ms=7_000)._rebalance_timeout_ms == 7_000
    with pytest.raises(ConfigurationError, match="disagree"):
        client().consumer("t", start="earliest", auto_offset_reset="latest")
    with pytest.raises(ConfigurationError, match="exclude each other"):
        client().consumer(pattern="t.*", partitions=[("t", 0)])
    with pytest.raises(ConfigurationError, match="lower than session_timeout_ms"):
        client().consumer("t", heartbeat_interval_ms=10_000, session_timeout_ms=10_000)
    assert client().consumer("t", group_protocol="consumer", heartbeat_interval_ms=10_000, session_timeout_ms=10_000)
    with pytest.raises(ConfigurationError, match="partition_assignment_strategy"):
        client().consumer("t", partition_assignment_strategy=["range", "fastest"])
    with pytest.raises(ConfigurationError, match="pattern"):
        client().consumer(pattern="(")
    # A generator of partitions is read once, by the config.
    assert client().consumer("t", partitions=(p for p in (0, 1)))._requested == [
        TopicPartition("t", 0), TopicPartition("t", 1)
    ]


def test_connect_checks_its_options_into_one_frozen_config_with_one_default_each() -> None:
    import dataclasses

    from kafkawire.options import ClientConfig, ClientOptions
    from mqwire.common.options import build_config, defaults

    assert set(defaults(ClientConfig)) == ClientOptions.__optional_keys__
    config = build_config(ClientConfig, "connect", {})
    assert (config.client_id, config.request_timeout, config.metadata_max_age, config.retry_backoff_max) == (
        "mqwire", 30.0, 300.0, 1.0
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.client_id = "x"  # type: ignore[misc]
    session = kafkawire.connect("kafka://x:1", connect_timeout_ms=2500, client_id="app")._session
    assert (session.connect_timeout, session.client_id, session.request_timeout) == (2.5, "app", 30.0)
    with pytest.raises(ConfigurationError, match="retry_backoff_max_ms must not be below"):
        kafkawire.connect("kafka://x:1", retry_backoff_ms=500, retry_backoff_max_ms=100)
    with pytest.raises(ConfigurationError, match="ssl_cafile needs a kafka\\+ssl://"):
        kafkawire.connect("kafka://x:1", ssl_cafile="ca.pem")
