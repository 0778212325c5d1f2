"""The TubeMQ client against a real master and broker: exact round trips, attributes, message-type
filtering, committed positions, start positions, timeouts and pausing of a consumer holding its partition, a
group of two consumers splitting the partitions and taking over from each other, and consumers that pick their
partitions (client-side balance)."""

from __future__ import annotations

import asyncio
import base64
import secrets
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from pathlib import Path

import pytest
import pytest_asyncio

import tubemqwire
from mqwire.testing import classpath
from mqwire.testing.endpoints import TubeMQBroker
from mqwire.testing.java import find_java
from mqwire.testing.tubemq_spares import FreshTopics

pytestmark = pytest.mark.integration

# Short heartbeats: the master balances a group within a couple of them.
OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 10_000}
PARTITIONS = {
    "roundtrip": 3, "filtered": 2, "shared": 4, "positions": 1, "keyed": 3, "to_java": 2, "from_java": 2,
    "multi_a": 1, "multi_b": 1, "takeover": 2, "bound": 3, "bound_group": 2, "pause": 1, "confirm": 1,
}


@pytest.fixture(scope="module")
def topics_by_loop(tubemq_fresh_topics: FreshTopics) -> dict[str, dict[str, str]]:
    """Fresh topics for this module, a set for each event loop the tests may run on (a test run on both
    loops must not find the other run's messages)."""
    return {loop: tubemq_fresh_topics.take(PARTITIONS) for loop in ("asyncio", "uvloop")}


@pytest_asyncio.fixture(loop_scope="function")
async def topics(topics_by_loop: dict[str, dict[str, str]]) -> dict[str, str]:
    """This test's topics: the set of the event loop it runs on."""
    kind = "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"
    return topics_by_loop[kind]


@pytest_asyncio.fixture(loop_scope="function")
async def client(tubemq_broker: TubeMQBroker) -> AsyncIterator[tubemqwire.Client]:
    async with tubemqwire.connect(tubemq_broker.url, **OPTIONS) as connected:
        yield connected


def group_name(label: str) -> str:
    return f"g_{label}_{secrets.token_hex(4)}"


async def consume(
    consumer: tubemqwire.Consumer, count: int, *, timeout: float = 60.0, ack: bool = True
) -> list[tubemqwire.Message]:
    """``count`` messages (acknowledged), failing if they do not all come within ``timeout`` seconds."""
    got: list[tubemqwire.Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"only {len(got)} of {count} messages arrived within {timeout:.0f} s")
        try:
            message = await consumer.getone(timeout=left)
        except TimeoutError:
            continue
        got.append(message)
        if ack:
            await consumer.ack(message)
    return got


async def nothing_more(consumer: tubemqwire.Consumer, wait: float) -> None:
    with pytest.raises(TimeoutError):
        extra = await consumer.getone(timeout=wait)
        pytest.fail(f"unexpected message {extra!r}")


async def settle(consumers: Iterable[tubemqwire.Consumer], partitions: int, timeout: float = 60.0) -> None:
    """Wait until the consumers hold every partition, each partition once, none of them empty-handed."""
    group = list(consumers)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = [c.assignment for c in group]
        every = set().union(*held)
        if len(every) == partitions and sum(len(h) for h in held) == partitions and all(held):
            return
        await asyncio.sleep(0.2)
    pytest.fail(f"partitions not split within {timeout:.0f} s: {[sorted(c.assignment) for c in group]}")


# -------------------------------------------------------------------------------------------- round trip
async def test_produce_and_consume_exact_contents(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["roundtrip"]
    count = 300
    moment = datetime(2024, 5, 6, 7, 8)
    sent: dict[bytes, dict[str, bytes]] = {}
    async with client.producer(topic) as producer:
        futures = []
        for i in range(count):
            value = f"value-{i}-".encode() + bytes(range(256))[: i % 256]
            headers = {"seq": str(i).encode(), "source": b"mqwire"}
            sent[value] = headers
            futures.append(await producer.enqueue(value, headers=headers, msg_type="order", msg_time=moment))
        await producer.flush()
        receipts = [future.result() for future in futures]
    assert {r.partition for r in receipts} == set(range(PARTITIONS["roundtrip"]))
    assert len({r.message_id for r in receipts}) == count

    group = group_name("roundtrip")
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        # A fetched batch holds many messages: getmany hands out no more than max_records and keeps the rest.
        head = await consumer.getmany(timeout=60, max_records=1)
        assert len(head) == 1
        await consumer.ack(head[0])
        got = head + await consume(consumer, count - 1)
        await nothing_more(consumer, 3.0)
    assert sorted(m.value for m in got) == sorted(sent)
    for message in got:
        assert message.topic == topic
        assert message.headers == sent[message.value]
        assert (message.msg_type, message.msg_time) == ("order", "202405060708")
        assert message.timestamp == int(moment.timestamp() * 1000)
    by_id = {r.message_id: r.partition for r in receipts}
    assert all(by_id[m.message_id] == m.partition for m in got)

    # The group's position was confirmed: a new member finds nothing old, then only what comes next.
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        await nothing_more(consumer, 8.0)
        async with client.producer(topic) as producer:
            await producer.send(b"after")
        assert [m.value for m in await consume(consumer, 1)] == [b"after"]


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_unacknowledged_messages_come_back(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["positions"]
    group = group_name("redeliver")
    async with client.producer(topic) as producer:
        for i in range(5):
            await producer.send(b"r%d" % i)
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        first = await consume(consumer, 1, ack=False)
    async with client.consumer(topic, group=group, start="earliest") as consumer:
        again = await consume(consumer, 5)
    assert first[0].value in {m.value for m in again}
    assert sorted(m.value for m in again) == [b"r%d" % i for i in range(5)]


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_a_batch_not_acknowledged_within_confirm_timeout_ms_comes_back(
    client: tubemqwire.Client, topics: dict[str, str]
) -> None:
    """``confirm_timeout_ms`` against the broker: with a short timeout a batch left unacknowledged comes back to
    the same consumer, not before the timeout, acknowledged parts included, and once acknowledged it stays
    away; with the default (60 s) it does not come back within twice the short timeout, so the timeout is what brings
    it back."""
    topic = topics["confirm"]
    values = [b"c%d" % i for i in range(5)]
    async with client.producer(topic) as producer:
        for value in values:
            await producer.send(value)

    timeout = 1.5
    async with client.consumer(
        topic, group=group_name("confirm"), start="earliest", confirm_timeout_ms=int(timeout * 1000)
    ) as consumer:
        held = await consumer.getone(timeout=60)  # never acknowledged in its first delivery
        held_at = time.monotonic()
        delivered = [held.value]
        async with asyncio.timeout(60):
            while True:
                message = await consumer.getone()
                delivered.append(message.value)
                if message.value == held.value:
                    back_after = time.monotonic() - held_at
                    await consumer.ack(message)
                    break
                await consumer.ack(message)
        # The rest of the batch comes again with it; acknowledged whole, it is confirmed and comes no more.
        while True:
            try:
                message = await consumer.getone(timeout=2.0)
            except TimeoutError:
                break
            delivered.append(message.value)
            await consumer.ack(message)
    assert back_after >= timeout * 0.9, f"the batch came back after {back_after:.2f} s, before the timeout"
    assert set(delivered) == set(values)
    assert delivered.count(held.value) == 2, delivered
    assert all(1 <= delivered.count(value) <= 2 for value in values), delivered

    async with client.consumer(topic, group=group_name("confirm_default"), start="earliest") as consumer:
        held = await consumer.getone(timeout=60)
        seen_again: list[bytes] = []
        deadline = time.monotonic() + 2 * timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await consumer.getone(timeout=left)
            except TimeoutError:
                break
            await consumer.ack(message)
            seen_again.append(message.value)
        assert held.value not in seen_again, "redelivered before the default confirm timeout"


async def test_start_latest_skips_what_came_before(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["positions"]
    async with client.producer(topic) as producer:
        await producer.send(b"before")
        async with client.consumer(topic, group=group_name("latest"), start="latest") as consumer:
            await settle([consumer], PARTITIONS["positions"])
            await producer.send(b"later")
            assert [m.value for m in await consume(consumer, 1)] == [b"later"]


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_timeouts_then_pause_and_resume(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["pause"]
    async with client.consumer(topic, group=group_name("pause")) as consumer:
        await settle([consumer], PARTITIONS["pause"])
        # Holding its partition and fetching from it, a consumer of an empty topic ends both calls on time.
        with pytest.raises(tubemqwire.ReceiveTimeoutError):
            await consumer.receive(timeout=1)
        assert await consumer.getmany(timeout=1) == []
        (key,) = consumer.assignment
        consumer.pause(key)
        await asyncio.sleep(1)  # a fetch already on the wire comes back empty
        async with client.producer(topic) as producer:
            await producer.send(b"held back")
        with pytest.raises(tubemqwire.ReceiveTimeoutError):
            await consumer.receive(timeout=3)
        assert consumer.assignment == {key}  # still ours while paused
        consumer.resume(key)
        assert (await consumer.receive(timeout=60)).value == b"held back"


# -------------------------------------------------------------------------------------------- filtering
# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_msg_type_filter(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["filtered"]
    kinds = ("paid", "refunded", "shipped")
    async with client.producer(topic) as producer:
        for i in range(90):
            await producer.enqueue(b"f%d" % i, msg_type=kinds[i % 3], headers={"i": str(i)})
        await producer.flush()
    async with client.consumer(topic, group=group_name("filter"), start="earliest",
                               msg_types=["paid", "shipped"]) as consumer:
        # Filtered reads come from the broker's files: allow for its flush interval.
        got = await consume(consumer, 60, timeout=90)
        await nothing_more(consumer, 3.0)
    assert {m.msg_type for m in got} == {"paid", "shipped"}
    assert sorted(int(m.headers["i"]) for m in got) == [i for i in range(90) if i % 3 != 1]


# ---------------------------------------------------------------------------------------------- groups
async def test_two_consumers_split_the_partitions(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    topic = topics["shared"]
    group = group_name("shared")
    async with client.consumer(topic, group=group, start="earliest") as first, client.consumer(
        topic, group=group, start="earliest"
    ) as second:
        await settle([first, second], PARTITIONS["shared"])
        assert not first.assignment & second.assignment
        async with client.producer(topic) as producer:
            for i in range(200):
                await producer.enqueue(b"s%d" % i)
            await producer.flush()
        received: dict[str, list[tubemqwire.Message]] = {"first": [], "second": []}

        async def drain(name: str, consumer: tubemqwire.Consumer) -> None:
            while True:
                message = await consumer.getone()
                received[name].append(message)
                await consumer.ack(message)

        tasks = [asyncio.create_task(drain("first", first)), asyncio.create_task(drain("second", second))]
        deadline = time.monotonic() + 60
        while sum(len(v) for v in received.values()) < 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        held = {"first": first.assignment, "second": second.assignment}
    values = [m.value for batch in received.values() for m in batch]
    assert sorted(values) == sorted(b"s%d" % i for i in range(200))
    for name, messages in received.items():
        assert messages, f"{name} received nothing"
        assert {m.partition_key for m in messages} <= held[name]


async def test_keyed_messages_share_a_partition(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    async with client.producer(topics["keyed"]) as producer:
        receipts = [await producer.send(b"k%d" % i, key=f"customer-{i % 2}".encode()) for i in range(20)]
    by_key: dict[int, set[str]] = {}
    for i, receipt in enumerate(receipts):
        by_key.setdefault(i % 2, set()).add(receipt.partition_key)
    assert all(len(keys) == 1 for keys in by_key.values())


async def test_one_producer_and_one_consumer_for_two_topics(
    client: tubemqwire.Client, topics: dict[str, str]
) -> None:
    names = [topics["multi_a"], topics["multi_b"]]
    async with client.producer(names) as producer:
        for i in range(10):
            await producer.send(b"%d" % i, topic=names[i % 2])
    async with client.consumer(names, group=group_name("multi"), start="earliest") as consumer:
        got = await consume(consumer, 10)
    assert sorted((m.topic, m.value) for m in got) == sorted((names[i % 2], b"%d" % i) for i in range(10))


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_when_a_member_leaves_the_other_takes_over(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    """The member that leaves has processed part of a batch it never confirmed: that batch goes back to
    the group, and the member that stays gets every message (those processed twice are only those)."""
    topic = topics["takeover"]
    group = group_name("takeover")
    expected = {b"t%d" % i for i in range(100)}
    async with client.producer(topic) as producer:
        for value in sorted(expected):
            await producer.enqueue(value)
        await producer.flush()
    processed: list[bytes] = []
    async with client.consumer(topic, group=group, start="earliest") as staying:
        async with client.consumer(topic, group=group, start="earliest") as leaving:
            await settle([staying, leaving], PARTITIONS["takeover"])
            for _ in range(5):
                message = await leaving.getone(timeout=60)
                processed.append(message.value)
                await leaving.ack(message)
            by_leaving = set(processed)
        deadline = time.monotonic() + 60
        while len(staying.assignment) < PARTITIONS["takeover"] and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert len(staying.assignment) == PARTITIONS["takeover"], "the remaining member did not take over"
        while not expected <= set(processed):
            try:
                message = await staying.getone(timeout=30)
            except TimeoutError:
                pytest.fail(f"{len(expected - set(processed))} messages never reached the remaining member")
            processed.append(message.value)
            await staying.ack(message)
    duplicates = {value for value in processed if processed.count(value) > 1}
    assert duplicates <= by_leaving


# ------------------------------------------------------------------------------- client-side balance
# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_client_balance_reads_a_chosen_partition_from_an_offset(
    client: tubemqwire.Client, topics: dict[str, str]
) -> None:
    topic = topics["bound"]
    async with client.producer(topic) as producer:
        receipts = [await producer.send(b"b%d" % i) for i in range(30)]
    chosen = receipts[0].partition_key
    in_chosen = [(r.append_offset, b"b%d" % i) for i, r in enumerate(receipts) if r.partition_key == chosen]
    assert len(in_chosen) >= 3, "the producer did not spread the messages"
    async with client.client_balance_consumer(topic, group=group_name("bound"), start="earliest") as consumer:
        assert await consumer.partition_metadata() == {r.partition_key: True for r in receipts}
        offsets = await consumer.connect_partition(chosen, 0)
        assert offsets.end is not None and offsets.end > max(offset or 0 for offset, _ in in_chosen)
        got = await consume(consumer, len(in_chosen))
        await nothing_more(consumer, 2.0)
        assert consumer.assignment == {chosen}
    assert [m.value for m in got] == [value for _, value in in_chosen]
    assert {m.partition_key for m in got} == {chosen}
    # From the offset of the third message of the partition: the broker starts there.
    third_offset = in_chosen[2][0]
    async with client.client_balance_consumer(
        topic, group=group_name("bound_from"), partitions={chosen: third_offset}
    ) as consumer:
        got = await consume(consumer, len(in_chosen) - 2)
        await nothing_more(consumer, 2.0)
    assert [m.value for m in got] == [value for _, value in in_chosen[2:]]


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_client_balance_members_of_one_group(client: tubemqwire.Client, topics: dict[str, str]) -> None:
    """A partition held by one member is refused to another; released, the other goes on from the
    group's confirmed position: nothing read twice, nothing lost."""
    topic = topics["bound_group"]
    group = group_name("bound_group")
    async with client.producer(topic) as producer:
        first_round = [await producer.send(b"r1-%d" % i) for i in range(20)]
    chosen = first_round[0].partition_key
    async with client.client_balance_consumer(topic, group=group, start="earliest") as first, \
            client.client_balance_consumer(topic, group=group, start="earliest") as second:
        await first.connect_partition(chosen)
        early = await consume(first, sum(r.partition_key == chosen for r in first_round))
        await nothing_more(first, 2.0)
        with pytest.raises(tubemqwire.PartitionOccupiedError):
            await second.connect_partition(chosen)
        await first.disconnect_partition(chosen)
        assert first.assignment == frozenset()
        async with client.producer(topic) as producer:
            second_round = [await producer.send(b"r2-%d" % i) for i in range(20)]
        await second.connect_partition(chosen)
        late = await consume(second, sum(r.partition_key == chosen for r in second_round))
        await nothing_more(second, 2.0)
    assert [m.value for m in early] == [b"r1-%d" % i for i, r in enumerate(first_round) if r.partition_key == chosen]
    assert [m.value for m in late] == [b"r2-%d" % i for i, r in enumerate(second_round) if r.partition_key == chosen]


# ---------------------------------------------------------------------------------- the Java client
JAVA_SOURCE = """import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.TreeSet;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

// produce MASTER TOPIC COUNT: message i carries data "java-i", attribute seq=i, type "jtype", time 202401020304.
// consume MASTER TOPIC GROUP COUNT SECONDS: prints "MSG <base64 data> <type> <time> <attribute>" per message.
public class TubeInterop {
    public static void main(String[] args) throws Throwable {
        TubeClientConfig config = new TubeClientConfig(args[1]);
        config.setHeartbeatPeriodMs(1000);
        MessageSessionFactory factory = new TubeSingleSessionFactory(config);
        try {
            if (args[0].equals("produce")) {
                produce(factory, args[2], Integer.parseInt(args[3]));
            } else {
                consume(factory, args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            }
        } finally {
            factory.shutdown();
        }
    }

    static void produce(MessageSessionFactory factory, String topic, int count) throws Throwable {
        MessageProducer producer = factory.createProducer();
        producer.publish(topic);
        for (int i = 0; i < count; i++) {
            Message message = new Message(topic, ("java-" + i).getBytes(StandardCharsets.UTF_8));
            message.setAttrKeyVal("seq", String.valueOf(i));
            message.putSystemHeader("jtype", "202401020304");
            MessageSentResult result = producer.sendMessage(message);
            if (!result.isSuccess()) {
                throw new IllegalStateException("send failed: " + result.getErrCode() + " " + result.getErrMsg());
            }
        }
        producer.shutdown();
        System.out.println("SENT " + count);
    }

    static void consume(MessageSessionFactory factory, String master, String topic, String group,
            int count, int seconds) throws Throwable {
        ConsumerConfig config = new ConsumerConfig(master, group);
        config.setConsumePosition(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
        config.setHeartbeatPeriodMs(1000);
        config.setPullConsumeReadyWaitPeriodMs(500);
        config.setMsgNotFoundWaitPeriodMs(100);
        PullMessageConsumer consumer = factory.createPullConsumer(config);
        consumer.subscribe(topic, (TreeSet<String>) null);
        consumer.completeSubscribe();
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        int got = 0;
        while (got < count && System.currentTimeMillis() < deadline) {
            ConsumerResult result = consumer.getMessage();
            if (!result.isSuccess()) {
                Thread.sleep(50);
                continue;
            }
            for (Message message : result.getMessageList()) {
                got++;
                System.out.println("MSG " + Base64.getEncoder().encodeToString(message.getData())
                        + " " + dash(message.getMsgType()) + " " + dash(message.getMsgTime())
                        + " " + dash(message.getAttribute()));
            }
            consumer.confirmConsume(result.getConfirmContext(), true);
        }
        consumer.shutdown();
        System.out.println("DONE " + got);
    }

    static String dash(String text) {
        return text == null || text.isEmpty() ? "-" : text;
    }
}
"""


class JavaClient:
    """The reference Java client (tubemq-client from Maven Central), driven by a small program."""

    def __init__(self, java: str, class_path: str) -> None:
        self.java = java
        self.class_path = class_path

    async def run(self, *args: str, timeout: float = 120.0) -> list[str]:
        process = await asyncio.create_subprocess_exec(
            self.java, "-cp", self.class_path, "TubeInterop", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            pytest.fail(f"the Java client did not finish {args[0]} within {timeout:.0f} s")
        lines = out.decode(errors="replace").splitlines()
        if process.returncode != 0:
            pytest.fail(f"the Java client failed ({process.returncode}):\n" + "\n".join(lines[-40:]))
        return lines


@pytest.fixture(scope="module")
def java_client(tmp_path_factory: pytest.TempPathFactory) -> JavaClient:
    """The interop program compiled now against the Maven-resolved TubeMQ class path."""
    java = find_java("tubemq").executable
    javac = Path(java).with_name("javac")
    if not javac.is_file():
        javac = Path(shutil.which("javac") or "javac")
    folder = tmp_path_factory.mktemp("tubemq-java")
    (folder / "TubeInterop.java").write_text(JAVA_SOURCE, encoding="utf-8")
    jars = classpath.classpath("tubemq")
    compiled = subprocess.run(
        [str(javac), "-cp", jars, "-d", str(folder), str(folder / "TubeInterop.java")],
        capture_output=True, text=True, check=False,
    )
    if compiled.returncode != 0:
        pytest.fail(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
    return JavaClient(java, f"{folder}:{jars}")


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
async def test_java_consumer_reads_our_messages(
    client: tubemqwire.Client, topics: dict[str, str], tubemq_broker: TubeMQBroker, java_client: JavaClient
) -> None:
    topic = topics["to_java"]
    count = 40
    async with client.producer(topic) as producer:
        for i in range(count):
            await producer.send(b"py-%d" % i, headers={"seq": str(i)}, msg_type="pytype", msg_time="202402030405")
    master = f"{tubemq_broker.host}:{tubemq_broker.master_port}"
    lines = await java_client.run("consume", master, topic, group_name("java"), str(count), "90")
    got = [line.split(" ") for line in lines if line.startswith("MSG ")]
    assert sorted(base64.b64decode(fields[1]) for fields in got) == sorted(b"py-%d" % i for i in range(count))
    for _, data, msg_type, msg_time, attribute in got:
        seq = base64.b64decode(data).decode().split("-")[1]
        assert (msg_type, msg_time) == ("pytype", "202402030405")
        assert attribute == f"$msgType$=pytype,$msgTime$=202402030405,seq={seq}"


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
async def test_we_read_the_java_producers_messages(
    client: tubemqwire.Client, topics: dict[str, str], tubemq_broker: TubeMQBroker, java_client: JavaClient
) -> None:
    topic = topics["from_java"]
    count = 40
    master = f"{tubemq_broker.host}:{tubemq_broker.master_port}"
    assert f"SENT {count}" in await java_client.run("produce", master, topic, str(count))
    async with client.consumer(topic, group=group_name("fromjava"), start="earliest") as consumer:
        got = await consume(consumer, count)
        await nothing_more(consumer, 3.0)
    assert sorted(m.value for m in got) == sorted(b"java-%d" % i for i in range(count))
    for message in got:
        seq = message.value.decode().split("-")[1]
        assert message.headers == {"seq": seq.encode()}
        assert (message.msg_type, message.msg_time) == ("jtype", "202401020304")
