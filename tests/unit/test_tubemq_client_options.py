"""Options of the TubeMQ client, producer and consumer are checked when the object is built, and the
partition router's choices."""

from __future__ import annotations

import random
from typing import Any

import pytest

import tubemqwire
from mqwire.common.errors import ConfigurationError, UnknownOptionError
from mqwire.common.options import defaults
from tubemqwire.errors import TopicNoPartitionError
from tubemqwire.options import ClientBalanceConsumerConfig, ClientConfig, ConsumerConfig, ProducerConfig
from tubemqwire.protocol.metadata import BrokerInfo, PartitionInfo
from tubemqwire.routing import PartitionRouter, key_index, sort_partitions

URL = "tubemq://127.0.0.1:8715"


# --------------------------------------------------------------------------------------------- client
@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("kafka://127.0.0.1:9092", ConfigurationError),
        ("tubemq://", ConfigurationError),
        ("tubemq://host:99999", ConfigurationError),
        (b"tubemq://host:8715", TypeError),
    ],
)
def test_bad_urls(url: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        tubemqwire.connect(url)


def test_url_forms() -> None:
    client = tubemqwire.connect("tubemq://m1,m2:9000")
    assert client._session.master.addresses == [("m1", 8715), ("m2", 9000)]
    assert client._session.default_broker_port == 8123
    tls = tubemqwire.connect("tubemq+ssl://m1")
    assert tls._session.master.addresses == [("m1", 8716)]
    assert tls._session.default_broker_port == 8124


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"request_timeout_ms": 0}, ValueError, "request_timeout_ms"),
        ({"request_timeout_ms": "10"}, TypeError, "request_timeout_ms"),
        ({"connect_timeout_ms": -1}, ValueError, "connect_timeout_ms"),
        ({"heartbeat_interval_ms": 60_000}, ValueError, "heartbeat_interval_ms"),
        ({"heartbeat_interval_ms": True}, TypeError, "heartbeat_interval_ms"),
        ({"username": " "}, ValueError, "username"),
        ({"username": 5}, TypeError, "username"),
        ({"password": "secret"}, ValueError, "password"),
        ({"ssl_context": "yes"}, TypeError, "ssl_context"),
        ({"linger_ms": 5}, TypeError, "linger_ms"),
    ],
)
def test_bad_client_options(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        tubemqwire.connect(URL, **options)


# ------------------------------------------------------------------------------------------- producer
@pytest.mark.parametrize(
    ("topics", "options", "error", "name"),
    [
        ("", {}, ValueError, "topic"),
        ("9lives", {}, ValueError, "topic"),
        ("has-dash", {}, ValueError, "topic"),
        ("x" * 65, {}, ValueError, "topic"),
        ([], {}, ValueError, "topics"),
        (42, {}, TypeError, "topics"),
        ([b"orders"], {}, TypeError, "topic"),
        ("orders", {"max_in_flight": 0}, ValueError, "max_in_flight"),
        ("orders", {"retries": -1}, ValueError, "retries"),
        ("orders", {"retry_backoff_ms": -5}, ValueError, "retry_backoff_ms"),
        ("orders", {"metadata_timeout_ms": 0}, ValueError, "metadata_timeout_ms"),
        ("orders", {"checksum": 1}, TypeError, "checksum"),
        ("orders", {"compression": "lz4"}, TypeError, "compression"),
    ],
)
def test_bad_producer_options(topics: Any, options: dict[str, Any], error: type[Exception], name: str) -> None:
    client = tubemqwire.connect(URL)
    with pytest.raises(error, match=name):
        client.producer(topics, **options)


def test_producer_topics_are_sorted_and_unique() -> None:
    producer = tubemqwire.connect(URL).producer(["b_topic", "a_topic", "b_topic"])
    assert producer.topics == ("a_topic", "b_topic")


async def test_sending_before_start_is_refused() -> None:
    producer = tubemqwire.connect(URL).producer("orders")
    with pytest.raises(tubemqwire.ClosedError, match="not started"):
        await producer.send(b"x")


# -------------------------------------------------------------------------------------- every factory
def test_unknown_options_are_configuration_errors_with_the_closest_name() -> None:
    with pytest.raises(UnknownOptionError, match=r"connect: unknown option 'request_timeout' \(did you mean request_t"):
        tubemqwire.connect(URL, request_timeout=5)  # type: ignore[call-arg]
    client = tubemqwire.connect(URL)
    with pytest.raises(UnknownOptionError, match=r"producer: unknown option 'max_inflight' \(did you mean max_in_f"):
        client.producer("orders", max_inflight=5)  # type: ignore[call-arg]
    with pytest.raises(UnknownOptionError, match=r"consumer: unknown option 'gruop' \(did you mean group\?\)"):
        client.consumer("orders", gruop="billing")  # type: ignore[call-arg]
    with pytest.raises(UnknownOptionError, match=r"client_balance_consumer: unknown option 'node' \(did you mean"):
        client.client_balance_consumer("orders", node=1)  # type: ignore[call-arg]
    assert issubclass(UnknownOptionError, ConfigurationError)
    assert tubemqwire.UnknownOptionError is UnknownOptionError


def test_each_option_has_its_one_default_in_the_documented_unit() -> None:
    assert defaults(ClientConfig) == {
        "request_timeout_ms": 10_000, "connect_timeout_ms": 10_000, "heartbeat_interval_ms": 13_000,
        "username": None, "password": None, "ssl_context": None,
    }
    assert defaults(ProducerConfig) == {
        "key_serializer": None, "value_serializer": None, "max_in_flight": 1000, "retries": 3,
        "retry_backoff_ms": 100, "metadata_timeout_ms": 30_000, "checksum": False,
    }
    assert defaults(ConsumerConfig) == {
        "group": None, "start": "latest", "key_deserializer": None, "value_deserializer": None,
        "msg_types": None, "confirm_timeout_ms": 60_000, "msg_not_found_wait_ms": 400,
        "rebalance_confirm_wait_ms": 3_000,
    }
    assert defaults(ClientBalanceConsumerConfig) == {
        **defaults(ConsumerConfig), "partitions": None, "source_count": -1, "node_id": -1,
    }
    client = tubemqwire.connect(URL)
    session = client._session
    assert (session.request_timeout, session.connect_timeout, session.heartbeat_interval) == (10.0, 10.0, 13.0)
    producer = client.producer("orders")
    assert (producer.max_in_flight, producer.retries, producer.retry_backoff, producer.metadata_timeout) == (
        1000, 3, 0.1, 30.0
    )
    consumer = client.consumer("orders", confirm_timeout_ms=1500)
    assert (consumer.start_position, consumer.confirm_timeout, consumer.no_data_wait, consumer.rebalance_wait) == (
        "latest", 1.5, 0.4, 3.0
    )


# ------------------------------------------------------------------------------------------- consumer
@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"group": ""}, ValueError, "group"),
        ({"group": "1abc"}, ValueError, "group"),
        ({"group": "a b"}, ValueError, "group"),
        ({"group": 7}, TypeError, "group"),
        ({"group": "g1", "start": "beginning"}, ValueError, "start"),
        ({"group": "g1", "msg_types": 5}, TypeError, "msg_types"),
        ({"group": "g1", "msg_types": ["a,b"]}, ValueError, "msg_types"),
        ({"group": "g1", "msg_types": [""]}, ValueError, "msg_types"),
        ({"group": "g1", "msg_types": ["t" * 256]}, ValueError, "msg_types"),
        ({"group": "g1", "msg_types": {"other": ["a"]}}, ValueError, "msg_types"),
        ({"group": "g1", "confirm_timeout_ms": 0}, ValueError, "confirm_timeout_ms"),
        ({"group": "g1", "msg_not_found_wait_ms": "1"}, TypeError, "msg_not_found_wait_ms"),
        ({"group": "g1", "rebalance_confirm_wait_ms": -1}, ValueError, "rebalance_confirm_wait_ms"),
        ({"group": "g1", "subscription_type": "shared"}, TypeError, "subscription_type"),
    ],
)
def test_bad_consumer_options(options: dict[str, Any], error: type[Exception], name: str) -> None:
    client = tubemqwire.connect(URL)
    with pytest.raises(error, match=name):
        client.consumer("orders", **options)


def test_msg_type_filters() -> None:
    client = tubemqwire.connect(URL)
    every = client.consumer(["orders", "refunds"], group="billing", msg_types="paid")
    assert every.msg_types == {"orders": {"paid"}, "refunds": {"paid"}}
    some = client.consumer(["orders", "refunds"], group="billing", msg_types={"orders": ["a", "b", "a"]})
    assert some.msg_types == {"orders": {"a", "b"}}
    assert client.consumer("orders", group="billing").msg_types == {}


async def test_reading_before_start_is_refused() -> None:
    consumer = tubemqwire.connect(URL).consumer("orders", group="billing")
    with pytest.raises(tubemqwire.ClosedError, match="not started"):
        await consumer.getone()


async def test_closed_client_makes_nothing() -> None:
    client = tubemqwire.connect(URL)
    await client.close()
    with pytest.raises(tubemqwire.ClosedError):
        client.producer("orders")
    with pytest.raises(tubemqwire.ClosedError):
        await client.start()


# -------------------------------------------------------------------------------------------- routing
def partitions(count: int, brokers: int = 1) -> tuple[PartitionInfo, ...]:
    return sort_partitions(
        [
            PartitionInfo(BrokerInfo(b, f"10.0.0.{b}", 8123), "orders", p)
            for b in range(1, brokers + 1)
            for p in range(count)
        ]
    )


def test_round_robin_visits_every_partition_in_turn() -> None:
    router = PartitionRouter(rng=random.Random(3))
    parts = partitions(3, brokers=2)
    chosen = [router.choose("orders", parts).key for _ in range(12)]
    assert sorted(chosen[:6]) == sorted(p.key for p in parts)
    assert chosen[:6] == chosen[6:]


def test_round_robin_is_per_topic() -> None:
    router = PartitionRouter(rng=random.Random(1))
    parts = partitions(4)
    first = router.choose("orders", parts)
    router.choose("other", parts)
    assert router.choose("orders", parts) == parts[(parts.index(first) + 1) % 4]


def test_key_picks_a_stable_partition() -> None:
    router = PartitionRouter()
    parts = partitions(5)
    picks = {router.choose("orders", parts, b"customer-42").key for _ in range(10)}
    assert picks == {parts[key_index(b"customer-42", 5)].key}
    # Another router (another producer) with the same view agrees.
    assert PartitionRouter().choose("orders", parts, b"customer-42").key in picks
    spread = {router.choose("orders", parts, b"k%d" % i).key for i in range(200)}
    assert len(spread) == 5


def test_failed_partitions_are_avoided() -> None:
    router = PartitionRouter(rng=random.Random(0))
    parts = partitions(3)
    avoid = {parts[0].key, parts[1].key}
    assert all(router.choose("orders", parts, avoid=avoid) == parts[2] for _ in range(5))
    # All of them failed: still an answer.
    assert router.choose("orders", parts, avoid={p.key for p in parts}) in parts


def test_penalized_partitions_are_skipped_for_a_while() -> None:
    now = [100.0]
    router = PartitionRouter(rng=random.Random(0), clock=lambda: now[0])
    parts = partitions(2)
    router.penalize(parts[0], 3.0)
    assert {router.choose("orders", parts).key for _ in range(4)} == {parts[1].key}
    router.penalize(parts[1], 3.0)
    assert router.choose("orders", parts) in parts  # everything penalized: still an answer
    now[0] += 3.5
    assert {router.choose("orders", parts).key for _ in range(4)} == {p.key for p in parts}


def test_no_partition_is_a_typed_error() -> None:
    with pytest.raises(TopicNoPartitionError):
        PartitionRouter().choose("orders", ())


def test_a_member_carries_the_session_settings_every_membership_needs() -> None:
    session = tubemqwire.connect("tubemq+ssl://m1", heartbeat_interval_ms=5000, request_timeout_ms=2000)._session
    member = session.member("c1", ["b_topic", "a_topic", "b_topic"], session.credentials(), group="g",
                            filters={"a_topic": ["y", "x"]})
    assert (member.topics, member.filters, member.group) == (("a_topic", "b_topic"), {"a_topic": ("x", "y")}, "g")
    assert (member.interval, member.request_timeout, member.default_broker_port) == (5.0, 2.0, 8124)
    assert session.member("p1", ["t"], session.credentials()).filters == {}
