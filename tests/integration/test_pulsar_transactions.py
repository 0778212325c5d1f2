"""Transactions against a broker with the transaction coordinator enabled (as the standalone of brokers/ is)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def drain(consumer: pulsarwire.Consumer, quiet: float = 2.0) -> list[bytes]:
    """Everything the consumer receives until nothing comes for ``quiet`` seconds."""
    values = []
    while True:
        try:
            message = await consumer.receive(timeout=quiet)
        except ReceiveTimeoutError:
            return values
        values.append(message.value)
        await consumer.ack(message)


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
async def test_consume_transform_produce_commits_once_and_hides_aborted(
    pulsar_broker: PulsarBroker, batching: bool
) -> None:
    source, sink = unique("txn-in"), unique("txn-out")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with (
            client.consumer(sink, group="reader", start="earliest") as downstream,
            client.consumer(source, group="processor", start="earliest") as upstream,
        ):
            async with client.producer(source, batching_enabled=batching) as producer:
                for index in range(6):
                    await producer.enqueue(b"%d" % index)
                await producer.flush()
            async with client.producer(sink) as output:
                done: set[bytes] = set()
                aborted = 0
                while len(done) < 6:
                    message = await upstream.receive(timeout=20)
                    txn = await client.transaction(timeout_ms=30_000)
                    await output.send(b"out-" + message.value, transaction=txn)
                    await upstream.ack(message, transaction=txn)
                    if int(message.value) % 2 and message.value not in done and aborted < 3:
                        # The first attempt of every odd message is aborted: its output must never show, and
                        # the input comes back once asked for again.
                        await output.send(b"ABORTED-" + message.value, transaction=txn)
                        await txn.abort()
                        aborted += 1
                        await upstream.redeliver_unacknowledged_messages()
                        continue
                    if not done:
                        # Nothing is visible before the first commit.
                        with pytest.raises(ReceiveTimeoutError):
                            await downstream.receive(timeout=1)
                    await txn.commit()
                    assert txn.state == "committed"
                    done.add(message.value)
            seen = await drain(downstream)
        assert aborted == 3
        assert Counter(seen) == Counter(b"out-%d" % i for i in range(6))  # each exactly once, none aborted
        # Every input acknowledgement was committed: the subscription has nothing left.
        async with client.consumer(source, group="processor") as again:
            assert await drain(again, quiet=1.5) == []


async def test_context_manager_commits_or_aborts(pulsar_broker: PulsarBroker) -> None:
    topic = unique("txn-ctx")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        async with await client.transaction() as txn:
            await producer.send(b"committed", transaction=txn)
        assert txn.state == "committed"
        with pytest.raises(RuntimeError):
            async with await client.transaction() as failed:
                await producer.send(b"rolled back", transaction=failed)
                raise RuntimeError("the application failed")
        assert failed.state == "aborted"
        with pytest.raises(pulsarwire.TransactionError):
            await producer.send(b"after the end", transaction=failed)
        assert await drain(consumer) == [b"committed"]


async def test_a_timed_out_transaction_fails_its_sends_acks_and_commit(pulsar_broker: PulsarBroker) -> None:
    topic = unique("txn-timeout")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        await producer.send(b"plain")
        message = await consumer.receive(timeout=20)
        txn = await client.transaction(timeout_ms=1000)
        await producer.send(b"in time", transaction=txn)
        await asyncio.sleep(1.5)
        with pytest.raises(pulsarwire.TransactionTimeoutError):
            await producer.send(b"too late", transaction=txn)
        with pytest.raises(pulsarwire.TransactionTimeoutError):
            await consumer.ack(message, transaction=txn)
        with pytest.raises(pulsarwire.TransactionTimeoutError):
            await txn.commit()
        # The coordinator aborted it: what was sent in time never shows.
        await consumer.ack(message)
        assert await drain(consumer) == []
