"""Rebootstrap (KIP-899 / KIP-1102) against real brokers: a cluster replaced by one on new ports.

The client bootstraps through a forwarder on a port of its own (the bootstrap name that keeps answering, as a
DNS name or a load balancer would), which leads to a broker of the test's own (A). A is then killed and the
forwarder is pointed at another broker (B, the session's) where the same topic exists: every address the
client learned from A is dead. With ``metadata_recovery_strategy="rebootstrap"`` the same producer and
consumer carry on on B; with ``"none"`` the client keeps to A and its send fails with a typed error.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

import kafkawire
from mqwire.common.errors import MqwireError
from mqwire.testing.endpoints import KafkaBroker
from tests.integration.crash import OwnBroker
from tests.integration.faultproxy import FaultProxy

# The broker of its own is what the time goes to; what is shown is the client's recovery, not a loop's.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]

BEFORE = 30
# Fewer than BEFORE, so that the consumer's position from A is past the end of B's log whenever it fetches
# there: out of range, where its start rule ("earliest") applies, as in the Java client.
AFTER = 10


@pytest.fixture(scope="module")
def broker_a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    with OwnBroker.for_module("kafka", tmp_path_factory.mktemp("rebootstrap-a") / "state") as broker:
        yield broker


async def consume(consumer: kafkawire.Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    while len(values) < count:
        values.extend(m.value or b"" for m in await consumer.getmany(timeout_ms=500))
    return values


async def test_a_replaced_cluster_is_found_again_through_the_bootstrap_name(
    broker_a: OwnBroker, kafka_broker: KafkaBroker
) -> None:
    topic = f"rebootstrap-{uuid.uuid4().hex[:8]}"
    a = urlsplit(broker_a.url)
    assert a.hostname is not None and a.port is not None
    async with kafkawire.connect(kafka_broker.url) as b_client, b_client.admin() as admin:
        await admin.create_topic(topic, partitions=1)
    async with FaultProxy(a.hostname, a.port) as forwarder:
        url = f"kafka://localhost:{forwarder.port}"
        common = {"request_timeout_ms": 3_000, "retry_backoff_max_ms": 200}
        async with (
            kafkawire.connect(url, metadata_recovery_rebootstrap_trigger_ms=2_000, **common) as client,
            kafkawire.connect(url, metadata_recovery_strategy="none", **common) as stuck,
        ):
            async with client.admin() as admin:
                await admin.create_topic(topic, partitions=1)
            async with (
                client.producer(topic, linger_ms=1) as producer,
                client.consumer(topic, start="earliest") as consumer,
                stuck.producer(
                    topic, linger_ms=1, request_timeout_ms=1_000, delivery_timeout_ms=3_000
                ) as stuck_producer,
            ):
                async with asyncio.timeout(30):
                    for i in range(BEFORE):
                        await producer.send(b"a%d" % i)
                    await stuck_producer.send(b"stuck-before")
                    before = await consume(consumer, BEFORE + 1)
                assert before == [b"a%d" % i for i in range(BEFORE)] + [b"stuck-before"]
                assert client._session.rebootstraps == 0

                # The cluster is replaced: A is gone, the bootstrap name now leads to B.
                await asyncio.to_thread(broker_a.kill)
                forwarder.target = (urlsplit(kafka_broker.url).hostname or "", kafka_broker.port)
                forwarder.drop()
                # "none" is tried meanwhile: the client keeps to A's address.
                stuck_send = asyncio.ensure_future(stuck_producer.send(b"stuck-after"))

                async with asyncio.timeout(40):
                    for i in range(AFTER):
                        await producer.send(b"b%d" % i)
                    after = await consume(consumer, AFTER)
                assert after == [b"b%d" % i for i in range(AFTER)]
                assert client._session.rebootstraps >= 1
                assert all(node.port != a.port for node in client._session.metadata.brokers.values())

                # ... and its send fails, typed, within its delivery timeout.
                async with asyncio.timeout(30):
                    with pytest.raises(MqwireError):
                        await stuck_send
                assert stuck._session.rebootstraps == 0
                assert all(node.port == a.port for node in stuck._session.metadata.brokers.values())
    async with kafkawire.connect(kafka_broker.url) as b_client, b_client.consumer(topic, start="earliest") as reader:
        async with asyncio.timeout(20):
            on_b = await consume(reader, AFTER)
    assert on_b == [b"b%d" % i for i in range(AFTER)]
