"""The standalone killed (SIGKILL) and started again on the same ports and data while a producer sends with
broker deduplication on: the producer reconnects, and every acknowledged message is in the topic exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest

import pulsarwire
from mqwire.common.errors import MqwireError
from mqwire.testing import pulsar_admin
from pulsarwire.message import MessageId
from tests.integration.crash import OwnBroker

# What these tests show is recovery from a broker's crash or freeze, through the clients' reconnects; how a connection
# is lost and made again on each event loop is shown on both loops by the fault-proxy tests. They run on asyncio's
# loop only, which keeps CI within its time.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]

COUNT = 4000


@pytest.fixture(scope="module")
def module_dedup_pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    with OwnBroker.for_module("pulsar", tmp_path_factory.mktemp("own-pulsar") / "state") as broker:
        pulsar_admin.set_namespace_deduplication(broker.info["admin_url"], "public/default", True)
        yield broker


@pytest.fixture
def dedup_pulsar(module_dedup_pulsar: OwnBroker) -> OwnBroker:
    """The module's own broker with deduplication on, up (each test uses a topic of its own on it)."""
    return module_dedup_pulsar.revived()


@pytest.mark.parametrize("batching", [True, False], ids=["batching", "no-batching"])
async def test_restart_under_load_with_deduplication_loses_and_duplicates_nothing(
    dedup_pulsar: OwnBroker, batching: bool
) -> None:
    topic = f"persistent://public/default/dedup-restart-{batching}"
    options = {"keepalive_interval": 2.0, "operation_timeout": 15.0, "initial_backoff_interval": 0.2,
               "max_backoff_interval": 2.0}
    outcomes: dict[bytes, asyncio.Future[MessageId]] = {}
    async with pulsarwire.connect(dedup_pulsar.url, **options) as client:
        # A subscription from the start keeps every message (without one the broker may drop ledgers).
        async with client.consumer(topic, group="check", start="earliest"):
            pass
        async with client.producer(
            topic, send_timeout_ms=0, batching_enabled=batching, batching_max_messages=50, max_pending_messages=500
        ) as producer:

            async def send_all() -> None:
                for n in range(COUNT):
                    value = b"m%05d" % n
                    outcomes[value] = await producer.enqueue(value)
                    if n % 20 == 0:
                        await asyncio.sleep(0.002)

            sender = asyncio.create_task(send_all())
            async with asyncio.timeout(30):
                while len(outcomes) < COUNT // 4:
                    await asyncio.sleep(0.01)
            # Crash in the middle: some sends confirmed, some in flight, more queued while it is down.
            await dedup_pulsar.crash_and_restart(down_seconds=1.0)
            async with asyncio.timeout(180):
                await sender
                await producer.flush()
        acknowledged = set()
        for value, future in outcomes.items():
            try:
                future.result()
            except MqwireError:
                continue
            acknowledged.add(value)
        # The producer was told to wait through the outage (send_timeout_ms=0): every message is confirmed.
        assert len(acknowledged) == COUNT

        stored: Counter[bytes] = Counter()
        async with client.consumer(topic, group="check") as checker:
            # Until the topic has nothing more for a while: duplicates would come after the COUNT-th message.
            while True:
                try:
                    message = await checker.receive(timeout=5)
                except pulsarwire.ReceiveTimeoutError:
                    break
                stored[message.value] += 1
                await checker.ack(message)
    missing = sorted(acknowledged - set(stored))
    assert not missing, f"{len(missing)} acknowledged messages are not in the topic, e.g. {missing[:5]}"
    assert set(stored) == acknowledged
    assert [value for value, times in stored.items() if times > 1] == []
