"""A three-node Kafka cluster losing nodes while an idempotent producer writes and a two-member group reads.

Faults, one after the other under steady traffic: the leader of a partition SIGKILLed, the leader of
another stopped cleanly (controlled shutdown), the group coordinator SIGKILLed; each node comes back
before the next fault. What must hold: every send acknowledged, each acknowledged record exactly once in
the log and in send order per partition, every record delivered to the group, the group's commits at the
end of the log.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.common.errors import RetriableError
from mqwire.testing.cluster import RunningCluster
from mqwire.testing.kafka_cluster import KafkaCluster
from tests.cluster.pauses import AckClock

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PARTITIONS = 3
KEYS = 30
OFFSETS_PARTITIONS = 6  # offsets.topic.num.partitions of kafka-cluster
SENDS_PER_SECOND = 200


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` (the coordinator of a group is chosen by it)."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str) -> int:
    return (java_hash(group) & 0x7FFFFFFF) % OFFSETS_PARTITIONS


@dataclass
class Produced:
    clock: AckClock = field(default_factory=AckClock)
    futures: list[asyncio.Future[kafkawire.RecordMetadata]] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)


async def leader_of(admin: kafkawire.Admin, topic: str, partition: int) -> int:
    (description,) = await admin.describe_topics([topic])
    return next(p.leader for p in description.partitions if p.partition == partition)


async def wait_fully_replicated(admin: kafkawire.Admin, topics: list[str], replicas: int, timeout: float = 120) -> None:
    """Every partition of ``topics`` has a leader and ``replicas`` in sync again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            descriptions = await admin.describe_topics(topics)
            if all(p.leader >= 0 and len(p.isr) == replicas for d in descriptions for p in d.partitions):
                return
        except RetriableError:
            pass
        assert time.monotonic() < deadline, f"{topics} not back to {replicas} in-sync replicas in {timeout} s"
        await asyncio.sleep(0.5)


async def produce(producer: kafkawire.Producer, out: Produced, stop: asyncio.Event) -> None:
    """Keyed records at a steady rate; each value is ``key:sequence`` so order per key can be checked."""
    sequence: collections.Counter[int] = collections.Counter()
    i = 0
    started = time.monotonic()
    while not stop.is_set():
        key = i % KEYS
        value = b"%d:%d" % (key, sequence[key])
        sequence[key] += 1
        future = await producer.enqueue(value, key=b"%d" % key)
        future.add_done_callback(lambda f: out.clock.ack() if not f.cancelled() and f.exception() is None else None)
        out.futures.append(future)
        out.values.append(value)
        i += 1
        # Paced by the clock, not by acknowledgements: the load goes on while a partition has no leader.
        ahead = i / SENDS_PER_SECOND - (time.monotonic() - started)
        if ahead > 0:
            await asyncio.sleep(ahead)


async def consume(consumer: kafkawire.Consumer, seen: list[tuple[int, int, bytes]], stop: asyncio.Event) -> None:
    """Read, acknowledge and commit after each batch, as an aiokafka application does: a commit that failed
    for now (a retriable error) or because the group rebalanced meanwhile (CommitFailedError, which a member
    that joined after the first one can cause at the start) is covered by the next one or by the new owner."""
    while not stop.is_set():
        batch = await consumer.getmany(timeout=0.5, max_records=500)
        for message in batch:
            seen.append((message.partition, message.offset, message.value or b""))
            await consumer.ack(message)
        if batch:
            with contextlib.suppress(RetriableError, kafkawire.CommitFailedError):
                await consumer.commit()


async def run_faults(cluster: RunningCluster, admin: kafkawire.Admin, topic: str, group: str, clock: AckClock) -> None:
    endpoint = cluster.endpoint
    assert isinstance(endpoint, KafkaCluster)
    offsets_topic = "__consumer_offsets"
    watched = [topic, offsets_topic]

    # 1. The leader of partition 0 SIGKILLed.
    victim = endpoint.node_of(await leader_of(admin, topic, 0))
    clock.event(f"leader SIGKILL ({victim})")
    await asyncio.to_thread(cluster.kill, victim)
    await asyncio.sleep(3)
    await asyncio.to_thread(cluster.start, victim)
    await wait_fully_replicated(admin, watched, 3)
    await asyncio.sleep(2)

    # 2. The leader of partition 1 stopped cleanly: controlled shutdown moves its leaderships first.
    victim = endpoint.node_of(await leader_of(admin, topic, 1))
    clock.event(f"controlled shutdown ({victim})")
    await asyncio.to_thread(cluster.stop, victim)
    await asyncio.sleep(3)
    await asyncio.to_thread(cluster.start, victim)
    await wait_fully_replicated(admin, watched, 3)
    await asyncio.sleep(2)

    # 3. The group coordinator SIGKILLed.
    victim = endpoint.node_of(await leader_of(admin, offsets_topic, coordinator_partition(group)))
    clock.event(f"coordinator SIGKILL ({victim})")
    await asyncio.to_thread(cluster.kill, victim)
    await asyncio.sleep(3)
    await asyncio.to_thread(cluster.start, victim)
    await wait_fully_replicated(admin, watched, 3)
    await asyncio.sleep(2)


def group_member(
    client: kafkawire.Client, topic: str, group: str, protocol: Literal["classic", "consumer"] = "classic"
) -> kafkawire.Consumer:
    """A member that commits what it has processed itself; a classic one is declared dead 10 s after its last
    heartbeat (under KIP-848 the broker sets the session)."""
    return client.consumer(
        topic,
        group=group,
        start="earliest",
        enable_auto_commit=False,
        group_protocol=protocol,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    )


async def read_log(url: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of the topic, partition by partition, as (offset, value) in the order the reader had them."""
    by_partition: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            ends = await admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(PARTITIONS)})
        total = sum(end.offset for end in ends.values())
        async with client.consumer(topic, start="earliest") as consumer:
            count = 0
            async with asyncio.timeout(120):
                while count < total:
                    for message in await consumer.getmany(timeout=0.5):
                        by_partition[message.partition].append((message.offset, message.value or b""))
                        count += 1
    return by_partition


Faults = Callable[[RunningCluster, kafkawire.Admin, str, str, AckClock], Awaitable[None]]


async def test_idempotent_producer_and_group_through_leader_and_coordinator_failures(
    kafka_cluster: RunningCluster,
) -> None:
    await produce_and_consume_through(kafka_cluster, run_faults, "classic")


async def rolling_restart(
    cluster: RunningCluster, admin: kafkawire.Admin, topic: str, group: str, clock: AckClock
) -> None:
    """Every node stopped cleanly and started again, one after the other, each back in sync before the next."""
    for node in cluster.nodes:
        clock.event(f"restart {node}")
        await asyncio.to_thread(cluster.restart, node)
        await wait_fully_replicated(admin, [topic, "__consumer_offsets"], 3)
        await asyncio.sleep(2)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_rolling_restart_under_a_group(
    kafka_cluster: RunningCluster, protocol: Literal["classic", "consumer"]
) -> None:
    """All three nodes restarted in turn under the idempotent producer and a group of the classic or the
    KIP-848 (``consumer``) protocol."""
    await produce_and_consume_through(kafka_cluster, rolling_restart, protocol)


async def produce_and_consume_through(
    kafka_cluster: RunningCluster, faults: Faults, group_protocol: Literal["classic", "consumer"]
) -> None:
    """Steady traffic through ``faults``, then the checks: every send acknowledged, each record once in the log
    and in send order per partition, every record delivered to the group, its commits at the log end."""
    await asyncio.to_thread(kafka_cluster.ensure_all_up)
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    group = f"failover-group-{uuid.uuid4().hex[:8]}"
    produced = Produced()
    seen: list[tuple[int, int, bytes]] = []
    async with kafkawire.connect(kafka_cluster.url, request_timeout_ms=10_000) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
        async with (
            client.producer(topic, enable_idempotence=True, linger_ms=5, delivery_timeout_ms=120_000) as producer,
            group_member(client, topic, group, group_protocol) as first,
            group_member(client, topic, group, group_protocol) as second,
        ):
            stop_producing, stop_consuming = asyncio.Event(), asyncio.Event()
            consumers = [
                asyncio.create_task(consume(first, seen, stop_consuming)),
                asyncio.create_task(consume(second, seen, stop_consuming)),
            ]
            producing = asyncio.create_task(produce(producer, produced, stop_producing))
            await asyncio.sleep(5)
            await faults(kafka_cluster, admin, topic, group, produced.clock)
            stop_producing.set()
            await producing
            outcomes = await asyncio.wait_for(asyncio.gather(*produced.futures, return_exceptions=True), 150)
            pairs = zip(produced.values, outcomes, strict=True)
            failed = [(v, o) for v, o in pairs if isinstance(o, BaseException)]
            assert not failed, f"{len(failed)} sends failed, first: {failed[:3]}"
            acknowledged = set(produced.values)
            # The group goes on until it has had every record (or two minutes, then says what it missed).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(120):
                    while not acknowledged <= {value for _, _, value in seen} and not any(
                        task.done() for task in consumers
                    ):
                        await asyncio.sleep(0.5)
            undelivered = acknowledged - {value for _, _, value in seen}
            # A member whose loop raised stops reading: its error explains what it missed.
            crashed = [repr(task.exception()) for task in consumers if task.done() and task.exception()]
            assert not crashed, f"a group member's loop failed: {crashed}"
            assignments = {
                "first": sorted(tp.partition for tp in first.assignment()),
                "second": sorted(tp.partition for tp in second.assignment()),
            }
            assert not undelivered, (
                f"{len(undelivered)} acknowledged records never reached the {group_protocol} group "
                f"(e.g. {sorted(undelivered)[:3]}); assignments at the end: {assignments}; "
                f"delivered per partition: {collections.Counter(p for p, _, _ in seen)}"
            )
            stop_consuming.set()
            await asyncio.gather(*consumers)
            await first.commit()
            await second.commit()
        ends = await admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(PARTITIONS)})
        committed = await admin.list_consumer_group_offsets(group, list(ends))

    read = await read_log(kafka_cluster.url, topic)
    for partition, records in read.items():
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(offsets), (
            f"partition {partition}: the reader delivered offsets out of order: "
            f"{[(a, b) for a, b in itertools.pairwise(offsets) if b < a][:3]} (first offsets {offsets[:3]})"
        )
    # The log itself, in offset order.
    log = {p: [value for _, value in sorted(records)] for p, records in read.items()}
    in_log = [value for values in log.values() for value in values]
    duplicates = [v for v, n in collections.Counter(in_log).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} records twice in the log, e.g. {duplicates[:5]}"
    assert set(in_log) == acknowledged, f"{len(acknowledged - set(in_log))} acknowledged records missing"
    for partition, values in log.items():
        last: dict[bytes, int] = {}
        for value in values:
            key, sequence = value.split(b":")
            assert int(sequence) > last.get(key, -1), f"partition {partition}: {value!r} after {last[key]}"
            last[key] = int(sequence)
    for tp, end in ends.items():
        assert committed[tp] == end.offset, f"{tp}: committed {committed[tp]}, end {end.offset}"
    delivered = collections.Counter((p, o) for p, o, _ in seen)
    redelivered = sum(n - 1 for n in delivered.values())
    pauses = produced.clock.pauses_after_events()
    print(
        f"\nkafkawire on kafka-cluster ({group_protocol} group): {len(acknowledged)} records, "
        f"redelivered to the group {redelivered}, "
        f"longest pause between acknowledgements {produced.clock.longest_pause():.2f} s; per fault: {pauses}"
    )


def produce_with_librdkafka(bootstrap: str, topic: str, clock: AckClock, stop: threading.Event) -> dict[str, int]:
    """The reference client (confluent-kafka, librdkafka) at the same rate with idempotence: its
    acknowledgements go to ``clock``; returns the count of acknowledged and failed sends."""
    import confluent_kafka  # the reference client is a test dependency only

    outcome = {"acknowledged": 0, "failed": 0}

    def delivered(error: object, message: object) -> None:
        if error is None:
            outcome["acknowledged"] += 1
            clock.ack()
        else:
            outcome["failed"] += 1

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "delivery.timeout.ms": 120_000,
            "request.timeout.ms": 10_000,
        }
    )
    i = 0
    started = time.monotonic()
    while not stop.is_set():
        producer.produce(topic, value=b"%d" % i, key=b"%d" % (i % KEYS), on_delivery=delivered)
        i += 1
        producer.poll(0)
        ahead = i / SENDS_PER_SECOND - (time.monotonic() - started)
        if ahead > 0:
            producer.poll(ahead)
    producer.flush(150)
    return outcome


@pytest.mark.reference_pause
async def test_failover_pause_of_the_reference_client(kafka_cluster: RunningCluster) -> None:
    """The same faults under librdkafka's idempotent producer, for the pause to compare with ours."""
    await asyncio.to_thread(kafka_cluster.ensure_all_up)
    endpoint = kafka_cluster.endpoint
    assert isinstance(endpoint, KafkaCluster)
    topic = f"failover-ref-{uuid.uuid4().hex[:8]}"
    clock = AckClock()
    stop = threading.Event()
    async with kafkawire.connect(kafka_cluster.url, request_timeout_ms=10_000) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
        producing = asyncio.create_task(
            asyncio.to_thread(produce_with_librdkafka, endpoint.bootstrap_servers, topic, clock, stop)
        )
        await asyncio.sleep(5)
        await run_faults(kafka_cluster, admin, topic, f"failover-ref-group-{uuid.uuid4().hex[:8]}", clock)
        stop.set()
        outcome = await producing
    print(
        f"\nlibrdkafka on kafka-cluster: {outcome}, longest pause between acknowledgements "
        f"{clock.longest_pause():.2f} s; per fault: {clock.pauses_after_events()}"
    )
    assert outcome["failed"] == 0
    assert outcome["acknowledged"] > 0


TRANSACTION_SIZE = 20
TRANSACTION_PARTITIONS = 6  # transaction.state.log.num.partitions of kafka-cluster


@dataclass
class Transactions:
    committed: set[bytes] = field(default_factory=set)
    aborted: set[bytes] = field(default_factory=set)
    # Transactions whose end raised: either outcome is allowed for them.
    unknown: set[bytes] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    # Seconds each transaction took, from begin to the end of its commit or abort.
    durations: list[float] = field(default_factory=list)


async def transact(producer: kafkawire.Producer, out: Transactions, stop: asyncio.Event) -> None:
    """Transactions of 20 records, one in four aborted on purpose, until ``stop``."""
    number = 0
    while not stop.is_set():
        values = [b"t%d-%d" % (number, i) for i in range(TRANSACTION_SIZE)]
        commit = number % 4 != 3
        began = time.monotonic()
        try:
            await producer.begin_transaction()
            for i, value in enumerate(values):
                await producer.enqueue(value, key=b"%d" % i)
            if commit:
                await producer.commit_transaction()
                out.committed.update(values)
            else:
                await producer.abort_transaction()
                out.aborted.update(values)
        except Exception as err:  # a fault in the middle: the outcome of this one is not known
            out.errors.append(f"{type(err).__name__}: {err}")
            out.unknown.update(values)
            with contextlib.suppress(Exception):
                await producer.abort_transaction()
            await asyncio.sleep(1)
        out.durations.append(time.monotonic() - began)
        number += 1


async def test_transactions_through_a_leader_and_a_transaction_coordinator_crash(
    kafka_cluster: RunningCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transactional producer and a ``read_committed`` reader through the SIGKILL of a partition leader and
    of the transaction coordinator: no aborted record is read, no committed one is missing. The cluster (Kafka
    4.3) finalizes transaction version 2: partitions join through Produce, never AddPartitionsToTxn."""
    sent = record_api_keys(monkeypatch)
    await asyncio.to_thread(kafka_cluster.ensure_all_up)
    endpoint = kafka_cluster.endpoint
    assert isinstance(endpoint, KafkaCluster)
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    transactional_id = f"txn-{uuid.uuid4().hex[:8]}"
    done = Transactions()
    read: list[bytes] = []
    async with kafkawire.connect(kafka_cluster.url, request_timeout_ms=10_000) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
        async with (
            client.producer(topic, transactional_id=transactional_id, delivery_timeout_ms=120_000) as producer,
            client.consumer(topic, start="earliest", isolation_level="read_committed") as reader,
        ):
            stop_producing, stop_reading = asyncio.Event(), asyncio.Event()

            async def read_all() -> None:
                while not stop_reading.is_set():
                    read.extend(m.value or b"" for m in await reader.getmany(timeout=0.5))

            reading = asyncio.create_task(read_all())
            producing = asyncio.create_task(transact(producer, done, stop_producing))
            await asyncio.sleep(5)
            # The leader of partition 0, then the transaction coordinator.
            for victim_of in ((topic, 0), ("__transaction_state", transaction_partition(transactional_id))):
                victim = endpoint.node_of(await leader_of(admin, *victim_of))
                await asyncio.to_thread(kafka_cluster.kill, victim)
                await asyncio.sleep(5)
                await asyncio.to_thread(kafka_cluster.start, victim)
                await wait_fully_replicated(admin, [topic, "__transaction_state"], 3)
                await asyncio.sleep(2)
            stop_producing.set()
            await producing
            try:
                async with asyncio.timeout(180):
                    while not done.committed <= set(read):
                        await asyncio.sleep(0.5)
            except TimeoutError:
                missing = done.committed - set(read)
                numbers = sorted({value.split(b"-")[0].decode() for value in missing})
                pytest.fail(
                    f"{len(missing)} committed records not read within 180 s, of transactions {numbers[:20]};"
                    f" errors met: {done.errors[:5]}; the longest transaction {max(done.durations, default=0):.1f} s"
                )
            await asyncio.sleep(2)  # anything aborted that would wrongly show up has had time to
            stop_reading.set()
            await reading
    seen = set(read)
    print(
        f"\nkafkawire transactions on kafka-cluster: {len(done.committed)} committed, {len(done.aborted)} aborted, "
        f"{len(done.unknown)} in transactions a fault interrupted ({done.errors[:3]}); {len(done.durations)} "
        f"transactions, the longest {max(done.durations, default=0):.1f} s"
    )
    assert done.committed and done.aborted
    assert not seen & done.aborted, f"{len(seen & done.aborted)} aborted records read"
    assert done.committed <= seen
    assert len(read) == len(seen), "a committed record read twice"
    assert ADD_PARTITIONS_TO_TXN not in {key for key, _ in sent}, "transaction version 1 was used"
    assert {version for key, version in sent if key == END_TXN} == {5}


ADD_PARTITIONS_TO_TXN, END_TXN = 24, 26


def record_api_keys(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(API key, version) of every request kafkawire's connections answer to from now on."""
    from kafkawire.connection import KafkaConnection

    sent: list[tuple[int, int]] = []
    request = KafkaConnection.request

    async def recorded(self: KafkaConnection, body: Any, **kwargs: Any) -> Any:
        sent.append((body.API_KEY, kwargs.get("version") or self.version_for(body.API_KEY)))
        return await request(self, body, **kwargs)

    monkeypatch.setattr(KafkaConnection, "request", recorded)
    return sent


def transaction_partition(transactional_id: str) -> int:
    return (java_hash(transactional_id) & 0x7FFFFFFF) % TRANSACTION_PARTITIONS
