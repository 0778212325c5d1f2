"""A member's commit whose epoch went stale while the next heartbeat was under way is sent again."""

from __future__ import annotations

from typing import Any

import pytest

import kafkawire
import kafkawire.consumer as consumer_module
from kafkawire import errors
from kafkawire.group.metadata import GroupMetadata
from kafkawire.metadata import TopicPartition
from kafkawire.offsets import OffsetAndMetadata


class Membership:
    """The member's epoch moves on after the first commit was sent (a heartbeat answered meanwhile)."""

    member_id = "member-1"

    def __init__(self) -> None:
        self.epoch = 4

    @property
    def metadata(self) -> GroupMetadata:
        return GroupMetadata("g", self.epoch, self.member_id, None)


async def test_a_commit_refused_for_a_stale_member_epoch_is_sent_again_with_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    membership = Membership()
    sent: list[int] = []

    async def commit_offsets(client: Any, group: str, offsets: Any, *, generation: int, **_: Any) -> None:
        sent.append(generation)
        if generation == 4:
            membership.epoch = 5
            raise errors.StaleMemberEpochError("OffsetCommit")

    monkeypatch.setattr(consumer_module, "commit_offsets", commit_offsets)
    client = kafkawire.connect("kafka://127.0.0.1:1")
    consumer = client.consumer("t", group="g", group_protocol="consumer")
    consumer._membership = membership  # type: ignore[assignment]
    await consumer._commit({TopicPartition("t", 0): OffsetAndMetadata(7)})
    assert sent == [4, 5]
    await client.close()


async def test_a_commit_still_stale_at_the_request_timeout_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    async def commit_offsets(client: Any, group: str, offsets: Any, **_: Any) -> None:
        raise errors.StaleMemberEpochError("OffsetCommit")

    monkeypatch.setattr(consumer_module, "commit_offsets", commit_offsets)
    client = kafkawire.connect("kafka://127.0.0.1:1", request_timeout_ms=300)
    consumer = client.consumer("t", group="g", group_protocol="consumer")
    consumer._membership = Membership()  # type: ignore[assignment]
    with pytest.raises(errors.StaleMemberEpochError):
        await consumer._commit({TopicPartition("t", 0): OffsetAndMetadata(7)})
    await client.close()
