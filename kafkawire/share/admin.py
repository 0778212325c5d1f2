"""Share group administration (KIP-932): describe share groups, read and set their start offsets, delete
them. ``kafkawire.admin.Admin`` offers these as methods; the requests go to each group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from kafkawire import errors
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    ShareGroupDescribeRequest,
)

if TYPE_CHECKING:
    from kafkawire.session import Session

__all__ = [
    "ShareGroupDescription",
    "ShareGroupMember",
    "alter_share_group_offsets",
    "delete_groups",
    "delete_share_group_offsets",
    "describe_share_groups",
    "list_share_group_offsets",
]


@dataclass(frozen=True)
class ShareGroupMember:
    """A member of a share group: its id, client id and host, and the partitions it is assigned (which
    other members may share)."""

    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group as its coordinator describes it: state (``"Empty"``, ``"Stable"``, ``"Dead"``), epoch,
    the assignor, the members, and the node id of that coordinator."""

    group_id: str
    state: str
    group_epoch: int
    assignor: str
    members: list[ShareGroupMember]
    coordinator: int


async def describe_share_groups(session: Session, group_ids: Iterable[str]) -> list[ShareGroupDescription]:
    """Each of ``group_ids`` described by its coordinator (``GroupIdNotFoundError`` for one that is not a
    share group)."""
    out = []
    for group in group_ids:
        out += await session.with_coordinator(group, partial(_describe_share_group, session, group))
    return out


async def _describe_share_group(session: Session, group: str) -> list[ShareGroupDescription]:
    out = []
    response = await session.request_coordinator(group, ShareGroupDescribeRequest(group_ids=[group]))
    coordinator = await session.coordinator(group)  # the node just asked, remembered
    for described in response.groups:
        if described.error_code:
            raise errors.error_for(
                described.error_code, described.error_message or f"share group {group!r}"
            )
        members = [
            ShareGroupMember(
                m.member_id,
                m.client_id,
                m.client_host,
                m.member_epoch,
                frozenset(
                    TopicPartition(t.topic_name, p)
                    for t in m.assignment.topic_partitions
                    for p in t.partitions
                ),
            )
            for m in described.members
        ]
        out.append(
            ShareGroupDescription(
                described.group_id,
                described.group_state,
                described.group_epoch,
                described.assignor_name,
                members,
                coordinator.node_id,
            )
        )
    return out


async def list_share_group_offsets(
    session: Session, group: str, topics: Mapping[str, Iterable[int]] | None = None
) -> dict[TopicPartition, int | None]:
    """The start offset of ``group`` in each partition (of ``topics``: name -> partitions; None: every
    partition the group has state for); None where the group has not started reading the partition."""
    wanted = (
        None
        if topics is None
        else [
            DescribeShareGroupOffsetsRequestTopic(topic_name=name, partitions=list(parts))
            for name, parts in topics.items()
        ]
    )
    body = DescribeShareGroupOffsetsRequest(
        groups=[DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=wanted)]
    )
    return await session.with_coordinator(group, partial(_list_share_group_offsets, session, group, body))


async def _list_share_group_offsets(
    session: Session, group: str, body: DescribeShareGroupOffsetsRequest
) -> dict[TopicPartition, int | None]:
    response = await session.request_coordinator(group, body)
    out: dict[TopicPartition, int | None] = {}
    for found in response.groups:
        if found.error_code:
            raise errors.error_for(found.error_code, found.error_message or f"share group {group!r}")
        for topic in found.topics:
            for part in topic.partitions:
                if part.error_code:
                    raise errors.error_for(
                        part.error_code, part.error_message or f"{topic.topic_name}[{part.partition_index}]"
                    )
                offset = part.start_offset
                out[TopicPartition(topic.topic_name, part.partition_index)] = None if offset < 0 else offset
    return out


async def alter_share_group_offsets(
    session: Session, group: str, offsets: Mapping[TopicPartition, int]
) -> None:
    """Set the start offsets of ``group`` (which must have no members): records before them are not
    delivered, records from them are, again if they were already."""
    by_topic: dict[str, list[AlterShareGroupOffsetsRequestPartition]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            AlterShareGroupOffsetsRequestPartition(partition_index=tp.partition, start_offset=offset)
        )
    body = AlterShareGroupOffsetsRequest(
        group_id=group,
        topics=[
            AlterShareGroupOffsetsRequestTopic(topic_name=name, partitions=parts)
            for name, parts in by_topic.items()
        ],
    )
    await session.with_coordinator(group, partial(_alter_share_group_offsets, session, group, body))


async def _alter_share_group_offsets(session: Session, group: str, body: AlterShareGroupOffsetsRequest) -> None:
    response = await session.request_coordinator(group, body)
    if response.error_code:
        raise errors.error_for(response.error_code, response.error_message or f"share group {group!r}")
    for topic in response.responses:
        for part in topic.partitions:
            if part.error_code:
                raise errors.error_for(
                    part.error_code, part.error_message or f"{topic.topic_name}[{part.partition_index}]"
                )


async def delete_share_group_offsets(session: Session, group: str, topics: Iterable[str]) -> None:
    """Forget the state of ``group`` in ``topics`` (the group must have no members); it starts afresh."""
    body = DeleteShareGroupOffsetsRequest(
        group_id=group, topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=name) for name in topics]
    )
    await session.with_coordinator(group, partial(_delete_share_group_offsets, session, group, body))


async def _delete_share_group_offsets(session: Session, group: str, body: DeleteShareGroupOffsetsRequest) -> None:
    response = await session.request_coordinator(group, body)
    if response.error_code:
        raise errors.error_for(response.error_code, response.error_message or f"share group {group!r}")
    for topic in response.responses:
        if topic.error_code:
            raise errors.error_for(
                topic.error_code, topic.error_message or f"share group {group!r}: {topic.topic_name}"
            )


async def delete_groups(session: Session, group_ids: Iterable[str]) -> None:
    """Delete groups without members, of any type (a share group's state goes with it)."""
    for group in group_ids:
        await session.with_coordinator(group, partial(_delete_group, session, group))


async def _delete_group(session: Session, group: str) -> None:
    response = await session.request_coordinator(group, DeleteGroupsRequest(groups_names=[group]))
    for result in response.results:
        if result.error_code:
            raise errors.error_for(result.error_code, f"deleting group {result.group_id!r}")
