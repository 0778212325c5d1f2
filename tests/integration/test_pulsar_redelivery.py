"""Redelivery against a real broker: ack timeout, negative acks, batch-index acks, dead-letter and retry topics."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pulsar
import pytest

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.message import Message

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:12]}"


async def drain(consumer: pulsarwire.Consumer, quiet: float) -> list[Message]:
    """Every message that arrives until none has come for ``quiet`` seconds (without acking)."""
    seen = []
    while True:
        try:
            seen.append(await consumer.receive(timeout=quiet))
        except ReceiveTimeoutError:
            return seen


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_ack_timeout_redelivers_only_unacknowledged(pulsar_broker: PulsarBroker) -> None:
    topic = unique("ack-timeout")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", subscription_type="Shared", start="earliest", ack_timeout_ms=1000) as c,
        client.producer(topic, batching_enabled=False) as producer,
    ):
        for i in range(10):
            await producer.send(b"m%d" % i)
        first = [await c.receive(timeout=10) for _ in range(10)]
        for message in first:
            if int(message.value[1:]) % 2 == 0:
                await c.ack(message)
        again = [await c.receive(timeout=10) for _ in range(5)]
        assert sorted(m.value for m in again) == [b"m1", b"m3", b"m5", b"m7", b"m9"]
        assert all(m.redelivery_count == 1 for m in again)
        for message in again:
            await c.ack(message)
        # All acknowledged now: the ack timeout has nothing left to send again.
        assert await drain(c, 2.5) == []


async def test_ack_timeout_on_exclusive_subscription_redelivers_in_order(pulsar_broker: PulsarBroker) -> None:
    topic = unique("ack-timeout-excl")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest", ack_timeout_ms=1000) as consumer,
        client.producer(topic) as producer,
    ):
        for i in range(5):
            await producer.enqueue(b"m%d" % i)
        await producer.flush()
        first = [await consumer.receive(timeout=10) for _ in range(5)]
        again = [await consumer.receive(timeout=10) for _ in range(5)]
        assert [m.value for m in again] == [m.value for m in first] == [b"m%d" % i for i in range(5)]
        for message in again:
            await consumer.ack(message)


async def test_negative_ack_comes_back_after_the_delay(pulsar_broker: PulsarBroker) -> None:
    topic = unique("nack")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", subscription_type="Shared", start="earliest",
                        negative_ack_redelivery_delay_ms=1500) as consumer,
        client.producer(topic) as producer,
    ):
        await producer.send(b"again")
        await producer.send(b"once")
        received = {m.value: m for m in [await consumer.receive(timeout=10) for _ in range(2)]}
        await consumer.ack(received[b"once"])
        nacked_at = time.monotonic()
        await consumer.negative_ack(received[b"again"])
        back = await consumer.receive(timeout=10)
        waited = time.monotonic() - nacked_at
        assert (back.value, back.redelivery_count) == (b"again", 1)
        assert waited >= 1.4  # not before the delay asked for
        await consumer.ack(back)


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_batch_index_ack_keeps_acked_messages_of_a_batch_from_coming_back(pulsar_broker: PulsarBroker) -> None:
    topic = unique("batch-index-ack")

    async def run(batch_index_ack: bool) -> list[bytes]:
        subscription = f"s-{batch_index_ack}"
        async with pulsarwire.connect(pulsar_broker.url) as client:
            async with client.consumer(topic, group=subscription, start="earliest",
                                       batch_index_ack_enabled=batch_index_ack) as consumer:
                messages = [await consumer.receive(timeout=10) for _ in range(10)]
                assert len({m.message_id.entry for m in messages}) == 1  # one batch
                for message in messages[:6]:
                    await consumer.ack(message)
            async with client.consumer(topic, group=subscription, batch_index_ack_enabled=batch_index_ack) as again:
                return [m.value for m in await drain(again, 2.0)]

    async with pulsarwire.connect(pulsar_broker.url) as client, client.producer(topic) as producer:
        futures = [await producer.enqueue(b"m%d" % i) for i in range(10)]
        await producer.flush()
        await asyncio.gather(*futures)
    # Subscriptions created before: both see the batch from the start.
    assert await run(True) == [b"m%d" % i for i in range(6, 10)]
    assert await run(False) == [b"m%d" % i for i in range(10)]


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
async def test_dead_letter_after_max_redeliveries_with_pulsar_client_on_both_ends(
    pulsar_broker: PulsarBroker,
) -> None:
    topic = unique("dlq")
    dlq = f"{topic}-g-DLQ"
    theirs = pulsar.Client(pulsar_broker.url)
    try:
        dlq_reader = theirs.subscribe(dlq, "dlq-watch", initial_position=pulsar.InitialPosition.Earliest)
        their_producer = theirs.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
        async with (
            pulsarwire.connect(pulsar_broker.url) as client,
            client.consumer(
                topic,
                group="g",
                subscription_type="Shared",
                start="earliest",
                negative_ack_redelivery_delay_ms=200,
                # The four share one batch: without batch-index acks the acked ones would come back with it.
                batch_index_ack_enabled=True,
                dead_letter_policy=pulsarwire.DeadLetterPolicy(max_redeliver_count=2),
            ) as consumer,
        ):
            assert consumer.dead_letters is not None and consumer.dead_letters.dead_letter_topic == dlq
            for i in range(4):
                their_producer.send_async(b"m%d" % i, None, partition_key=f"k{i}", properties={"i": str(i)},
                                          event_timestamp=1_700_000_000_000 + i)
            await asyncio.to_thread(their_producer.flush)
            counts: dict[bytes, list[int]] = {}
            # m0 and m2 always fail; m1 and m3 succeed at once (the broker restarts an entry's redelivery
            # count when part of it is acknowledged, so that happens before the failures are counted).
            async with asyncio.timeout(30):
                while len(counts.get(b"m0", [])) < 3 or len(counts.get(b"m2", [])) < 3 or len(counts) < 4:
                    message = await consumer.receive()
                    counts.setdefault(message.value, []).append(message.redelivery_count)
                    if message.value in (b"m1", b"m3"):
                        await consumer.ack(message)
                    else:
                        await consumer.negative_ack(message)
            assert counts[b"m0"] == counts[b"m2"] == [0, 1, 2]
            assert counts[b"m1"] == counts[b"m3"] == [0]
            dead = [await asyncio.to_thread(dlq_reader.receive, 20_000) for _ in range(2)]
            for message in dead:
                dlq_reader.acknowledge(message)
            by_value = {m.data(): m for m in dead}
            assert set(by_value) == {b"m0", b"m2"}
            for value, message in by_value.items():
                index = value.decode()[1:]
                assert message.partition_key() == f"k{index}"
                assert message.event_timestamp() == 1_700_000_000_000 + int(index)
                assert message.properties()["i"] == index
                assert message.properties()["REAL_TOPIC"] == topic
                assert message.properties()["ORIGIN_MESSAGE_ID"]
            # Nothing more: acknowledged on the original subscription once in the DLQ.
            assert await drain(consumer, 2.0) == []
        with pytest.raises(pulsar.Timeout):
            await asyncio.to_thread(dlq_reader.receive, 1000)
    finally:
        theirs.close()


async def test_reconsume_later_goes_through_the_retry_topic_then_to_the_dead_letter_topic(
    pulsar_broker: PulsarBroker,
) -> None:
    topic = unique("retry")
    options: dict[str, Any] = {
        "group": "g",
        "subscription_type": "Shared",
        "start": "earliest",
        "retry_enable": True,
        "dead_letter_policy": {"max_redeliver_count": 2, "initial_subscription_name": "dlq-sub"},
    }
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, **options) as consumer,
        client.producer(topic) as producer,
    ):
        assert consumer.dead_letters is not None
        assert f"{topic}-g-RETRY" in consumer.topics
        await producer.send(b"later", key=b"k", headers={"h": b"v"})
        seen = []
        for _ in range(3):
            message = await consumer.receive(timeout=20)
            seen.append((message.topic_name, message.headers.get("RECONSUMETIMES")))
            await consumer.reconsume_later(message, 0.5)
        assert seen == [(topic, None), (f"{topic}-g-RETRY", b"1"), (f"{topic}-g-RETRY", b"2")]
        # The third retry is past max_redeliver_count: the DLQ has it, kept by its initial subscription.
        async with client.consumer(f"{topic}-g-DLQ", group="dlq-sub") as dead_consumer:
            dead = await dead_consumer.receive(timeout=20)
            assert (dead.value, dead.key, dead.headers["h"], dead.headers["RECONSUMETIMES"]) == (b"later", b"k",
                                                                                                   b"v", b"3")
            assert dead.headers["REAL_TOPIC"] == topic.encode()
            await dead_consumer.ack(dead)
        assert await drain(consumer, 1.5) == []


def test_consumer_options_for_redelivery_are_checked() -> None:
    client = pulsarwire.Client("pulsar://127.0.0.1:6650")
    with pytest.raises(ValueError, match="Shared and Key_Shared"):
        client.consumer("t", group="g", dead_letter_policy={"max_redeliver_count": 3})
    with pytest.raises(ValueError, match="ack_timeout_ms"):
        client.consumer("t", group="g", ack_timeout_ms=5)
    with pytest.raises(ValueError, match="retry_enable"):
        client.consumer("t", group="g", subscription_type="Shared", retry_enable=True)
    with pytest.raises(ValueError, match="max_redeliver_count"):
        client.consumer("t", group="g", subscription_type="Shared", dead_letter_policy={"max_redeliver_count": 0})
    with pytest.raises(TypeError, match="dead_letter_policy"):
        client.consumer("t", group="g", subscription_type="Shared", dead_letter_policy=3)
