"""The Pulsar client without a broker: hashing, routing, option checks, names, ids, queues and acks."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

import pulsarwire
from mqwire.common.errors import ConfigurationError
from pulsarwire.acks import AckGrouping, BatchAcks, NegativeAcks
from pulsarwire.chunks import ChunkAssembler
from pulsarwire.message import EARLIEST, LATEST, Message, MessageId
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.receive_queue import ReceiveQueue
from pulsarwire.routing import PartitionRouter, java_string_hash, murmur3_32, murmur3_32_hash
from pulsarwire.topics import complete_name, partition_name, partition_of

# ------------------------------------------------------------------------------------------------ hashing
# Computed with the Java client 4.2.4 (org.apache.pulsar.client.impl.JavaStringHash and Murmur3Hash32,
# each through getInstance().makeHash(key)).
JAVA_CLIENT_HASHES = [
    ("", 0, 0),
    ("a", 97, 1009084850),
    ("key", 106079, 1654417988),
    ("key-1", 101943363, 414258592),
    ("order-42", 1234255197, 1259446670),
    ("hello world", 1794106052, 1586663183),
    ("abcd", 2987074, 1139631978),
    ("abcde", 92599395, 1755028214),
    ("été", 227742, 865297935),
    ("日本語", 25921943, 631534231),
    ("emoji-😀", 1164511306, 82657275),
    ("partition-key-with-a-longer-text-0123456789", 907883011, 1058375007),
]


@pytest.mark.parametrize(("key", "java_hash", "murmur_hash"), JAVA_CLIENT_HASHES)
def test_hashes_equal_the_java_client(key: str, java_hash: int, murmur_hash: int) -> None:
    assert java_string_hash(key) == java_hash
    assert murmur3_32_hash(key) == murmur_hash


@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"\x21\x43\x65\x87", 0, 0xF55B516B),
        (b"\x21\x43\x65", 0, 0x7E4A8634),
        (b"\x21", 0, 0x72661CF4),
        (b"Hello, world!", 1234, 0xFAF6CDB3),
        (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
    ],
)
def test_murmur3_32_reference_vectors(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected


def test_java_string_hash_wraps_like_a_java_int() -> None:
    # Java's hashCode overflows int; the routing hash keeps the low 31 bits of that.
    key = "a-very-long-key-" * 20
    value = 0
    for char in key:
        value = (31 * value + ord(char)) % 2**32
    assert java_string_hash(key) == value & 0x7FFFFFFF


# ------------------------------------------------------------------------------------------------ routing
def test_keyed_routing_uses_the_scheme() -> None:
    router = PartitionRouter(hashing_scheme="murmur3_32")
    assert [router.choose(k, 7) for k, _, _ in JAVA_CLIENT_HASHES] == [m % 7 for _, _, m in JAVA_CLIENT_HASHES]
    default = PartitionRouter()
    assert [default.choose(k, 7) for k, _, _ in JAVA_CLIENT_HASHES] == [j % 7 for _, j, _ in JAVA_CLIENT_HASHES]


def test_round_robin_without_batching_visits_every_partition_in_turn() -> None:
    router = PartitionRouter(batching=False)
    chosen = [router.choose(None, 5) for _ in range(10)]
    assert sorted(chosen[:5]) == [0, 1, 2, 3, 4]
    assert chosen[5:] == chosen[:5]


def test_round_robin_with_batching_stays_within_a_window() -> None:
    router = PartitionRouter(batching=True, partition_switch_ms=60_000)
    assert len({router.choose(None, 5) for _ in range(100)}) <= 2


def test_single_partition_mode_and_custom_router() -> None:
    single = PartitionRouter(mode="single_partition")
    assert len({single.choose(None, 8) for _ in range(20)}) == 1
    custom = PartitionRouter(router=lambda key, n: len(key or "") % n)
    assert custom.choose("abc", 2) == 1
    broken = PartitionRouter(router=lambda key, n: n)
    with pytest.raises(ValueError, match="message_router"):
        broken.choose("k", 3)


# -------------------------------------------------------------------------------------------- topic names
@pytest.mark.parametrize(
    ("given", "complete"),
    [
        ("orders", "persistent://public/default/orders"),
        ("tenant/ns/orders", "persistent://tenant/ns/orders"),
        ("non-persistent://t/n/x", "non-persistent://t/n/x"),
        ("persistent://t/cluster/n/x", "persistent://t/cluster/n/x"),
    ],
)
def test_complete_names(given: str, complete: str) -> None:
    assert complete_name(given) == complete


@pytest.mark.parametrize("bad", ["", "a/b", "http://t/n/x", "t//x", "a/b/c/d/e"])
def test_invalid_names(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        complete_name(bad)


def test_partition_names() -> None:
    name = partition_name("persistent://public/default/t", 3)
    assert name == "persistent://public/default/t-partition-3"
    assert partition_of(name) == 3
    assert partition_of("persistent://public/default/t") == -1


# ---------------------------------------------------------------------------------------------- options
def client(**options: Any) -> pulsarwire.Client:
    return pulsarwire.connect("pulsar://127.0.0.1:6650", **options)


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"operation_timeout": 0}, ValueError, "operation_timeout"),
        ({"connect_timeout": "10"}, TypeError, "connect_timeout"),
        ({"keepalive_interval": -1}, ValueError, "keepalive_interval"),
        ({"max_lookup_redirects": True}, TypeError, "max_lookup_redirects"),
        ({"initial_backoff_interval": 2, "max_backoff_interval": 1}, ValueError, "max_backoff_interval"),
        ({"tls_ca_file": "/etc/hosts"}, ValueError, "tls_ca_file"),
        ({"ssl_context": "yes"}, TypeError, "ssl_context"),
        ({"auth_token": 5}, TypeError, "auth_token"),
    ],
)
def test_client_options_are_checked(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        client(**options)


def test_client_url_and_tls() -> None:
    with pytest.raises(ConfigurationError):
        pulsarwire.connect("http://localhost:8080")
    with pytest.raises(ConfigurationError, match="tls_ca_file"):
        pulsarwire.connect("pulsar+ssl://localhost", tls_ca_file="/no/such/file.pem")
    with pytest.raises(TypeError):
        pulsarwire.connect("pulsar://localhost", unknown_option=1)
    secure = pulsarwire.connect("pulsar+ssl://localhost")
    assert secure._session.ssl is not None and secure._session.ssl.check_hostname
    assert secure._session.ssl.verify_mode == ssl.CERT_REQUIRED
    relaxed = pulsarwire.connect("pulsar+ssl://localhost", tls_validate_hostname=False)
    assert relaxed._session.ssl is not None and not relaxed._session.ssl.check_hostname
    insecure = pulsarwire.connect("pulsar+ssl://localhost", tls_allow_insecure_connection=True)
    assert insecure._session.ssl is not None and insecure._session.ssl.verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"compression_type": "gzip"}, ValueError, "compression_type"),
        ({"hashing_scheme": "boost"}, ValueError, "hashing_scheme"),
        ({"message_routing_mode": "random"}, ValueError, "message_routing_mode"),
        ({"batching_max_messages": 0}, ValueError, "batching_max_messages"),
        ({"batching_max_publish_delay_ms": -1}, ValueError, "batching_max_publish_delay_ms"),
        ({"max_pending_messages": 1.5}, TypeError, "max_pending_messages"),
        ({"send_timeout_ms": "30s"}, TypeError, "send_timeout_ms"),
        ({"block_if_queue_full": 1}, TypeError, "block_if_queue_full"),
        ({"chunking_enabled": True}, ValueError, "chunking_enabled"),
        ({"access_mode": "WaitForExclusive"}, ValueError, "access_mode"),
        ({"properties": {"a": 1}}, TypeError, "properties"),
        ({"message_router": 5}, TypeError, "message_router"),
        ({"linger_ms": 5}, TypeError, "linger_ms"),
    ],
)
def test_producer_options_are_checked(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        client().producer("t", **options)


def test_producer_option_spellings() -> None:
    producer = client().producer("t", compression_type="zstd", access_mode="exclusive")
    assert producer.options.compression == pb.ZSTD and producer.options.compression_type == "ZSTD"
    assert producer.options.access_mode == pb.Exclusive
    assert client().producer("t", chunking_enabled=True, batching_enabled=False).options.chunking_enabled


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({}, TypeError, "group"),
        ({"group": ""}, ValueError, "group"),
        ({"group": "a", "subscription": "b"}, ValueError, "group"),
        ({"group": "g", "subscription_type": "Queue"}, ValueError, "subscription_type"),
        ({"group": "g", "start": "beginning"}, ValueError, "start"),
        ({"group": "g", "receiver_queue_size": 0}, ValueError, "receiver_queue_size"),
        ({"group": "g", "ack_group_time_ms": -5}, ValueError, "ack_group_time_ms"),
        ({"group": "g", "subscription_type": "Shared", "read_compacted": True}, ValueError, "read_compacted"),
        ({"group": "g", "key_shared_mode": "random"}, ValueError, "key_shared_mode"),
        ({"group": "g", "isolation_level": "x"}, TypeError, "isolation_level"),
    ],
)
def test_consumer_options_are_checked(options: dict[str, Any], error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        client().consumer("t", **options)


def test_consumer_options_accept_both_names_and_any_case() -> None:
    consumer = client().consumer(["a", "b"], subscription="s", subscription_type="key_shared", start="EARLIEST")
    assert consumer.subscription == "s"
    assert consumer.options.subscription_type == pb.CommandSubscribe.Key_Shared
    assert consumer.options.initial_position == pb.CommandSubscribe.Earliest
    with pytest.raises(ValueError, match="twice"):
        client().consumer(["a", "persistent://public/default/a"], group="g")
    with pytest.raises(ValueError, match="start"):
        client().reader("t", start="first")


# --------------------------------------------------------------------------------------------- message ids
def test_message_id_serialization_and_order() -> None:
    message_id = MessageId(12, 34, 5, 2, 10)
    data = message_id.serialize()
    assert pb.MessageIdData.FromString(data) == pb.MessageIdData(
        ledgerId=12, entryId=34, partition=2, batch_index=5, batch_size=10
    )
    assert MessageId.deserialize(data) == message_id
    assert MessageId.deserialize(EARLIEST.serialize()) == EARLIEST
    assert MessageId(1, 2) < MessageId(1, 3) < MessageId(2, 0)
    assert MessageId(1, 2, 0) < MessageId(1, 2, 1)
    assert MessageId(2**40, 0) < LATEST
    assert MessageId(1, 2, 3, 4).entry == MessageId(1, 2, -1, 4)
    with pytest.raises(pulsarwire.ProtocolError):
        MessageId.deserialize(b"\xff\xff")


def test_message_key_forms() -> None:
    def message(key: str | None, b64: bool = False) -> Message:
        return Message("t", "t", -1, MessageId(1, 1), b"", {}, key, b64)

    assert message(None).key is None
    assert message("k").key == b"k"
    assert message("AAE=", True).key == b"\x00\x01"
    assert "value=b''" in repr(message("k"))


# ------------------------------------------------------------------------------------------ receive queue
async def test_receive_queue_wakes_waits_and_fails() -> None:
    queue = ReceiveQueue("test")
    with pytest.raises(pulsarwire.ReceiveTimeoutError):
        await queue.get(0.01)
    waiter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    one = Message("t", "t", -1, MessageId(1, 1), b"1", {})
    queue.extend([one])
    assert await waiter is one
    owner = object()
    two = Message("t", "t", -1, MessageId(1, 2), b"2", {}, owner=owner)
    queue.extend([two, one])
    assert queue.remove_owner(owner) == 1 and len(queue) == 1
    queue.close()
    assert queue.get_nowait() is one  # what was queued still comes first
    with pytest.raises(pulsarwire.ConsumerClosedError):
        await queue.get()


async def test_receive_queue_serves_concurrent_receivers() -> None:
    queue = ReceiveQueue("test")
    waiters = [asyncio.ensure_future(queue.get(5)) for _ in range(3)]
    await asyncio.sleep(0)
    messages = [Message("t", "t", -1, MessageId(1, i), b"", {}) for i in range(3)]
    queue.extend(messages)
    assert sorted([m.message_id for m in await asyncio.gather(*waiters)]) == [m.message_id for m in messages]


# -------------------------------------------------------------------------------------------------- acks
def test_batch_acks_complete_once() -> None:
    batch = BatchAcks()
    batch.expect(0b1011)  # index 2 was skipped (acknowledged before)
    assert not batch.ack(0)
    assert not batch.ack(0)
    assert not batch.ack(2)
    assert not batch.ack(1)
    assert batch.ack(3)
    assert not batch.ack(3)
    cumulative = BatchAcks(0b111)
    assert not cumulative.ack_up_to(1)
    assert cumulative.ack_up_to(2) and cumulative.complete


class Calls:
    """Records each call with the loop's time and wakes whoever waits for the next one."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, list[tuple[int, int]]]] = []
        self.arrived = asyncio.Event()

    def __call__(self, positions: list[tuple[int, int]]) -> None:
        self.calls.append((asyncio.get_running_loop().time(), positions))
        self.arrived.set()

    async def next(self) -> tuple[float, list[tuple[int, int]]]:
        # Liveness only: the delays below are tens of milliseconds, 10 s is far beyond any scheduling lag.
        async with asyncio.timeout(10):
            await self.arrived.wait()
        self.arrived.clear()
        return self.calls[-1]


async def test_ack_grouping_flushes_by_time_size_and_keeps_acks_without_connection() -> None:
    sent: list[list[tuple[int, int]]] = []
    cumulative: list[tuple[int, int]] = []
    connected = True
    timed = Calls()

    def send(positions: list[tuple[int, int]]) -> bool:
        if connected:
            sent.append(positions)
            timed(positions)
        return connected

    def send_cumulative(position: tuple[int, int]) -> bool:
        cumulative.append(position)
        return True

    grouping = AckGrouping(send, send_cumulative, delay=0.02, max_size=3)
    added_at = asyncio.get_running_loop().time()
    grouping.add(1, 1)
    grouping.add(1, 1)
    assert sent == [] and len(grouping) == 1
    flushed_at, positions = await timed.next()
    assert positions == [(1, 1)] and sent == [[(1, 1)]]
    assert flushed_at - added_at >= 0.02 - 0.001  # held for its delay (less the loop clock's millisecond)
    for entry in range(3):
        grouping.add(2, entry)
    assert sent[-1] == [(2, 0), (2, 1), (2, 2)]
    grouping.add_cumulative(3, 5)
    grouping.add_cumulative(3, 4)
    grouping.flush()
    assert cumulative == [(3, 5)]
    connected = False
    grouping.add(4, 0)
    grouping.flush()
    assert len(grouping) == 1
    connected = True
    grouping.flush()
    assert sent[-1] == [(4, 0)] and len(grouping) == 0


async def test_negative_acks_wait_for_their_delay() -> None:
    redelivered = Calls()
    nacks = NegativeAcks(redelivered, delay=0.03)
    added_at = asyncio.get_running_loop().time()
    nacks.add(1, 1)
    nacks.add(1, 2)
    assert redelivered.calls == []
    fired_at, positions = await redelivered.next()
    assert positions == [(1, 1), (1, 2)]
    assert fired_at - added_at >= 0.03 - 0.001  # not before the delay (less the loop clock's millisecond)
    # A discarded nack is never redelivered: one added after it, due later, comes back alone.
    nacks.add(1, 3)
    nacks.discard()
    nacks.add(1, 4)
    _, positions = await redelivered.next()
    assert positions == [(1, 4)] and len(redelivered.calls) == 2


# ------------------------------------------------------------------------------------------------ chunks
def test_chunks_join_in_order_and_drop_what_does_not_fit() -> None:
    chunks = ChunkAssembler(max_pending=2)
    assert chunks.add("u1", 0, 3, 9, (1, 1), b"abc") is None
    assert chunks.add("u1", 1, 3, 9, (1, 2), b"def") is None
    assert chunks.add("u1", 1, 3, 9, (1, 3), b"def") is None  # a duplicate
    assert chunks.add("u1", 2, 3, 9, (1, 4), b"ghi") == (b"abcdefghi", [(1, 1), (1, 2), (1, 4)])
    assert chunks.take_dropped() == [(1, 3)]
    assert chunks.add("u2", 1, 3, 9, (2, 1), b"x") is None  # no start
    assert chunks.add("u3", 0, 2, 4, (3, 1), b"ab") is None
    assert chunks.add("u4", 0, 2, 4, (4, 1), b"ab") is None
    assert chunks.add("u5", 0, 2, 4, (5, 1), b"ab") is None  # evicts u3
    assert chunks.take_dropped() == [(2, 1), (3, 1)]
    assert chunks.add("u4", 1, 2, 4, (4, 2), b"cdef") is None  # beyond the declared size
    assert chunks.take_dropped() == [(4, 1), (4, 2)]
    assert chunks.add("u6", 0, 2, 2**40, (6, 1), b"x") is None  # an absurd declared size
    assert chunks.take_dropped() == [(6, 1)]


def test_error_hierarchy_is_exported() -> None:
    assert issubclass(pulsarwire.SendTimeoutError, pulsarwire.RequestTimeoutError)
    assert issubclass(pulsarwire.ReceiveTimeoutError, TimeoutError)
    assert issubclass(pulsarwire.MessageTooBigError, ValueError)
    assert pulsarwire.ProducerQueueIsFullError.retriable
    assert not pulsarwire.TopicTerminatedError.retriable
