"""kafkawire consumers in consumer groups (classic protocol), alone and together with kafka-python members."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import uuid
from typing import Any

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

GROUP_OPTIONS: dict[str, Any] = {
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 500,
    "max_poll_interval_ms": 30_000,
    "start": "earliest",
}


def unique(label: str) -> str:
    return f"kw-{label}-{uuid.uuid4().hex[:8]}"


async def create_and_fill(url: str, topic: str, partitions: int, count: int) -> None:
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=partitions)
        async with client.producer(topic) as producer:
            for i in range(count):
                await producer.enqueue(b"%d" % i, key=b"%d" % i)
            await producer.flush()


async def settle(
    held: collections.abc.Callable[[], list[set[TopicPartition]]], total: int, timeout: float = 60
) -> None:
    """Until the members hold every partition between them, each exactly once, none empty-handed."""
    async with asyncio.timeout(timeout):
        while True:
            sets = held()
            if all(sets) and sum(len(s) for s in sets) == total and len(set().union(*sets)) == total:
                return
            await asyncio.sleep(0.2)


class PeerMember:
    """A kafka-python group member in a thread: processes, then commits synchronously after each poll."""

    def __init__(self, bootstrap: str, topic: str, group: str, processed: list[int]) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            partition_assignment_strategy=[RangePartitionAssignor],
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
        )
        self.processed = processed
        self.stop = threading.Event()
        self.assignment: set[TopicPartition] = set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                batches = self.consumer.poll(timeout_ms=200)
                for records in batches.values():
                    self.processed.extend(int(r.value) for r in records)
                if batches:
                    self.consumer.commit()
                self.assignment = {TopicPartition(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        finally:
            self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


async def test_a_mixed_range_group_shares_partitions_and_takes_over(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("mixed"), unique("group")
    count, partitions = 3_000, 6
    await create_and_fill(kafka_broker.url, topic, partitions, count)
    processed: list[int] = []
    async with kafkawire.connect(kafka_broker.url) as client:
        ours = [
            client.consumer(topic, group=group, partition_assignment_strategy="range", **GROUP_OPTIONS)
            for _ in range(2)
        ]
        for consumer in ours:
            await consumer.start()
        peer = await asyncio.to_thread(PeerMember, kafka_broker.bootstrap_servers, topic, group, processed)
        try:

            async def work(consumer: kafkawire.Consumer) -> None:
                while not consumer.closed:
                    try:
                        messages = await consumer.getmany(timeout_ms=200)
                    except kafkawire.ClosedError:
                        return
                    for message in messages:
                        processed.append(int(message.value or b""))
                        await consumer.ack(message)

            workers = [asyncio.create_task(work(c)) for c in ours]
            # Three members, six partitions: two each, no partition twice.
            await settle(lambda: [ours[0].assignment(), ours[1].assignment(), peer.assignment], partitions)
            # One of ours leaves; the other two take its partitions over.
            await ours[0].close()
            await settle(lambda: [ours[1].assignment(), peer.assignment], partitions)
            async with asyncio.timeout(60):
                while len(set(processed)) < count:
                    await asyncio.sleep(0.2)
            await ours[1].close()
            await asyncio.gather(*workers)
        finally:
            await asyncio.to_thread(peer.close)
            for consumer in ours:
                await consumer.close()
    counts = collections.Counter(processed)
    assert set(counts) == set(range(count))
    twice = [value for value, n in counts.items() if n > 1]
    assert not twice, f"{len(twice)} records processed twice"


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
async def test_members_of_our_own_split_partitions_and_commit_for_the_group(
    kafka_broker: KafkaBroker, strategy: str
) -> None:
    topic, group = unique("own"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 4, 400)
    assigned: list[set[TopicPartition]] = []
    revoked: list[set[TopicPartition]] = []

    async def on_assigned(partitions: set[TopicPartition]) -> None:
        assigned.append(partitions)

    async def on_revoked(partitions: set[TopicPartition]) -> None:
        revoked.append(partitions)

    options = dict(GROUP_OPTIONS, partition_assignment_strategy=strategy)
    async with kafkawire.connect(kafka_broker.url) as client:
        async with (
            client.consumer(topic, group=group, on_assigned=on_assigned, on_revoked=on_revoked, **options) as first,
            client.consumer(topic, group=group, **options) as second,
        ):
            await settle(lambda: [first.assignment(), second.assignment()], 4)
            assert first.group_metadata().generation_id == second.group_metadata().generation_id >= 1
            assert first.group_metadata().member_id != second.group_metadata().member_id
            seen: list[int] = []
            async with asyncio.timeout(60):
                while len(seen) < 400:
                    for consumer in (first, second):
                        for message in await consumer.getmany(timeout_ms=100):
                            seen.append(int(message.value or b""))
                            await consumer.ack(message)
            assert sorted(seen) == list(range(400))
            await first.commit()
            await second.commit()
        assert assigned and assigned[-1] and revoked  # the callbacks ran, closing revoked the last assignment
        async with client.admin() as admin:
            committed = await admin.list_consumer_group_offsets(group, [TopicPartition(topic, p) for p in range(4)])
            ends = await admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(4)})
        assert committed == {tp: ends[tp].offset for tp in committed}


def test_group_options_are_checked_at_construction() -> None:
    client = kafkawire.connect("kafka://127.0.0.1:1")
    with pytest.raises(ValueError, match="assignor"):
        client.consumer("t", group="g", partition_assignment_strategy="fair")
    with pytest.raises(ValueError, match="heartbeat_interval_ms"):
        client.consumer("t", group="g", session_timeout_ms=1000, heartbeat_interval_ms=1000)
    with pytest.raises(ValueError, match="group_protocol"):
        client.consumer("t", group="g", group_protocol="eager")
    with pytest.raises(ValueError, match="group_remote_assignor"):
        client.consumer("t", group="g", group_protocol="consumer", group_remote_assignor="sticky")
    with pytest.raises(TypeError, match="on_assigned"):
        client.consumer("t", group="g", on_assigned=42)
    with pytest.raises(TypeError, match="on_lost"):
        client.consumer("t", group="g", on_lost="later")
    with pytest.raises(ValueError, match="rebalance_timeout_ms"):
        client.consumer("t", group="g", rebalance_timeout_ms=0)
    with pytest.raises(ValueError, match="max_poll_interval_ms"):
        client.consumer("t", group="g", max_poll_interval_ms=-5)


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_static_member_restarting_within_the_session_keeps_its_partitions(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("static"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 4, 40)
    options = dict(GROUP_OPTIONS, partition_assignment_strategy="range")
    async with (
        kafkawire.connect(kafka_broker.url) as client,
        client.consumer(topic, group=group, group_instance_id="steady", **options) as steady,
    ):
        restarting = client.consumer(topic, group=group, group_instance_id="restarting", **options)
        await restarting.start()
        await settle(lambda: [steady.assignment(), restarting.assignment()], 4)
        before = restarting.assignment()
        generation = steady.group_metadata().generation_id
        rebalances = steady.rebalances
        # A static member closes without LeaveGroup; back within the session timeout, it is the same member.
        await restarting.close()
        again = client.consumer(topic, group=group, group_instance_id="restarting", **options)
        await again.start()
        try:
            async with asyncio.timeout(30):
                while again.assignment() != before:
                    await asyncio.sleep(0.2)
            await asyncio.sleep(2)  # a few heartbeats: no rebalance follows either
            assert steady.group_metadata().generation_id == generation
            assert steady.rebalances == rebalances
        finally:
            await again.close()


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_a_kip848_group_balances_and_rebalances(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("kip848"), unique("group")
    count, partitions = 600, 6
    await create_and_fill(kafka_broker.url, topic, partitions, count)
    options: dict[str, Any] = {"group_protocol": "consumer", "start": "earliest", "max_poll_interval_ms": 30_000}
    processed: list[int] = []
    revoked: list[set[TopicPartition]] = []

    async def on_revoked(partitions: set[TopicPartition]) -> None:
        revoked.append(partitions)

    async with kafkawire.connect(kafka_broker.url) as client:
        members = [client.consumer(topic, group=group, on_revoked=on_revoked, **options) for _ in range(3)]
        for member in members:
            await member.start()

        async def work(consumer: kafkawire.Consumer) -> None:
            while not consumer.closed:
                try:
                    messages = await consumer.getmany(timeout_ms=200)
                except kafkawire.ClosedError:
                    return
                for message in messages:
                    processed.append(int(message.value or b""))
                    await consumer.ack(message)

        workers = [asyncio.create_task(work(m)) for m in members]
        try:
            await settle(lambda: [m.assignment() for m in members], partitions)
            assert len({m.group_metadata().member_id for m in members}) == 3
            assert all(m.group_metadata().generation_id > 0 for m in members)  # the member epoch
            await members[0].close()
            await settle(lambda: [m.assignment() for m in members[1:]], partitions)
            async with asyncio.timeout(60):
                while len(set(processed)) < count:
                    await asyncio.sleep(0.2)
        finally:
            for member in members:
                await member.close()
            await asyncio.gather(*workers)
    assert set(processed) == set(range(count))
    assert revoked  # partitions moved incrementally when the member left, and on close


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_cooperative_sticky_keeps_partitions_where_they_were(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("coop"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 6, 60)
    options = dict(GROUP_OPTIONS, partition_assignment_strategy="cooperative-sticky")
    revoked: list[set[TopicPartition]] = []

    async def on_revoked(partitions: set[TopicPartition]) -> None:
        revoked.append(partitions)

    async with (
        kafkawire.connect(kafka_broker.url) as client,
        client.consumer(topic, group=group, on_revoked=on_revoked, **options) as first,
    ):
        await settle(lambda: [first.assignment()], 6)
        before = first.assignment()
        async with client.consumer(topic, group=group, **options) as second:
            await settle(lambda: [first.assignment(), second.assignment()], 6)
            kept = first.assignment()
            # The first member gave up only what moved to the second, and kept the rest all along.
            assert len(kept) == 3 and len(second.assignment()) == 3
            assert kept <= before
            assert set().union(*revoked) == before - kept
            got: list[int] = []
            async with asyncio.timeout(30):
                while len(got) < 60:
                    for consumer in (first, second):
                        got.extend(int(m.value or b"") for m in await consumer.getmany(timeout_ms=100))
            assert sorted(got) == list(range(60))


async def test_admin_lists_and_describes_a_live_group_and_topic_configs(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("adm"), unique("group")
    async with kafkawire.connect(kafka_broker.url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=2, configs={"retention.ms": "3600000"})
            configs = await admin.describe_configs({("topic", topic): ["retention.ms"]})
            assert configs[("topic", topic)]["retention.ms"].value == "3600000"
        async with client.consumer(topic, group=group, **GROUP_OPTIONS) as consumer:
            await settle(lambda: [consumer.assignment()], 2)
            async with client.admin() as admin:
                listed = {g.group_id: g for g in await admin.list_groups()}
                assert listed[group].protocol_type == "consumer"
                (described,) = await admin.describe_groups([group])
                assert described.state == "Stable" and described.protocol == "range"
                assert [m.member_id for m in described.members] == [consumer.group_metadata().member_id]


async def test_eager_sticky_gives_members_back_what_they_held(kafka_broker: KafkaBroker) -> None:
    topic, group = unique("sticky"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 6, 6)
    options = dict(GROUP_OPTIONS, partition_assignment_strategy="sticky")
    async with (
        kafkawire.connect(kafka_broker.url) as client,
        client.consumer(topic, group=group, **options) as first,
        client.consumer(topic, group=group, **options) as second,
    ):
        await settle(lambda: [first.assignment(), second.assignment()], 6)
        before = (first.assignment(), second.assignment())
        assert len(before[0]) == 3 and len(before[1]) == 3
        async with client.consumer(topic, group=group, **options) as third:
            await settle(lambda: [first.assignment(), second.assignment(), third.assignment()], 6)
            # Everything was revoked (eager), yet each earlier member got two of its own three back.
            assert len(first.assignment()) == 2 and first.assignment() <= before[0]
            assert len(second.assignment()) == 2 and second.assignment() <= before[1]


class Callbacks:
    """What the rebalance callbacks of one member saw, in order."""

    def __init__(self) -> None:
        self.lost: list[set[TopicPartition]] = []
        self.revoked: list[set[TopicPartition]] = []

    async def on_lost(self, partitions: set[TopicPartition]) -> None:
        self.lost.append(partitions)

    async def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self.revoked.append(partitions)


async def keep_polling(consumer: kafkawire.Consumer, seen: list[int], until: asyncio.Event | None = None) -> None:
    """Poll and acknowledge until the consumer closes or ``until`` is set."""
    while not consumer.closed and not (until is not None and until.is_set()):
        try:
            messages = await consumer.getmany(timeout_ms=100)
        except kafkawire.ClosedError:
            return
        for message in messages:
            seen.append(int(message.value or b""))
            await consumer.ack(message)


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_a_member_that_stops_polling_leaves_and_comes_back_on_its_next_poll(
    kafka_broker: KafkaBroker, protocol: str
) -> None:
    topic, group = unique("poll"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 4, 40)
    options: dict[str, Any] = dict(GROUP_OPTIONS, group_protocol=protocol)
    if protocol == "consumer":
        for name in ("session_timeout_ms", "heartbeat_interval_ms"):
            options.pop(name)  # the broker sets these for KIP-848 groups
    idle = Callbacks()
    seen: list[int] = []
    async with (
        kafkawire.connect(kafka_broker.url) as client, client.consumer(
            topic, group=group, on_lost=idle.on_lost, on_revoked=idle.on_revoked,
            **dict(options, max_poll_interval_ms=2_000),
        ) as sleeper,
        client.consumer(topic, group=group, **options) as worker,
    ):
        hang = asyncio.Event()
        busy = asyncio.create_task(keep_polling(worker, seen))
        idle_until_hang = asyncio.create_task(keep_polling(sleeper, seen, until=hang))
        try:
            await settle(lambda: [sleeper.assignment(), worker.assignment()], 4)
            hang.set()  # from here the application stops polling
            await idle_until_hang
            held = sleeper.assignment()
            revocations = len(idle.revoked)  # eager rebalances while both joined revoke; that is fine
            # No poll for longer than max_poll_interval_ms: the member gives its partitions up as lost.
            await settle(lambda: [worker.assignment()], 4, timeout=60)
            assert sleeper.assignment() == set()
            assert idle.lost and held <= set().union(*idle.lost)
            assert len(idle.revoked) == revocations, "partitions taken for want of polls are lost, not revoked"
            # The next poll brings the member back into the group.
            async with asyncio.timeout(60):
                while not sleeper.assignment():
                    for message in await sleeper.getmany(timeout_ms=200):
                        seen.append(int(message.value or b""))
                        await sleeper.ack(message)
            await settle(lambda: [sleeper.assignment(), worker.assignment()], 4)
        finally:
            for task in (busy, idle_until_hang):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    assert set(range(40)) <= set(seen)


async def test_a_member_the_coordinator_removed_reports_its_partitions_lost_and_rejoins(
    kafka_broker: KafkaBroker,
) -> None:
    from kafkawire.protocol.messages import LeaveGroupRequest, MemberIdentity

    topic, group = unique("fenced"), unique("group")
    await create_and_fill(kafka_broker.url, topic, 2, 10)
    callbacks = Callbacks()
    async with kafkawire.connect(kafka_broker.url) as client, client.consumer(
        topic, group=group, on_lost=callbacks.on_lost, on_revoked=callbacks.on_revoked, **GROUP_OPTIONS
    ) as member:
        await member.start()
        await settle(lambda: [member.assignment()], 2)
        held = member.assignment()
        rebalances = member.rebalances
        # Another connection removes the member, as an administrator would: the coordinator forgets it
        # and its next heartbeat learns it is no longer part of the group.
        node = await client._session.coordinator(group)
        connection = await client._session.dedicated_connection(node)
        try:
            reply = await connection.request(
                LeaveGroupRequest(
                    group_id=group,
                    members=[MemberIdentity(member_id=member.group_metadata().member_id, group_instance_id=None)],
                )
            )
        finally:
            connection.close()
        assert reply.error_code == 0 and all(m.error_code == 0 for m in reply.members)
        async with asyncio.timeout(60):
            while member.rebalances == rebalances:
                await asyncio.sleep(0.1)
        await settle(lambda: [member.assignment()], 2)
    assert callbacks.lost == [held]
    assert callbacks.revoked == [held]  # only on close, after the member had joined again
