"""A TubeMQ cluster of three masters and two brokers (memory store off) losing nodes under traffic.

- The active master SIGKILLed: a standby takes over, producer and consumer group re-register and go on;
  then a broker SIGKILLed and started again. Every acknowledged message reaches the group, which confirms
  each batch only after processing it.
- With the memory store off, every message whose send was acknowledged is still there after its broker
  was SIGKILLed: counted by a new group reading the whole topic.
"""

from __future__ import annotations

import asyncio
import time

import pytest

import tubemqwire
from mqwire.testing.cluster import RunningCluster
from mqwire.testing.tubemq_cluster import TubeMQCluster
from tests.cluster.tubemq_load import Sent, consume, produce, read_topic, settle

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 5_000}


def endpoint_of(cluster: RunningCluster) -> TubeMQCluster:
    endpoint = cluster.endpoint
    assert isinstance(endpoint, TubeMQCluster)
    return endpoint


async def test_master_failover_and_broker_crash_under_a_producer_and_a_group(
    tubemq_cluster: RunningCluster,
) -> None:
    await asyncio.to_thread(tubemq_cluster.ensure_all_up)
    endpoint = endpoint_of(tubemq_cluster)
    topic = "cluster_failover"
    sent = Sent()
    seen: list[bytes] = []
    async with (
        tubemqwire.connect(tubemq_cluster.url, heartbeat_interval_ms=1000, request_timeout_ms=5_000) as client,
        client.producer(topic) as producer,
        client.consumer(topic, group="cluster-failover", start="earliest") as consumer,
    ):
        stop_producing, stop_consuming = asyncio.Event(), asyncio.Event()
        consuming = asyncio.create_task(consume(consumer, seen, stop_consuming))
        producing = asyncio.create_task(produce(producer, sent, stop_producing))
        await asyncio.sleep(5)

        active = await asyncio.to_thread(endpoint.wait_active_master)
        sent.clock.event(f"active master SIGKILL ({active})")
        began = time.monotonic()
        await asyncio.to_thread(tubemq_cluster.kill, active)
        successor = await asyncio.to_thread(endpoint.wait_active_master, 60)
        takeover = time.monotonic() - began
        assert successor != active
        await asyncio.sleep(10)
        await asyncio.to_thread(tubemq_cluster.start, active)
        await asyncio.sleep(5)

        sent.clock.event("broker-1 SIGKILL")
        await asyncio.to_thread(tubemq_cluster.kill, "broker-1")
        await asyncio.sleep(3)
        await asyncio.to_thread(tubemq_cluster.start, "broker-1")
        await asyncio.sleep(10)

        stop_producing.set()
        await producing
        await settle(sent)
        # The group goes on until it has had every acknowledged message.
        try:
            async with asyncio.timeout(120):
                while not sent.acknowledged <= set(seen):
                    await asyncio.sleep(0.5)
        except TimeoutError:
            pass
        stop_consuming.set()
        await consuming
    missing = sent.acknowledged - set(seen)
    print(
        f"\ntubemqwire on tubemq-cluster: {len(sent.values)} sent, {len(sent.acknowledged)} acknowledged, "
        f"failed sends {sent.failures}, {successor} active {takeover:.1f} s after {active} was killed, "
        f"longest pause between acknowledgements {sent.clock.longest_pause():.2f} s; per fault: "
        f"{sent.clock.pauses_after_events()}"
    )
    assert not missing, f"{len(missing)} acknowledged messages never reached the group, e.g. {sorted(missing)[:5]}"
    # The traffic went on after both faults.
    assert len(sent.acknowledged) > len(sent.values) // 2


async def test_memory_store_off_keeps_every_acknowledged_message_through_a_broker_crash(
    tubemq_cluster: RunningCluster,
) -> None:
    await asyncio.to_thread(tubemq_cluster.ensure_all_up)
    assert endpoint_of(tubemq_cluster).mem_store is False
    lost, sent = await crash_a_broker_under_traffic(tubemq_cluster, "cluster_durable")
    assert not lost, f"{len(lost)} of {len(sent.acknowledged)} acknowledged messages lost, e.g. {sorted(lost)[:5]}"


async def crash_a_broker_under_traffic(cluster: RunningCluster, topic: str) -> tuple[set[bytes], Sent]:
    """Send for 10 s, SIGKILL broker-1 mid-traffic, start it again, send 5 s more; then read the whole topic
    with a new group. Returns the acknowledged messages that are not there, and what was sent."""
    sent = Sent()
    async with (
        tubemqwire.connect(cluster.url, heartbeat_interval_ms=1000, request_timeout_ms=5_000) as client,
        client.producer(topic) as producer,
    ):
        stop = asyncio.Event()
        producing = asyncio.create_task(produce(producer, sent, stop))
        await asyncio.sleep(10)
        await asyncio.to_thread(cluster.kill, "broker-1")
        await asyncio.sleep(2)
        await asyncio.to_thread(cluster.start, "broker-1")
        await asyncio.sleep(5)
        stop.set()
        await producing
        await settle(sent)
    assert len(sent.acknowledged) > 1000
    found = await read_topic(cluster.url, topic, sent.acknowledged)
    lost = sent.acknowledged - found
    print(
        f"\n{topic} (memory store {'on' if cluster.endpoint.mem_store else 'off'}): {len(sent.values)} sent, "
        f"{len(sent.acknowledged)} acknowledged, {len(lost)} acknowledged lost, failed sends {sent.failures}"
    )
    return lost, sent
