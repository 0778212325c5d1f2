"""A client made before a fork, against the real brokers: in the child its first use raises
ForkedClientError and closing it sends nothing, a client made in the child sends and receives, and in the
parent the old client, its producer and its consumer go on over the same connections once the child is gone.
Then the same client awaited from a second event loop raises WrongLoopError instead of hanging."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import secrets
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.errors import ForkedClientError, ReceiveTimeoutError, WrongLoopError
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is what is under test"),
]

TUBEMQ_TOPIC = "handshake"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)
CHILD_TIMEOUT = 150.0


def connect(system: str, url: str) -> Any:
    if system == "kafka":
        return kafkawire.connect(url)
    if system == "pulsar":
        return pulsarwire.connect(url)
    return tubemqwire.connect(url, heartbeat_interval_ms=1000)


async def round_trip(producer: Any, consumer: Any, label: str) -> None:
    """Send until ``consumer`` receives one of this call's messages (a consumer from "latest" may miss the
    first ones while its partitions are assigned); fails after 90 s."""
    prefix = f"{label}-{secrets.token_hex(4)}-".encode()
    async with asyncio.timeout(90):
        for n in range(10_000):
            await producer.send(prefix + str(n).encode())
            try:
                while True:
                    message = await consumer.receive(timeout=1)
                    # Acknowledged, or a TubeMQ partition would hand out nothing more until its batch's
                    # confirm timeout (60 s) ran out.
                    await consumer.ack(message)
                    if bytes(message.value).startswith(prefix):
                        return
            except ReceiveTimeoutError:
                continue


def open_consumer(client: Any, topic: str) -> Any:
    return client.consumer(topic, group=f"fork_{secrets.token_hex(4)}", start="latest")


def child_main(system: str, url: str, topic: str, client: Any, producer: Any) -> int:
    """The forked child's work: 0 when every check holds, else the number of the first that failed."""

    async def main() -> int:
        try:
            client.producer(topic)
        except ForkedClientError as exc:
            if "Connect a new client in the child" not in str(exc):
                return 2
        else:
            return 3
        try:
            await producer.send(b"from the child over the parent's producer")
        except ForkedClientError:
            pass
        else:
            return 4
        await producer.close()  # nothing sent: the parent's producer goes on
        await client.close()  # nothing sent, nothing shut: the parent's connections go on
        async with (
            connect(system, url) as own,
            own.producer(topic) as own_producer,
            open_consumer(own, topic) as own_consumer,
        ):
            await round_trip(own_producer, own_consumer, "child")
        return 0

    try:
        return asyncio.run(main())
    except BaseException:
        traceback.print_exc()
        return 1


def in_child(body: Callable[[], int], use_multiprocessing: bool) -> int:
    """Run ``body`` in a forked child (``os.fork`` or multiprocessing's fork context); its exit code."""
    if use_multiprocessing:
        process = multiprocessing.get_context("fork").Process(target=lambda: sys.exit(body()))
        process.start()
        process.join(CHILD_TIMEOUT)
        if process.exitcode is None:
            process.kill()
            process.join()
            pytest.fail("the forked child hung")
        return process.exitcode
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = body()
        finally:
            os._exit(code)
    deadline = time.monotonic() + CHILD_TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.1)


def check_fork_and_loops(system: str, url: str, topic: str, *, use_multiprocessing: bool = False) -> None:
    loop = asyncio.new_event_loop()
    client = connect(system, url)
    producer = client.producer(topic)
    consumer = open_consumer(client, topic)

    async def before() -> Any:
        await client.start()
        await producer.start()
        await consumer.start()
        await round_trip(producer, consumer, "parent-before")
        return client.stats()

    async def after() -> Any:
        await round_trip(producer, consumer, "parent-after")
        return client.stats()

    try:
        stats_before = loop.run_until_complete(before())
        code = in_child(lambda: child_main(system, url, topic, client, producer), use_multiprocessing)
        assert code == 0, f"the child's check {code} failed (see its stderr)"
        stats_after = loop.run_until_complete(after())
        # The same connections carried on: the child neither closed nor disturbed them.
        assert stats_after.connections_lost == stats_before.connections_lost
        assert stats_after.reconnects == stats_before.reconnects

        # The client awaited from another loop (a second asyncio.run) is refused at once.
        async def elsewhere() -> None:
            await producer.send(b"from another loop")

        with pytest.raises(WrongLoopError):
            asyncio.run(elsewhere())
    finally:
        loop.run_until_complete(client.close())
        loop.close()


def test_kafka_client_across_a_fork(kafka_broker: KafkaBroker) -> None:
    check_fork_and_loops("kafka", kafka_broker.url, f"fork-{secrets.token_hex(4)}", use_multiprocessing=True)


def test_pulsar_client_across_a_fork(pulsar_broker: PulsarBroker) -> None:
    check_fork_and_loops("pulsar", pulsar_broker.url, f"fork-{secrets.token_hex(4)}")


def test_tubemq_client_across_a_fork(tubemq_broker: TubeMQBroker) -> None:
    check_fork_and_loops("tubemq", tubemq_broker.url, TUBEMQ_TOPIC)
