"""The same code against Kafka, Pulsar and TubeMQ: the public contract of mqwire.common.contract, end to end.

Every test here is written once against the contract and runs against each real broker. Where the systems
differ on purpose (what an unacknowledged message does after a restart), the test states both behaviours.
TubeMQ topics are shared by the runs of one broker, so each test marks its messages and ignores others.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest
import pytest_asyncio

import mqwire.common
import tubemqwire
from mqwire.common.contract import Client, Consumer, Message
from mqwire.common.errors import DeserializationError, ReceiveTimeoutError, SerializationError
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from tests.contract.systems import PACKAGES, System

pytestmark = pytest.mark.integration


@pytest.fixture(params=["kafka", "pulsar", "tubemq"])
def system(request: pytest.FixtureRequest) -> System:
    name: str = request.param
    broker: KafkaBroker | PulsarBroker | TubeMQBroker = request.getfixturevalue(f"{name}_broker")
    return System(name, PACKAGES[name], broker.url)


@pytest_asyncio.fixture(loop_scope="function")
async def client(system: System) -> AsyncIterator[Client[Any]]:
    async with system.connect() as connected:
        yield connected


def json_bytes(value: object) -> bytes:
    return json.dumps(value).encode()


def marked(run: str, index: int) -> bytes:
    return f"{run}:{index}".encode()


async def receive_marked(
    consumer: Consumer[Any], run: str, count: int, timeout: float, *, ack: bool = False
) -> list[Message]:
    """The next ``count`` messages of this run (others' messages on a shared topic are passed over and acked).

    ``ack`` acknowledges this run's messages as they come too: a TubeMQ partition hands out its next batch only
    once the previous one is confirmed, so a test that waits for more than one batch must acknowledge.
    """
    found: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(found) < count:
        message = await consumer.receive(timeout=max(0.1, deadline - time.monotonic()))
        value = message.value if isinstance(message.value, bytes) else json.dumps(message.value).encode()
        if run.encode() in value:
            found.append(message)
            if ack:
                await consumer.ack(message)
        else:
            await consumer.ack(message)
    return found


async def holding_partitions(consumer: Consumer[Any], timeout: float) -> None:
    """Until a TubeMQ consumer holds its partitions: it reads nothing before the master's balancing round."""
    held = cast(tubemqwire.Consumer, consumer)
    async with asyncio.timeout(timeout):
        while not held.assignment:
            await asyncio.sleep(0.1)


def test_every_package_exports_the_shared_errors() -> None:
    for package in PACKAGES.values():
        assert package.ReceiveTimeoutError is ReceiveTimeoutError
        assert package.SerializationError is SerializationError
        assert package.DeserializationError is DeserializationError
        assert issubclass(package.ReceiveTimeoutError, TimeoutError)
        assert package.MqwireError is mqwire.common.MqwireError


async def test_receive_and_getmany_time_out_alike(system: System, client: Client[Any]) -> None:
    topic = system.topic("idle")
    async with client.consumer(topic, group=system.group("idle")) as consumer:
        started = time.monotonic()
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=1.0)
        # Bounded, not timed: a timeout of one second must not turn into a wait without end.
        assert time.monotonic() - started < 30
        with pytest.raises(TimeoutError):
            await consumer.receive(timeout=0.2)
        assert list(await consumer.getmany(timeout=0.5, max_records=10)) == []
        assert list(await consumer.getmany()) == []


async def test_serializers_both_ways(system: System, client: Client[Any]) -> None:
    topic = system.topic("serde")
    run = secrets.token_hex(4)
    async with (
        client.consumer(
            topic,
            group=system.group("serde"),
            start="earliest",
            key_deserializer=bytes.decode,
            value_deserializer=json.loads,
        ) as consumer,
        client.producer(topic, key_serializer=str.encode, value_serializer=json_bytes) as producer,
    ):
        receipt = await producer.send({"run": run, "n": 1}, key="key-1", headers={"h": b"v"})
        # A Pulsar topic without partitions is partition -1; Kafka and TubeMQ number theirs from 0.
        if system.name == "pulsar":
            assert receipt.partition == -1
        else:
            assert receipt.partition >= 0
        assert topic in receipt.topic
        future = await producer.enqueue({"run": run, "n": 2}, key="key-2")
        await producer.flush(timeout=30)
        # flush returns once every buffered message has its answer: awaiting it now does not wait.
        assert (await asyncio.wait_for(future, timeout=0)).topic == receipt.topic
        got = await receive_marked(consumer, run, 2, system.receive_timeout, ack=True)
        assert [m.value for m in got] == [{"run": run, "n": 1}, {"run": run, "n": 2}]
        assert [m.key for m in got] == ["key-1", "key-2"]
        assert got[0].headers["h"] == b"v"
        # The receipt names the partition the message was stored in: the one it is read from.
        assert got[0].partition == receipt.partition


async def test_a_str_without_a_serializer_is_refused_and_nothing_is_sent(system: System, client: Client[Any]) -> None:
    topic = system.topic("str")
    run = secrets.token_hex(4)
    async with client.producer(topic) as producer:
        with pytest.raises(SerializationError, match="value_serializer") as refused:
            await producer.send(f"{run}:text")
        assert isinstance(refused.value, TypeError)
        with pytest.raises(SerializationError, match="key_serializer"):
            await producer.send(marked(run, 0), key="text-key")
        with pytest.raises(SerializationError, match="value_serializer"):
            await producer.enqueue({"run": run})
        with pytest.raises(SerializationError, match="value_serializer"):
            await producer.send(42)
        await producer.send(marked(run, 1), key=b"k")
    # A value serializer does not serialize keys: a str key still needs its own.
    async with client.producer(topic, value_serializer=json_bytes) as producer:
        with pytest.raises(SerializationError, match="key_serializer"):
            await producer.send({"run": run}, key="text-key")
    async with client.consumer(topic, group=system.group("str"), start="earliest") as consumer:
        (first,) = await receive_marked(consumer, run, 1, system.receive_timeout)
        assert first.value == marked(run, 1)
        assert first.key == b"k"
        await consumer.ack(first)


async def test_a_failing_deserializer_holds_its_message_until_the_application_skips_it(
    system: System, client: Client[Any]
) -> None:
    topic = system.topic("bad")
    run = secrets.token_hex(4)

    def strict(data: bytes) -> str:
        text = data.decode()
        if text == f"{run}:bad":
            raise ValueError("not a good message")
        return text

    async with client.producer(topic) as producer:
        for value in (b"good-1", b"bad", b"good-2"):
            await producer.send(f"{run}:{value.decode()}".encode())
    async with client.consumer(
        topic, group=system.group("bad"), start="earliest", value_deserializer=strict
    ) as consumer:
        deadline = time.monotonic() + system.receive_timeout
        first = await consumer.receive(timeout=system.receive_timeout)
        while run not in first.value:  # messages of earlier runs on a shared TubeMQ topic
            await consumer.ack(first)
            first = await consumer.receive(timeout=max(0.1, deadline - time.monotonic()))
        assert first.value == f"{run}:good-1"
        await consumer.ack(first)
        with pytest.raises(DeserializationError) as failed:
            await consumer.receive(timeout=system.receive_timeout)
        error = failed.value
        assert error.field == "value" and error.message.value == f"{run}:bad".encode()
        assert error.position is not None and topic in error.topic
        assert isinstance(error.__cause__, ValueError)
        # Nothing goes past it until the application says so.
        with pytest.raises(DeserializationError) as again:
            await consumer.getmany(timeout=1)
        assert again.value.message is error.message
        consumer.skip(error.message)
        (last,) = [await consumer.receive(timeout=system.receive_timeout)]
        assert last.value == f"{run}:good-2"
        await consumer.ack(last)


async def test_seek_to_beginning_reads_again_and_seek_to_end_skips(system: System, client: Client[Any]) -> None:
    topic = system.topic("seek")
    run = secrets.token_hex(4)
    async with client.producer(topic) as producer:
        for index in range(3):
            await producer.send(marked(run, index))
        async with client.consumer(topic, group=system.group("seek"), start="earliest") as consumer:
            first = await receive_marked(consumer, run, 3, system.receive_timeout, ack=True)
            assert [m.value for m in first] == [marked(run, i) for i in range(3)]
            await consumer.seek_to_beginning()
            again = await receive_marked(consumer, run, 3, system.receive_timeout, ack=True)
            assert [m.value for m in again] == [marked(run, i) for i in range(3)]
            await consumer.seek_to_end()
            # Nothing already written comes again; only what is written after.
            assert list(await consumer.getmany(timeout=2 if system.name == "tubemq" else 1)) == []
            await producer.send(marked(run, 3))
            (after_end,) = await receive_marked(consumer, run, 1, system.receive_timeout)
            assert after_end.value == marked(run, 3)


async def test_closing_a_producer_delivers_what_it_buffered(system: System, client: Client[Any]) -> None:
    topic = system.topic("close")
    run = secrets.token_hex(4)
    futures: list[Any] = []
    async with client.producer(topic) as producer:
        # No broker acknowledges a fresh batch within no time: the wait ends, the sends go on. A fast broker
        # (or a slow caller, as through the blocking API on the pure-Python path) may have acknowledged a whole
        # batch before the wait starts; then the wait returns at once, and a batch twice as large is tried.
        timed_out = False
        for batch in (200, 400, 800, 1600, 3200):
            first = len(futures)
            futures += [await producer.enqueue(marked(run, index)) for index in range(first, first + batch)]
            try:
                await producer.flush(timeout=0)
            except TimeoutError:
                timed_out = True
                break
            assert all(future.done() for future in futures), "flush returned while sends were pending"
        assert timed_out, "every batch was acknowledged before a wait of no time could end"
    count = len(futures)
    # Leaving the block closed the producer: every buffered message is acknowledged by now.
    receipts = [await future for future in futures]
    assert len(receipts) == count
    async with client.consumer(topic, group=system.group("close"), start="earliest") as consumer:
        got = await receive_marked(consumer, run, count, system.receive_timeout, ack=True)
        assert sorted(m.value for m in got) == sorted(marked(run, i) for i in range(count))


async def test_a_restarted_group_member_resumes_where_it_stopped(system: System, client: Client[Any]) -> None:
    """Kafka commits what was delivered (as aiokafka and the Java client do), so a consumer that never calls
    ``ack`` does not read it again after a restart. Pulsar and TubeMQ keep what is delivered but not
    acknowledged and deliver it again; what was acknowledged does not come back in any of the three."""
    topic = system.topic("group")
    group = system.group("group")
    run = secrets.token_hex(4)
    async with client.producer(topic) as producer:
        for index in range(4):
            await producer.send(marked(run, index))
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        # Kafka: never acknowledged. Pulsar and TubeMQ: acknowledged as they come.
        got = await receive_marked(consumer, run, 4, system.receive_timeout, ack=system.name != "kafka")
        assert [m.value for m in got] == [marked(run, i) for i in range(4)]
    async with client.producer(topic) as producer:
        await producer.send(marked(run, 4))
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        (fifth,) = await receive_marked(consumer, run, 1, system.receive_timeout)
        assert fifth.value == marked(run, 4)  # nothing of the first four again
        # Delivered, never acknowledged.
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        if system.name != "kafka":
            (again,) = await receive_marked(consumer, run, 1, system.receive_timeout)
            assert again.value == marked(run, 4)
            await consumer.ack(again)
        with pytest.raises(ReceiveTimeoutError):
            extra = await consumer.receive(timeout=3)
            pytest.fail(f"read again after the restart: {extra.value!r}")


async def test_a_misspelled_option_fails_at_the_call_and_names_itself(system: System, client: Client[Any]) -> None:
    producer_of: Callable[..., Any] = client.producer
    consumer_of: Callable[..., Any] = client.consumer
    with pytest.raises(TypeError, match="lingr_ms"):
        producer_of(system.topic("idle"), lingr_ms=5)
    with pytest.raises(TypeError, match="strat"):
        consumer_of(system.topic("idle"), group="g", strat="earliest")
    with pytest.raises(TypeError, match="value_serializer"):
        producer_of(system.topic("idle"), value_serializer="json")
    connect: Callable[..., Any] = system.package.connect
    with pytest.raises(TypeError, match="requst_timeout_ms"):
        connect(system.url, requst_timeout_ms=5)


async def test_start_defaults_to_latest(system: System, client: Client[Any]) -> None:
    topic = system.topic("seek")
    run = secrets.token_hex(4)
    async with client.producer(topic) as producer:
        await producer.send(marked(run, 0))
        async with client.consumer(topic, group=system.group("latest")) as consumer:
            # Joined after the first message: only what is written from now on arrives. A TubeMQ consumer
            # fetches once it holds its partition, so the window starts there.
            if system.name == "tubemq":
                await holding_partitions(consumer, system.receive_timeout)
            with pytest.raises(ReceiveTimeoutError):
                while True:
                    stale = await consumer.receive(timeout=5)
                    assert run.encode() not in stale.value, "a consumer starting at latest read an older message"
            await asyncio.sleep(0)
            await producer.send(marked(run, 1))
            (fresh,) = await receive_marked(consumer, run, 1, system.receive_timeout)
            assert fresh.value == marked(run, 1)
