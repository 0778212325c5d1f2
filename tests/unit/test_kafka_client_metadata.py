"""The client's cluster view folds Metadata responses in and forgets what the broker stopped knowing."""

from __future__ import annotations

import uuid

from kafkawire.metadata import ClusterMetadata, TopicPartition
from kafkawire.protocol.messages import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

TOPIC_ID = uuid.UUID(int=7)


def response(*topics: MetadataResponseTopic) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=n, host=f"h{n}", port=n) for n in (1, 2)],
        cluster_id="c",
        controller_id=2,
        topics=list(topics),
    )


def topic(name: str, leaders: dict[int, int], code: int = 0) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code,
        name=name,
        topic_id=TOPIC_ID,
        partitions=[
            MetadataResponsePartition(partition_index=p, leader_id=leader, leader_epoch=3, replica_nodes=[leader],
                                      isr_nodes=[leader])
            for p, leader in leaders.items()
        ],
    )


def test_update_records_leaders_epochs_and_ids() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("t", {0: 1, 1: 2})), requested=["t"])
    assert metadata.partitions("t") == [0, 1]
    assert metadata.leader_id("t", 1) == 2
    assert metadata.leader("t", 0) is not None
    assert metadata.leader_epoch("t", 0) == 3
    assert metadata.topic_id("t") == TOPIC_ID
    assert metadata.topic_names[TOPIC_ID] == "t"
    assert metadata.controller_id == 2


def test_leaders_on_unknown_brokers_count_as_missing() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("t", {0: 1, 1: 9, 2: -1})), requested=["t"])
    assert metadata.available_partitions("t") == [0]
    assert metadata.leader_id("t", 1) == -1


def test_forgetting_a_leader_bumps_the_version() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("t", {0: 1})), requested=["t"])
    version = metadata.version
    metadata.forget_leader(*TopicPartition("t", 0))
    assert metadata.leader_id("t", 0) == -1
    assert metadata.version > version


def test_a_topic_in_error_is_forgotten_and_its_error_kept() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("t", {0: 1})), requested=["t"])
    metadata.update(response(topic("t", {}, code=3)), requested=["t"])
    assert metadata.partitions("t") is None
    assert metadata.topic_errors["t"] == 3


def test_a_full_refresh_replaces_everything() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("a", {0: 1}), topic("b", {0: 1})), requested=None)
    metadata.update(response(topic("a", {0: 2})), requested=None)
    assert metadata.partitions("b") is None
    assert metadata.leader_id("a", 0) == 2


def test_a_brokers_only_refresh_keeps_topics() -> None:
    metadata = ClusterMetadata()
    metadata.update(response(topic("a", {0: 1})), requested=["a"])
    metadata.update(response(), requested=[])
    assert metadata.partitions("a") == [0]
    metadata.forget_topic("a")
    assert metadata.partitions("a") is None
