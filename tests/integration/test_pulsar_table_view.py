"""TableView against the real broker: the latest value per key across partitions, kept current, listened to."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import pulsarwire
from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import PulsarBroker

pytestmark = pytest.mark.integration


async def test_latest_value_per_key_across_partitions_kept_current(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, f"table-{uuid.uuid4().hex[:12]}", 3)
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic) as producer:
            for round_ in range(3):
                for index in range(20):
                    await producer.enqueue(f"v{round_}-{index}".encode(), key=f"k{index}".encode())
            await producer.enqueue(None, key=b"k0")  # a null value removes its key
            await producer.enqueue(b"", key=b"k1")  # and so does an empty one, as in the Java client
            await producer.enqueue(b"no key")  # ignored
            await producer.flush()
        async with client.table_view(topic, value_deserializer=bytes.decode) as table:
            # Started: what the topic held is read.
            assert len(table) == 18
            assert dict(table.items()) == {f"k{i}": f"v2-{i}" for i in range(2, 20)}
            assert "k0" not in table and table.get("k1") is None
            seen: list[tuple[str, object]] = []
            table.for_each_and_listen(lambda key, value: seen.append((key, value)))
            assert len(seen) == 18
            async with client.producer(topic) as producer:
                await producer.send(b"new", key=b"k5")
                await producer.send(b"added", key=b"k42")
                await producer.send(None, key=b"k19")
            await table.refresh()
            assert (table["k5"], table["k42"], "k19" in table, len(table)) == ("new", "added", False, 18)
            # The three went to different partitions, so their order is not fixed.
            assert sorted(seen[18:], key=str) == sorted([("k5", "new"), ("k42", "added"), ("k19", None)], key=str)
            # Kept current without refresh(): the background reader follows.
            async with client.producer(topic) as producer:
                await producer.send(b"later", key=b"k7")
            async with asyncio.timeout(10):
                while table.get("k7") != "later":
                    await asyncio.sleep(0.05)
        assert table["k7"] == "later"  # the values stay after close


async def test_an_empty_topic_gives_an_empty_view_and_unknown_options_are_named(pulsar_broker: PulsarBroker) -> None:
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.table_view(f"table-empty-{uuid.uuid4().hex[:12]}") as table:
            assert len(table) == 0 and table.keys() == []
            await table.refresh()
        with pytest.raises(TypeError, match="receiver_queue_size"):
            client.table_view("t", receiver_queue_sise=10)  # type: ignore[call-arg]
