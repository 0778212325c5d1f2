"""The blocking API (``kafkawire.sync``, ``pulsarwire.sync``, ``tubemqwire.sync``) against the session's real
brokers: a round trip with exact contents, a producer shared by a pool of 8 threads with every delivery
checked, a receive on an empty topic ending in the typed timeout, Ctrl-C during a blocking receive, and the
Kafka and Pulsar admins making, describing and deleting a topic.

The tests are plain functions (the blocking API is for code without an event loop), so they run once, not per
event loop.
"""

from __future__ import annotations

import concurrent.futures
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

import kafkawire.errors
import kafkawire.sync
import pulsarwire.errors
import pulsarwire.sync
import tubemqwire.sync
from kafkawire.metadata import TopicPartition
from mqwire.common.errors import ClosedError, ConfigurationError, ReceiveTimeoutError, SerializationError
from mqwire.testing.endpoints import KafkaBroker as KafkaBrokerEndpoint
from mqwire.testing.endpoints import PulsarBroker as PulsarBrokerEndpoint
from mqwire.testing.endpoints import TubeMQBroker as TubeMQBrokerEndpoint
from mqwire.testing.tubemq_spares import FreshTopics
from tests.interrupts import ctrl_c_after

pytestmark = pytest.mark.integration

# Liveness bounds only (generous, for a loaded machine): a first message may wait for a group's assignment
# (TubeMQ: the master's balancing round); nothing here measures speed.
FIRST_MESSAGE = {"kafka": 30.0, "pulsar": 30.0, "tubemq": 60.0}
OPTIONS: dict[str, dict[str, Any]] = {"tubemq": {"heartbeat_interval_ms": 1000}}


@dataclass
class System:
    """One system: its blocking module, its broker's URL and fresh topics."""

    name: str
    sync: ModuleType
    url: str
    tubemq_topics: dict[str, str] = field(default_factory=dict)

    def topic(self, role: str) -> str:
        """A topic no other test uses (TubeMQ: one of the fresh deployed topics taken for this module)."""
        if self.name == "tubemq":
            return self.tubemq_topics[role]
        return f"sync-{role}-{secrets.token_hex(4)}"

    def connect(self) -> Any:
        return self.sync.connect(self.url, **OPTIONS.get(self.name, {}))


@pytest.fixture(scope="module")
def tubemq_topics(request: pytest.FixtureRequest) -> dict[str, str]:
    """This module's TubeMQ topics, taken only when a TubeMQ test runs."""
    fresh: FreshTopics = request.getfixturevalue("tubemq_fresh_topics")
    return fresh.take({"roundtrip": 2, "shared": 2, "empty": 1, "interrupt": 1, "balance": 2})


@pytest.fixture(params=["kafka", "pulsar", "tubemq"])
def system(request: pytest.FixtureRequest) -> System:
    name: str = request.param
    broker = request.getfixturevalue(f"{name}_broker")
    module = {"kafka": kafkawire.sync, "pulsar": pulsarwire.sync, "tubemq": tubemqwire.sync}[name]
    topics = request.getfixturevalue("tubemq_topics") if name == "tubemq" else {}
    return System(name, module, broker.url, topics)


@pytest.fixture
def client(system: System) -> Iterator[Any]:
    before = set(threading.enumerate())
    with system.connect() as connected:
        yield connected
    assert set(threading.enumerate()) <= before  # closing the client ended its loop thread


def _group() -> str:
    return f"sync_{secrets.token_hex(4)}"


def test_round_trip_keeps_values_keys_and_headers(system: System, client: Any) -> None:
    topic = system.topic("roundtrip")
    sent = [(b"v%d" % i, b"k%d" % (i % 2), {"h": b"x%d" % i}) for i in range(6)]
    with client.consumer(topic, group=_group(), start="earliest") as consumer:
        with client.producer(topic) as producer:
            receipts = [producer.send(value, key=key, headers=headers) for value, key, headers in sent[:3]]
            futures = [producer.enqueue(value, key=key, headers=headers) for value, key, headers in sent[3:]]
            producer.flush(timeout=30)
            assert all(future.done() for future in futures)
            receipts += [future.result() for future in futures]
        assert all(receipt.topic.endswith(topic) for receipt in receipts)  # Pulsar: the complete name
        got = [consumer.receive(timeout=FIRST_MESSAGE[system.name])]
        while len(got) < len(sent):
            got.append(consumer.receive(timeout=30))
        for message in got:
            consumer.ack(message)
        if system.name == "kafka":
            consumer.commit()
    # Order is kept per key (partition); across partitions it is not, so compare per key and as a whole.
    received = sorted((m.value, m.key, dict(m.headers)) for m in got)
    assert received == sorted(sent)
    for key in (b"k0", b"k1"):
        assert [m.value for m in got if m.key == key] == [v for v, k, _ in sent if k == key]


def test_eight_threads_share_one_producer_and_every_delivery_is_checked(system: System, client: Any) -> None:
    topic = system.topic("shared")
    threads, per_thread = 8, 100
    with client.consumer(topic, group=_group(), start="earliest") as consumer:
        with client.producer(topic) as producer:

            def produce(thread: int) -> list[tuple[bytes, Any]]:
                values = [b"%d-%d" % (thread, i) for i in range(per_thread)]
                futures = [producer.enqueue(value) for value in values]
                return [(value, future.result(timeout=60)) for value, future in zip(values, futures, strict=True)]

            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                delivered = [pair for batch in pool.map(produce, range(threads)) for pair in batch]
        expected = {b"%d-%d" % (t, i) for t in range(threads) for i in range(per_thread)}
        assert {value for value, _ in delivered} == expected
        assert all(receipt.topic.endswith(topic) for _, receipt in delivered)
        got: list[bytes] = []
        deadline = FIRST_MESSAGE[system.name]
        while len(got) < len(expected):
            batch = consumer.getmany(timeout=deadline, max_records=500)
            assert batch, f"{len(got)} of {len(expected)} received"
            got += [message.value for message in batch]
            for message in batch:
                consumer.ack(message)
            deadline = 30
    assert sorted(got) == sorted(expected)
    for thread in range(threads):  # one thread's records keep their order (one partition per key-less burst
        # is not promised, so only the values' set is compared across partitions)
        assert {v for v in got if v.startswith(b"%d-" % thread)} == {b"%d-%d" % (thread, i) for i in range(per_thread)}


def test_receive_on_an_empty_topic_raises_the_typed_timeout(system: System, client: Any) -> None:
    with client.consumer(system.topic("empty"), group=_group(), start="latest") as consumer:
        started = time.monotonic()
        with pytest.raises(ReceiveTimeoutError):
            consumer.receive(timeout=1)
        waited = time.monotonic() - started
        assert consumer.getmany(timeout=0.2) == []
    assert isinstance(ReceiveTimeoutError("x"), TimeoutError)
    # It waited the timeout, and it ended: the upper bound is liveness only (generous for a loaded machine).
    assert 0.9 <= waited < 30


def test_ctrl_c_interrupts_a_blocking_receive_and_the_consumer_goes_on(system: System, client: Any) -> None:
    topic = system.topic("interrupt")
    now = threading.Event()
    now.set()
    with client.consumer(topic, group=_group(), start="earliest") as consumer, client.producer(topic) as producer:
        with ctrl_c_after(now, delay=1.0) as ctrl_c, pytest.raises(KeyboardInterrupt), ctrl_c.armed():
            consumer.receive()  # no timeout: only the interrupt ends it
        producer.send(b"after the interrupt")
        message = consumer.receive(timeout=FIRST_MESSAGE[system.name])
        assert message.value == b"after the interrupt"
        consumer.ack(message)


def test_a_pulsar_reader_reads_from_earliest_seeks_back_and_knows_when_it_is_done(
    pulsar_broker: PulsarBrokerEndpoint,
) -> None:
    topic = f"persistent://public/default/sync-reader-{secrets.token_hex(4)}"
    with pulsarwire.sync.connect(pulsar_broker.url) as client:
        with client.producer(topic) as producer:
            receipts = [producer.send(b"r%d" % i) for i in range(3)]
        with client.reader(topic, start="earliest") as reader:
            assert [reader.receive(timeout=30).value for _ in range(3)] == [b"r0", b"r1", b"r2"]
            assert not reader.has_message_available()
            reader.seek(receipts[1])  # the broker resets the cursor to that message: it is read again
            assert reader.has_message_available()
            assert [reader.receive(timeout=30).value for _ in range(2)] == [b"r1", b"r2"]
            with pytest.raises(TypeError, match="acknowledges nothing"):
                reader.ack(receipts[0])  # type: ignore[arg-type]


def test_a_tubemq_client_balanced_consumer_reads_the_partition_it_connects(
    tubemq_broker: TubeMQBrokerEndpoint, tubemq_topics: dict[str, str]
) -> None:
    topic = tubemq_topics["balance"]
    with tubemqwire.sync.connect(tubemq_broker.url, **OPTIONS["tubemq"]) as client:
        with client.producer(topic) as producer:
            receipts = [producer.send(b"b%d" % i) for i in range(10)]
        chosen = receipts[0].partition_key
        expected = [b"b%d" % i for i, receipt in enumerate(receipts) if receipt.partition_key == chosen]
        with client.client_balance_consumer(topic, group=_group(), start="earliest") as consumer:
            metadata = consumer.partition_metadata()
            assert {r.partition_key for r in receipts} <= set(metadata) and metadata[chosen]
            consumer.connect_partition(chosen, 0)
            assert consumer.assignment == {chosen} and chosen in consumer.offsets()
            got = [consumer.receive(timeout=FIRST_MESSAGE["tubemq"]) for _ in expected]
            for message in got:
                consumer.ack(message)
            consumer.disconnect_partition(chosen)
            assert consumer.assignment == frozenset()
    assert [message.value for message in got] == expected


def test_a_kafka_admin_creates_describes_and_deletes_a_topic_a_record_went_through(
    kafka_broker: KafkaBrokerEndpoint,
) -> None:
    topic = f"sync-admin-{secrets.token_hex(4)}"
    before = set(threading.enumerate())
    with kafkawire.sync.connect(kafka_broker.url) as client:
        with client.admin() as admin:
            admin.create_topic(topic, partitions=2)
            assert topic in admin.list_topics()
            with pytest.raises(kafkawire.errors.TopicAlreadyExistsError):  # the async error, raised here
                admin.create_topic(topic, partitions=2)
            with client.producer(topic) as producer:
                receipt = producer.send(b"v", key=b"k")
            with client.consumer(topic, group=_group(), start="earliest") as consumer:
                assert consumer.receive(timeout=FIRST_MESSAGE["kafka"]).value == b"v"
            [description] = admin.describe_topics([topic])
            assert description.name == topic
            assert [p.partition for p in description.partitions] == [0, 1]
            latest = admin.list_offsets({(topic, receipt.partition): "latest"})
            assert latest[TopicPartition(topic, receipt.partition)].offset == receipt.offset + 1
            admin.delete_topics([topic])
            assert topic not in admin.list_topics()
        with pytest.raises(ClosedError):
            admin.list_topics()
        held = client.admin()  # left open: the client closes it
    assert held.closed
    with pytest.raises(ClosedError):
        held.describe_cluster()
    assert set(threading.enumerate()) <= before


def test_a_pulsar_admin_creates_lists_and_deletes_a_topic_a_message_went_to(
    pulsar_broker: PulsarBrokerEndpoint,
) -> None:
    name = f"sync-admin-{secrets.token_hex(4)}"
    before = set(threading.enumerate())
    with pulsarwire.sync.connect(pulsar_broker.url, admin_url=pulsar_broker.admin_url) as client:
        with pytest.raises(ConfigurationError, match="admin_url"):  # refused in the caller's thread
            client.admin(admin_url=None)
        with client.admin() as admin:
            topic = admin.create_topic(name, 2)
            assert topic == f"persistent://public/default/{name}"
            assert topic in admin.list_partitioned_topics("public/default")
            assert admin.partitions(topic) == 2
            with pytest.raises(pulsarwire.errors.TopicAlreadyExistsError):  # the async error, raised here
                admin.create_topic(name, 2)
            with client.producer(topic) as producer:
                producer.send(b"v")
            admin.delete_topic(topic)
            assert topic not in admin.list_partitioned_topics("public/default")
        with pytest.raises(ClosedError):
            admin.partitions(topic)
        held = client.admin()  # left open: the client closes it
    assert held.closed
    with pytest.raises(ClosedError):
        held.list_topics()
    assert set(threading.enumerate()) <= before


def test_kafka_transactions_commit_and_abort_through_the_blocking_producer(
    kafka_broker: KafkaBrokerEndpoint,
) -> None:
    topic = f"sync-txn-{secrets.token_hex(4)}"
    with kafkawire.sync.connect(kafka_broker.url) as client:
        with client.producer(topic, transactional_id=f"sync-{secrets.token_hex(4)}") as producer:
            with producer.transaction():
                futures = [producer.enqueue(b"committed-%d" % i) for i in range(50)]  # handed over before commit
            assert all(future.done() for future in futures)
            with pytest.raises(ValueError, match="the block failed"), producer.transaction():
                producer.enqueue(b"aborted-by-the-block")
                raise ValueError("the block failed")
            producer.begin_transaction()
            producer.enqueue(b"aborted-by-call")
            producer.abort_transaction()
            producer.begin_transaction()
            producer.send(b"last")
            producer.commit_transaction()
        with client.consumer(topic, group=_group(), start="earliest", isolation_level="read_committed") as consumer:
            seen: list[bytes] = []
            deadline = time.monotonic() + FIRST_MESSAGE["kafka"]
            while len(seen) < 51 and time.monotonic() < deadline:
                seen.extend(m.value for m in consumer.getmany(timeout=1))
            assert seen == [b"committed-%d" % i for i in range(50)] + [b"last"]
            assert consumer.getmany(timeout=1) == []  # and nothing of the aborted ones


def test_kafka_enqueue_many_hands_a_whole_call_over_at_once(kafka_broker: KafkaBrokerEndpoint) -> None:
    topic = f"sync-bulk-{secrets.token_hex(4)}"
    with kafkawire.sync.connect(kafka_broker.url) as client:
        with client.producer(topic, value_serializer=str.encode) as producer:
            first = producer.enqueue("before")  # handed over first: the call comes after it
            bulk = producer.enqueue_many([f"bulk-{i}" for i in range(1000)])
            with pytest.raises(SerializationError):  # refused whole, at the call
                producer.enqueue_many(["fine", 42])
            producer.flush(timeout=30)
            metadata = bulk.result(timeout=0)
            assert len(metadata) == 1000
            assert [m.offset for m in metadata] == list(range(first.result().offset + 1, first.result().offset + 1001))
        with client.consumer(topic, start="earliest") as consumer:
            seen: list[bytes] = []
            deadline = time.monotonic() + FIRST_MESSAGE["kafka"]
            while len(seen) < 1001 and time.monotonic() < deadline:
                seen.extend(m.value for m in consumer.getmany(timeout=1))
            assert seen == [b"before"] + [b"bulk-%d" % i for i in range(1000)]
