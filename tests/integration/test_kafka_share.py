"""Share groups (KIP-932) against the real Kafka 4.3 broker: our share consumers together with the Java
``KafkaShareConsumer`` (tests/integration/java/ShareMember.java, compiled here against the broker's class
path) and confluent-kafka's ``ShareConsumer``; acknowledgement types, delivery counts, a member killed while
holding records, refused acknowledgements, the admin APIs, and a broker without share groups."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafkawire
from kafkawire import AcknowledgeType, TopicPartition
from mqwire.common.errors import UnsupportedVersionError
from mqwire.testing import classpath
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.java import find_java

pytestmark = pytest.mark.integration

JAVA_SOURCE = Path(__file__).with_name("java") / "ShareMember.java"
# The broker's floor for a group's lock (group.share.min.record.lock.duration.ms): the shortest wait possible.
LOCK_MS = 15_000


def unique(label: str) -> str:
    return f"kw-share-{label}-{uuid.uuid4().hex[:8]}"


def bootstrap(url: str) -> str:
    return url.split("://", 1)[1]


@dataclass
class JavaMember:
    java: str
    class_path: str

    def argv(self, *args: str) -> list[str]:
        return [self.java, "-Xmx256m", "-cp", self.class_path, "ShareMember", *args]

    def configure(self, url: str, group: str, **configs: str) -> None:
        pairs = [f"{name.replace('_', '.')}={value}" for name, value in configs.items()]
        done = subprocess.run(
            self.argv("config", bootstrap(url), group, *pairs), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and "configured" in done.stdout, done.stderr[-2000:]


@pytest.fixture(scope="module")
def java_member(tmp_path_factory: pytest.TempPathFactory) -> JavaMember:
    """ShareMember.java compiled against the Kafka broker's class path (kafka-clients of the same version)."""
    java = find_java("kafka").executable
    jars = classpath.classpath("kafka")
    folder = tmp_path_factory.mktemp("share-java")
    javac = str(Path(java).with_name("javac"))
    subprocess.run([javac, "-cp", jars, "-d", str(folder), str(JAVA_SOURCE)], check=True, timeout=300)
    return JavaMember(java, f"{folder}{os.pathsep}{jars}")


async def create_topic(url: str, topic: str, partitions: int) -> None:
    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=partitions)


async def produce(url: str, topic: str, values: list[str], partitions: int = 2) -> None:
    async with kafkawire.connect(url) as client, client.producer(topic, linger_ms=0) as producer:
        for i, value in enumerate(values):
            await producer.send(value.encode(), partition=i % partitions)


def share_group_config(java_member: JavaMember, url: str, group: str) -> None:
    java_member.configure(
        url, group, share_auto_offset_reset="earliest", share_record_lock_duration_ms=str(LOCK_MS)
    )


@dataclass
class Deliveries:
    """Every delivery seen, by any member: (member, value, delivery count, what the member did with it)."""

    seen: list[tuple[str, str, int, str]] = field(default_factory=list)
    first_seen: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, member: str, value: str, count: int, outcome: str) -> None:
        with self.lock:
            self.seen.append((member, value, count, outcome))
            self.first_seen.setdefault(value, time.monotonic())

    def accepted(self) -> set[str]:
        with self.lock:
            return {value for _, value, _, outcome in self.seen if outcome == "accept"}

    def of(self, value: str) -> list[tuple[str, str, int, str]]:
        with self.lock:
            return [entry for entry in self.seen if entry[1] == value]

    def spread_enough(self) -> bool:
        """Our releasing and rejecting members did both twice, and our third member, the Java one and the
        confluent-kafka one had records."""
        with self.lock:
            outcomes = [(member, outcome) for member, _, _, outcome in self.seen]
        return (
            outcomes.count(("ours-1", "release")) == 2
            and outcomes.count(("ours-2", "reject")) == 2
            and {"ours-3", "java", "confluent"} <= {member for member, _ in outcomes}
        )


@contextlib.contextmanager
def java_consumer(
    java_member: JavaMember, url: str, group: str, topic: str, stop: Path, seen: Deliveries
) -> Iterator[None]:
    process = subprocess.Popen(
        java_member.argv("consume", bootstrap(url), group, topic, str(stop)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("ready"):
                ready.set()
            elif line.startswith("record "):
                _, _partition, _offset, count, value = line.split(" ", 4)
                seen.add("java", value.strip(), int(count), "accept")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), "the Java share consumer did not start"
        yield
    finally:
        stop.touch()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(10)


@contextlib.contextmanager
def confluent_consumer(url: str, group: str, topic: str, seen: Deliveries) -> Iterator[list[str]]:
    """confluent-kafka's preview ShareConsumer in a thread; yields the list of errors it met."""
    import confluent_kafka

    problems: list[str] = []
    stop = threading.Event()

    def run() -> None:
        try:
            consumer = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap(url), "group.id": group})
            consumer.subscribe([topic])
            while not stop.is_set():
                for message in consumer.poll(0.2) or []:
                    if message.error():
                        problems.append(str(message.error()))
                        continue
                    count = message.delivery_count() if hasattr(message, "delivery_count") else 0
                    seen.add("confluent", (message.value() or b"").decode(), int(count or 0), "accept")
                time.sleep(0.1)
            consumer.close()
        except Exception as exc:
            problems.append(repr(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield problems
    finally:
        stop.set()
        thread.join(30)


_DYING_MEMBER = """
import asyncio, sys
import kafkawire

async def main() -> None:
    url, topic, group = sys.argv[1:4]
    async with kafkawire.connect(url) as client:
        consumer = client.share_consumer(topic, group=group, share_acknowledgement_mode="explicit")
        await consumer.start()
        while True:
            for message in await consumer.getmany(timeout=1):
                print("record", message.value.decode(), message.delivery_count, flush=True)

asyncio.run(main())
"""


def _end(process: subprocess.Popen[str], held: list[str], output: list[str]) -> None:
    """Kill the stopped member; add the records it printed to ``held`` and all it printed to ``output``."""
    process.send_signal(signal.SIGKILL)
    rest, _ = process.communicate(timeout=30)
    output += rest.splitlines()
    held += [line.split()[1] for line in rest.splitlines() if line.startswith("record ")]


async def our_member(
    client: kafkawire.Client,
    name: str,
    topic: str,
    group: str,
    seen: Deliveries,
    done: asyncio.Event,
    release: int = 0,
    reject: int = 0,
) -> None:
    """An explicit-mode member: RELEASEs the first ``release`` first deliveries it gets, REJECTs the next
    ``reject`` ones, and accepts everything else."""
    async with client.share_consumer(
        topic, group=group, share_acknowledgement_mode="explicit", max_poll_records=5
    ) as consumer:
        while not done.is_set():
            for message in await consumer.getmany(timeout=0.5):
                value = message.value.decode()
                if release and message.delivery_count == 1:
                    release -= 1
                    await consumer.ack(message, type=AcknowledgeType.RELEASE)
                    seen.add(name, value, message.delivery_count, "release")
                elif reject and message.delivery_count == 1:
                    reject -= 1
                    await consumer.ack(message, type=AcknowledgeType.REJECT)
                    seen.add(name, value, message.delivery_count, "reject")
                else:
                    await consumer.ack(message)
                    seen.add(name, value, message.delivery_count, "accept")
            assert await consumer.commit() == {}
            await asyncio.sleep(0.05)  # leave records for the other members


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_our_java_and_confluent_members_share_a_group(
    kafka_broker: KafkaBroker, java_member: JavaMember, tmp_path: Path
) -> None:
    url = kafka_broker.url
    topic, group = unique("topic"), unique("group")
    await create_topic(url, topic, 2)
    await asyncio.to_thread(share_group_config, java_member, url, group)
    seen = Deliveries()

    # A member that hangs holding records: a process of its own, stopped (SIGSTOP) once it has some. Its
    # connections stay open, so only the records' acquisition locks can give them back. (A killed member's
    # records come back sooner: the broker releases them when the connection drops.)
    early = [f"early-{i}" for i in range(20)]
    await produce(url, topic, early)
    dying = subprocess.Popen(
        [sys.executable, "-c", _DYING_MEMBER, url, topic, group], stdout=subprocess.PIPE, text=True
    )
    assert dying.stdout is not None
    held: list[str] = []
    output: list[str] = []  # all the dying member printed, for the messages below
    first = await asyncio.wait_for(asyncio.to_thread(dying.stdout.readline), 60)
    assert first.startswith("record "), f"the dying member received nothing: {first!r}"
    acquired_at = time.monotonic()
    output.append(first)
    held.append(first.split()[1])
    dying.send_signal(signal.SIGSTOP)

    done = asyncio.Event()
    late = [f"late-{i}" for i in range(120)]
    import confluent_kafka

    # The confluent-kafka member is part of what this test shows: a build without ShareConsumer is a failure.
    assert hasattr(confluent_kafka, "ShareConsumer"), f"confluent-kafka {confluent_kafka.version()[0]} has none"
    with contextlib.ExitStack() as stack:
        stack.callback(_end, dying, held, output)
        stack.enter_context(java_consumer(java_member, url, group, topic, tmp_path / "stop", seen))
        problems = stack.enter_context(confluent_consumer(url, group, topic, seen))
        async with kafkawire.connect(url) as client:
            members = [
                asyncio.create_task(our_member(client, "ours-1", topic, group, seen, done, release=2)),
                asyncio.create_task(our_member(client, "ours-2", topic, group, seen, done, reject=2)),
                asyncio.create_task(our_member(client, "ours-3", topic, group, seen, done)),
            ]
            for i in range(0, len(late), 10):
                await produce(url, topic, late[i : i + 10])
                await asyncio.sleep(0.2)
            # A member that joined late (a JVM starting on a busy machine) may have found nothing left, and the
            # releasing and rejecting members need two first deliveries each: more records follow, a few at a
            # time, until every member has had its share (or a minute has passed).
            spread_deadline = time.monotonic() + 60
            while time.monotonic() < spread_deadline and not seen.spread_enough():
                more = [f"late-{len(late) + i}" for i in range(10)]
                late.extend(more)
                await produce(url, topic, more)
                await asyncio.sleep(0.5)
            expected = set(early) | set(late)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                rejected = {v for _, v, _, outcome in list(seen.seen) if outcome == "reject"}
                if expected - rejected <= seen.accepted():
                    break
                for task in members:
                    if task.done():
                        task.result()
                await asyncio.sleep(0.5)
            done.set()
            await asyncio.gather(*members)

    rejected = {v for _, v, _, outcome in seen.seen if outcome == "reject"}
    released = {v for _, v, _, outcome in seen.seen if outcome == "release"}
    missing = expected - rejected - seen.accepted()
    assert not missing, f"never delivered and accepted: {sorted(missing)[:10]} ({len(missing)})"
    assert len(released) == 2 and len(rejected) == 2
    for value in released:
        again = [entry for entry in seen.of(value) if entry[3] != "release"]
        assert again and all(count >= 2 for _, _, count, _ in again), seen.of(value)
    for value in rejected:
        assert len(seen.of(value)) == 1, f"a REJECTed record came again: {seen.of(value)}"
    # The dead member's records came back, counted as a second delivery, once its locks had expired.
    assert held
    for value in held:
        later = seen.of(value)
        assert later and all(count >= 2 for _, _, count, _ in later), f"{value!r} after: {later}; printed: {output}"
    back = min(seen.first_seen[value] for value in held)
    assert back - acquired_at >= LOCK_MS / 1000 * 0.9, f"came back after {back - acquired_at:.1f} s"
    # Spread: each member got some of the records.
    names = {"ours-1", "ours-2", "ours-3", "java", "confluent"}
    counts = {name: sum(1 for m, *_ in seen.seen if m == name) for name in names}
    print("deliveries per member:", json.dumps(counts), "confluent problems:", problems)
    assert all(counts[name] > 0 for name in names), counts
    assert not problems, problems


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_refused_acknowledgements_lose_nothing(
    kafka_broker: KafkaBroker, java_member: JavaMember
) -> None:
    url = kafka_broker.url
    topic, group = unique("topic"), unique("group")
    await create_topic(url, topic, 1)
    await asyncio.to_thread(share_group_config, java_member, url, group)
    await produce(url, topic, [f"v{i}" for i in range(6)], partitions=1)
    async with kafkawire.connect(url) as client:
        first = client.share_consumer(topic, group=group, share_acknowledgement_mode="explicit")
        other = client.share_consumer(topic, group=group, share_acknowledgement_mode="explicit")
        async with first, other:
            got: list[kafkawire.ShareMessage] = []
            while len(got) < 6:
                got += await first.getmany(timeout=2)
            await first.ack(got[0])
            with pytest.raises(kafkawire.AlreadyAcknowledgedError):
                await first.ack(got[0])
            with pytest.raises(kafkawire.NotAcquiredError):
                await other.ack(got[1])  # another member's record
            assert await first.commit() == {}
            # The rest stay unacknowledged past their lock: refused afterwards (as expired, or as delivered
            # again since when this member has fetched them anew meanwhile), and delivered again.
            await asyncio.sleep(LOCK_MS / 1000 + 1)
            for message in got[1:]:
                with pytest.raises((kafkawire.AcquisitionLockExpiredError, kafkawire.NotAcquiredError)):
                    await first.ack(message)
            again: dict[str, int] = {}
            deadline = time.monotonic() + 30
            while len(again) < 5 and time.monotonic() < deadline:
                for consumer in (first, other):
                    for message in await consumer.getmany(timeout=0.5):
                        again[message.value.decode()] = message.delivery_count
                        await consumer.ack(message)
            assert again == {f"v{i}": 2 for i in range(1, 6)}
            assert await first.commit() == {} and await other.commit() == {}


def mqwire_groups(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mqwire", "groups", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_implicit_mode_accepts_what_was_delivered_and_admin_sees_the_group(
    kafka_broker: KafkaBroker, java_member: JavaMember
) -> None:
    url = kafka_broker.url
    topic, group = unique("topic"), unique("group")
    await create_topic(url, topic, 2)
    async with kafkawire.connect(url) as client, client.admin() as admin:
        # A new share group starts at the latest offset; set the start to the beginning first.
        for attempt in range(20):  # the coordinator learns of a topic just created a moment later
            try:
                await admin.alter_share_group_offsets(group, {(topic, 0): 0, (topic, 1): 0})
                break
            except kafkawire.UnknownTopicOrPartitionError:
                if attempt == 19:
                    raise
                await asyncio.sleep(0.5)
        assert await admin.list_share_group_offsets(group) == {
            TopicPartition(topic, 0): 0,
            TopicPartition(topic, 1): 0,
        }
        await produce(url, topic, [f"v{i}" for i in range(10)])
        received = []
        async with client.share_consumer(topic, group=group, value_deserializer=bytes.decode) as consumer:
            async for message in consumer:
                received.append(message.value)
                if len(received) == 10:
                    break
            assert await consumer.commit() == {}  # the last one is accepted by the commit
            described = await admin.describe_share_groups([group])
            assert described[0].state == "Stable"
            assert described[0].coordinator in client.metadata.brokers  # the one broker
            assert [m.member_id for m in described[0].members] == [consumer.member_id]
            assert described[0].members[0].assignment == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
            listed = {g.group_id: g for g in await admin.list_groups()}
            assert listed[group].group_type == "share"
            # `mqwire groups` shows it too.
            shown = await asyncio.to_thread(mqwire_groups, "list", url)
            assert f"{group}\tStable\tshare" in shown
            [row] = [
                json.loads(line)
                for line in (await asyncio.to_thread(mqwire_groups, "describe", url, group)).splitlines()
            ]
            assert row["type"] == "share" and [m["member"] for m in row["members"]] == [consumer.member_id]
            assert row["coordinator"] == described[0].coordinator
            assert sorted(row["members"][0]["partitions"]) == [f"{topic}-0", f"{topic}-1"]
        assert sorted(received) == sorted(f"v{i}" for i in range(10))
        # Everything was accepted: a new member of the group gets nothing.
        async with client.share_consumer(topic, group=group) as consumer:
            assert await consumer.getmany(timeout=3) == []
        offsets = await admin.list_share_group_offsets(group, {topic: [0, 1]})
        # The start offset moves on as the broker persists the share partitions' state, not at once.
        assert set(offsets) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert all(offset is not None and 0 <= offset <= 5 for offset in offsets.values()), offsets
        await admin.delete_share_group_offsets(group, [topic])
        assert await admin.list_share_group_offsets(group) == {}
        await admin.delete_groups([group])
        with pytest.raises(kafkawire.GroupIdNotFoundError):
            await admin.describe_share_groups([group])


async def test_a_broker_without_share_groups_is_refused_at_subscribe(kafka3_broker: KafkaBroker) -> None:
    async with kafkawire.connect(kafka3_broker.url) as client:
        consumer = client.share_consumer(unique("topic"), group=unique("group"))
        with pytest.raises(UnsupportedVersionError, match="ShareGroupHeartbeat"):
            await consumer.start()
        await consumer.close()


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_renewing_a_lock_keeps_the_record(kafka_broker: KafkaBroker, java_member: JavaMember) -> None:
    url = kafka_broker.url
    topic, group = unique("topic"), unique("group")
    await create_topic(url, topic, 1)
    await asyncio.to_thread(
        java_member.configure,
        url,
        group,
        share_auto_offset_reset="earliest",
        share_record_lock_duration_ms=str(LOCK_MS),
        share_renew_acknowledge_enable="true",
    )
    await produce(url, topic, ["slow"], partitions=1)
    async with kafkawire.connect(url) as client:
        async with client.share_consumer(topic, group=group, share_acknowledgement_mode="explicit") as consumer:
            message = await consumer.receive(timeout=30)
            half = LOCK_MS / 1000 * 0.6
            await asyncio.sleep(half)
            await consumer.renew(message)
            await asyncio.sleep(half)  # past the first lock's end
            await consumer.ack(message)  # still held: the renewal moved the deadline
            assert await consumer.commit() == {}
            assert await consumer.getmany(timeout=1) == []
        async with client.share_consumer(topic, group=group) as other:
            assert await other.getmany(timeout=2) == []
