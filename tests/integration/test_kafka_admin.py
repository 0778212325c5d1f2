"""The kafkawire admin client on Kafka 4.3 and 3.9: groups, broker configs, offsets under transactions, records."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import kafkawire
from kafkawire import TopicPartition
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["kafka-4.3", "kafka-3.9"])
def broker(request: pytest.FixtureRequest) -> KafkaBroker:
    name = "kafka_broker" if request.param == "kafka-4.3" else "kafka3_broker"
    found: KafkaBroker = request.getfixturevalue(name)
    return found


def unique(label: str) -> str:
    return f"kw-{label}-{uuid.uuid4().hex[:8]}"


async def test_groups_are_listed_and_described_with_their_members(broker: KafkaBroker) -> None:
    topic, group = unique("admin-groups"), unique("admin-group")
    async with kafkawire.connect(broker.url) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=2)
        async with client.consumer(topic, group=group, start="earliest") as consumer:
            async with asyncio.timeout(60):
                while len(consumer.assignment()) < 2:
                    await consumer.getmany(timeout_ms=200)
                listed = {g.group_id: g for g in await admin.list_groups()}
            assert listed[group].protocol_type == "consumer"
            (described,) = await admin.describe_groups([group])
            assert described.group_id == group and described.state == "Stable"
            assert described.coordinator in client.metadata.brokers  # the one broker
            assert len(described.members) == 1 and described.members[0].client_id
            assert described.members[0].member_id
            await consumer.commit({TopicPartition(topic, 0): 5})
            committed = await admin.list_consumer_group_offsets(group, [(topic, 0), (topic, 1)])
            assert committed == {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): None}
        (after,) = await admin.describe_groups([group])
        assert after.members == []
        await admin.delete_topics([topic])


async def test_broker_configs_and_all_topic_descriptions(broker: KafkaBroker) -> None:
    topic = unique("admin-configs")
    async with kafkawire.connect(broker.url) as client, client.admin() as admin:
        await admin.create_topics([kafkawire.NewTopic(topic, 2, 1, {"cleanup.policy": "compact"})])
        cluster = await admin.describe_cluster()
        broker_id = str(cluster.brokers[0].node_id)
        configs = await admin.describe_configs({("broker", broker_id): ["num.partitions", "log.dirs"]})
        entries = configs[("broker", broker_id)]
        assert set(entries) == {"num.partitions", "log.dirs"}
        assert entries["log.dirs"].value
        topic_configs = (await admin.describe_configs({("topic", topic): None}))[("topic", topic)]
        assert topic_configs["cleanup.policy"].value == "compact"
        assert not topic_configs["cleanup.policy"].is_default
        assert topic_configs["retention.ms"].is_default
        described = {d.name: d for d in await admin.describe_topics()}
        assert [p.partition for p in described[topic].partitions] == [0, 1]
        assert "__consumer_offsets" not in described or described["__consumer_offsets"].internal
        with pytest.raises(ValueError, match="resource type"):
            await admin.describe_configs({("cluster", "x"): None})
        await admin.delete_topics([topic])


async def test_list_offsets_read_committed_stops_at_an_open_transaction(broker: KafkaBroker) -> None:
    topic = unique("admin-lso")
    tp = TopicPartition(topic, 0)
    async with kafkawire.connect(broker.url) as client, client.admin() as admin:
        await admin.create_topic(topic)
        async with client.producer(topic) as plain:
            for i in range(3):
                await plain.send(b"plain-%d" % i)
        async with client.producer(topic, transactional_id=unique("admin-txn")) as producer:
            await producer.begin_transaction()
            for i in range(4):
                await producer.send(b"open-%d" % i)
            uncommitted = await admin.list_offsets({tp: "latest"})
            committed = await admin.list_offsets({tp: "latest"}, isolation_level="read_committed")
            assert uncommitted[tp].offset == 7
            assert committed[tp].offset == 3  # the last stable offset: where the open transaction begins
            await producer.commit_transaction()
        # EndTxn returns once the commit is decided; the markers that move the stable offset follow.
        async with asyncio.timeout(30):
            while (await admin.list_offsets({tp: "latest"}, isolation_level="read_committed"))[tp].offset != 8:
                await asyncio.sleep(0.1)  # eight: four records and the commit marker
        with pytest.raises(ValueError, match="isolation_level"):
            await admin.list_offsets({tp: "latest"}, isolation_level="committed")
        with pytest.raises(ValueError, match="offset spec"):
            await admin.list_offsets({tp: "newest"})


async def test_delete_records_up_to_the_high_watermark(broker: KafkaBroker) -> None:
    topic = unique("admin-delete")
    tp = TopicPartition(topic, 0)
    async with kafkawire.connect(broker.url) as client, client.admin() as admin:
        await admin.create_topic(topic)
        async with client.producer(topic) as producer:
            for i in range(5):
                await producer.send(b"%d" % i)
        low = await admin.delete_records({(topic, 0): -1})
        assert low == {tp: 5}
        assert (await admin.list_offsets({tp: "earliest"}))[tp].offset == 5
        with pytest.raises(kafkawire.OffsetOutOfRangeError):
            await admin.delete_records({tp: 99})
