"""Transactions against a broker with the transaction coordinator enabled (as the standalone of brokers/ is)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing import classpath
from mqwire.testing.endpoints import PulsarBroker
from mqwire.testing.java import find_java

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


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
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


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
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


# ------------------------------------------------------------------------------ the Java client's transactions
JAVA_SOURCE = Path(__file__).parent / "java" / "PulsarTxnInterop.java"


class JavaClient:
    """The Java client of the broker's own class path, driven by tests/integration/java/PulsarTxnInterop.java."""

    def __init__(self, java: str, class_path: str) -> None:
        self.java, self.class_path = java, class_path

    async def run(self, *args: str, timeout: float = 120.0) -> list[str]:
        process = await asyncio.create_subprocess_exec(
            self.java, "-cp", self.class_path, "PulsarTxnInterop", *args,
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
    java = find_java("pulsar").executable
    javac = Path(java).with_name("javac")
    if not javac.is_file():
        javac = Path(shutil.which("javac") or "javac")
    folder = tmp_path_factory.mktemp("pulsar-txn-java")
    jars = classpath.classpath("pulsar")
    compiled = subprocess.run([str(javac), "-cp", jars, "-d", str(folder), str(JAVA_SOURCE)],
                              capture_output=True, text=True, check=False, timeout=300)
    if compiled.returncode != 0:
        pytest.fail(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
    return JavaClient(java, f"{folder}:{jars}")


# On asyncio's loop only: its time is the broker's timers, the same on any loop; the file's other tests run on both.
@pytest.mark.asyncio_loop_only
async def test_java_transactions_seen_by_us_and_ours_by_java(
    pulsar_broker: PulsarBroker, java_client: JavaClient
) -> None:
    from_java, to_java = unique("txn-from-java"), unique("txn-to-java")
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.consumer(from_java, group="ours", start="earliest") as ours,
    ):
        # Subscribed first, so that what the Java client commits is waiting for us.
        await java_client.run("produce", pulsar_broker.url, from_java, "aborted", "3", "abort")
        await java_client.run("produce", pulsar_broker.url, from_java, "committed", "3", "commit")
        assert sorted(await drain(ours)) == [b"committed-0", b"committed-1", b"committed-2"]
        async with client.producer(to_java) as producer:
            async with await client.transaction() as txn:
                for index in range(3):
                    await producer.send(b"ours-%d" % index, transaction=txn)
            failed = await client.transaction()
            await producer.send(b"ours-aborted", transaction=failed)
            await failed.abort()
    lines = await java_client.run("consume", pulsar_broker.url, to_java, "java", "3", "60")
    assert sorted(line for line in lines if line.startswith("MSG ")) == ["MSG ours-0", "MSG ours-1", "MSG ours-2"]
