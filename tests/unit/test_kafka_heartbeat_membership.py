"""KIP-848 membership against a scripted coordinator: an assignment that could not be applied comes back."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kafkawire import errors
from kafkawire.group.heartbeat_membership import HeartbeatMembership
from kafkawire.metadata import ClusterMetadata, TopicPartition
from kafkawire.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupTopicPartitions
from kafkawire.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupAssignment,
    ConsumerGroupHeartbeatResponse,
)

TOPIC_ID = uuid.uuid4()


class Coordinator:
    """Answers heartbeats as a KIP-848 coordinator does: the assignment only when it changed or when the
    request is a full one (epoch 0, or subscription, rebalance timeout and owned partitions all set)."""

    def __init__(self) -> None:
        self.requests: list[ConsumerGroupHeartbeatRequest] = []
        self.sent_once = False
        self.closed = False

    def version_for(self, api_key: int) -> int:
        return 1

    async def request(self, body: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        self.requests.append(body)
        await asyncio.sleep(0)
        full = body.member_epoch == 0 or (
            body.rebalance_timeout_ms != -1
            and body.subscribed_topic_names is not None
            and body.topic_partitions is not None
        )
        assignment = None
        if full or not self.sent_once:
            self.sent_once = True
            assignment = ConsumerGroupAssignment(
                topic_partitions=[ConsumerGroupTopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1])]
            )
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=0, member_id=body.member_id, member_epoch=1, heartbeat_interval_ms=10,
            assignment=assignment,
        )

    def close(self) -> None:
        self.closed = True


class FakeSession:
    def __init__(self, coordinator: Coordinator) -> None:
        self.metadata = ClusterMetadata()
        self.metadata.topic_ids = {"t": TOPIC_ID}
        self.metadata.topic_names = {TOPIC_ID: "t"}
        self._coordinator = coordinator

    async def coordinator(self, group: str) -> object:
        return object()

    async def dedicated_connection(self, node: object) -> Coordinator:
        return self._coordinator

    def forget_coordinator(self, group: str) -> None:
        pass

    async def refresh_metadata(self, topics: Any = None) -> None:
        pass


async def test_an_assignment_whose_offsets_could_not_be_fetched_is_asked_for_again() -> None:
    coordinator = Coordinator()
    owned: set[TopicPartition] = set()
    attempts = {"n": 0}

    async def on_assign(partitions: set[TopicPartition]) -> None:
        attempts["n"] += 1
        if attempts["n"] == 1:  # the committed offsets could not be fetched (the coordinator moved)
            raise errors.CoordinatorNotAvailableError("OffsetFetch")
        owned.update(partitions)

    async def nothing(partitions: set[TopicPartition]) -> None:
        pass

    membership = HeartbeatMembership(
        FakeSession(coordinator), "g", ["t"], remote_assignor=None, rebalance_timeout_ms=30_000,  # type: ignore[arg-type]
        group_instance_id=None, on_assign=on_assign, on_revoke=nothing, on_lose=nothing,
    )
    membership.start()
    try:
        async with asyncio.timeout(5):
            while owned != {TopicPartition("t", 0), TopicPartition("t", 1)}:
                await asyncio.sleep(0.01)
        assert membership.assignment == owned
    finally:
        await membership.close()
    # After the failure the member sent a full heartbeat (at its current epoch), which brought the
    # assignment again; before the fix it sent a partial one and never learnt its partitions.
    retry = coordinator.requests[1]
    assert retry.member_epoch == 1
    assert retry.subscribed_topic_names == ["t"] and retry.rebalance_timeout_ms == 30_000
    assert retry.topic_partitions == []
