"""A TubeMQ cluster of three masters and two brokers (memory store off) losing nodes under traffic.

- The active master SIGKILLed: a standby takes over, producer and consumer group re-register and go on;
  then a broker SIGKILLed and started again. No send fails (the producer's retries cover the failover),
  and every acknowledged message reaches the group, which confirms each batch only after processing it.
- With the memory store off, every message whose send was acknowledged is still there after its broker
  was SIGKILLed: counted by a new group reading the whole topic.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

import tubemqwire
from mqwire.testing import classpath
from mqwire.testing.cluster import RunningCluster
from mqwire.testing.java import find_java
from mqwire.testing.tubemq_cluster import TubeMQCluster
from tests.cluster.pauses import AckClock
from tests.cluster.tubemq_load import SENDS_PER_SECOND, Sent, consume, produce, read_topic, settle
from tests.listening import is_loopback, listening

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 5_000}


def endpoint_of(cluster: RunningCluster) -> TubeMQCluster:
    endpoint = cluster.endpoint
    assert isinstance(endpoint, TubeMQCluster)
    return endpoint


async def master_and_broker_faults(cluster: RunningCluster, clock: AckClock) -> tuple[str, str, float]:
    """SIGKILL the active master, wait for a standby to take over, start the old one again; then SIGKILL
    broker-1 and start it again. Returns the old and the new active master and the seconds the election took."""
    endpoint = endpoint_of(cluster)
    active = await asyncio.to_thread(endpoint.wait_active_master)
    clock.event(f"active master SIGKILL ({active})")
    began = time.monotonic()
    await asyncio.to_thread(cluster.kill, active)
    successor = await asyncio.to_thread(endpoint.wait_active_master, 60)
    takeover = time.monotonic() - began
    assert successor != active
    await asyncio.sleep(10)
    await asyncio.to_thread(cluster.start, active)
    await asyncio.sleep(5)

    clock.event("broker-1 SIGKILL")
    await asyncio.to_thread(cluster.kill, "broker-1")
    await asyncio.sleep(3)
    await asyncio.to_thread(cluster.start, "broker-1")
    await asyncio.sleep(10)
    return active, successor, takeover


async def test_master_failover_and_broker_crash_under_a_producer_and_a_group(
    tubemq_cluster: RunningCluster,
) -> None:
    await asyncio.to_thread(tubemq_cluster.ensure_all_up)
    topic = "cluster_failover"
    sent = Sent()
    seen: list[bytes] = []
    async with (
        tubemqwire.connect(tubemq_cluster.url, heartbeat_interval_ms=1000, request_timeout_ms=5_000) as client,
        # Retries spread over ~27 s cover the time the brokers take to register with a new master.
        client.producer(topic, retries=10, retry_backoff_ms=500) as producer,
        client.consumer(topic, group="cluster-failover", start="earliest") as consumer,
    ):
        stop_producing, stop_consuming = asyncio.Event(), asyncio.Event()
        consuming = asyncio.create_task(consume(consumer, seen, stop_consuming))
        producing = asyncio.create_task(produce(producer, sent, stop_producing))
        await asyncio.sleep(5)

        active, successor, takeover = await master_and_broker_faults(tubemq_cluster, sent.clock)
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
    assert not sent.failures, f"sends failed although retriable: {sent.failures}"
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


def reference_producer(cluster: RunningCluster, topic: str, folder: Path, stop_file: Path) -> subprocess.Popen[str]:
    """The TubeMQ Java client's producer (tests/cluster/java/TubeFailoverProducer.java), compiled here."""
    java = find_java("tubemq").executable
    jars = classpath.classpath("tubemq")
    source = Path(__file__).with_name("java") / "TubeFailoverProducer.java"
    subprocess.run([str(Path(java).with_name("javac")), "-cp", jars, "-d", str(folder), str(source)], check=True)
    masters = cluster.url.split("://", 1)[1]
    return subprocess.Popen(
        [
            java,
            "-Xmx256m",
            "-cp",
            f"{folder}{os.pathsep}{jars}",
            "TubeFailoverProducer",
            masters,
            topic,
            str(SENDS_PER_SECOND),
            str(stop_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


@pytest.mark.reference_pause
async def test_failover_pause_of_the_reference_client(tubemq_cluster: RunningCluster, tmp_path: Path) -> None:
    """The same faults under the TubeMQ Java client's producer, for the pause to compare with ours."""
    await asyncio.to_thread(tubemq_cluster.ensure_all_up)
    clock = AckClock(now=time.time)
    failures: dict[str, int] = {}
    stop_file = tmp_path / "stop"
    process = reference_producer(tubemq_cluster, "cluster_failover", tmp_path, stop_file)
    unanswered: list[int] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            word, _, rest = line.strip().partition(" ")
            if word == "ACK":
                clock.ack(int(rest) / 1000)
            elif word == "FAIL":
                failures[rest] = failures.get(rest, 0) + 1
            elif word == "DONE":
                unanswered.append(int(rest))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        await asyncio.sleep(10)
        await master_and_broker_faults(tubemq_cluster, clock)
        stop_file.touch()
        await asyncio.to_thread(process.wait, 120)
        await asyncio.to_thread(reader.join, 10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    print(
        f"\nTubeMQ Java client on tubemq-cluster: {len(clock.acks)} acknowledged, failed {failures}, "
        f"never answered {unanswered}, longest pause between acknowledgements {clock.longest_pause():.2f} s; "
        f"per fault: {clock.pauses_after_events()}"
    )
    assert unanswered, "the Java producer did not finish"
    assert clock.acks


def test_every_node_listens_on_loopback_only(tubemq_cluster: RunningCluster) -> None:
    """The servers bind the wildcard address; the launcher's shim binds each to its own 127.0.0.x."""
    tubemq_cluster.ensure_all_up()
    status = tubemq_cluster.launcher.get(tubemq_cluster.name)
    sockets = listening(status.pids.values())
    assert len(sockets) >= len(status.pids), f"too few listening sockets: {sockets}"
    exposed = [(address, port) for address, port in sockets if not is_loopback(address)]
    assert not exposed, f"the cluster listens beyond loopback: {exposed}"
