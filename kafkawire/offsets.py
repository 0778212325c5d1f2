"""Offsets: log offsets from partition leaders (ListOffsets) and a group's committed offsets (OffsetFetch,
OffsetCommit at its coordinator). Shared by the consumer and the admin session.

Each function retries what a retry can fix (leader moved, coordinator moved or loading) within the
client's request timeout, and raises the named Kafka error otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kafkawire import errors
from kafkawire.metadata import ZERO_UUID, TopicPartition
from kafkawire.protocol.messages import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestGroupTopic,
    OffsetFetchRequestTopic,
)
from mqwire.common.errors import ConnectError, ConnectionLostError, RequestTimeoutError, RetriableError

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

T = TypeVar("T")

LIST_OFFSETS_KEY = 2
OFFSET_COMMIT_KEY = 8
OFFSET_FETCH_KEY = 9
# Versions from which these APIs name topics by id instead of by name.
OFFSET_COMMIT_BY_NAME_MAX = 9
OFFSET_FETCH_BY_NAME_MAX = 9
OFFSET_FETCH_GROUPS_MIN = 8

EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """An offset found by time or position: the offset, its record's timestamp (ms; -1 when not known)
    and the leader epoch (None when the broker gives none)."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed (or to-be-committed) offset: the next offset to consume, a metadata string stored with
    it, and the leader epoch of the last record consumed (None when not known)."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


async def _retrying(session: Session, what: str, attempt: Callable[[], Any]) -> T:
    """Run ``attempt`` until it returns, retrying retriable errors with backoff within the request timeout."""
    backoff = session.new_backoff()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + session.request_timeout
    while True:
        try:
            result: T = await attempt()
            return result
        except RetriableError as exc:
            if loop.time() + backoff.initial > deadline:
                raise
            log.debug("%s failed (%s); retrying", what, exc)
            await asyncio.sleep(backoff.next_delay())


# ------------------------------------------------------------------------------------ list offsets
async def list_offsets(
    session: Session, specs: Mapping[TopicPartition, int], *, isolation_level: int = READ_UNCOMMITTED
) -> dict[TopicPartition, OffsetAndTimestamp]:
    """For each partition, the offset for a timestamp spec: EARLIEST, LATEST, MAX_TIMESTAMP or a time in ms.

    LATEST under read_committed is the last stable offset. A timestamp after the last record gives offset -1.
    """
    result: dict[TopicPartition, OffsetAndTimestamp] = {}
    remaining = dict(specs)

    async def attempt() -> dict[TopicPartition, OffsetAndTimestamp]:
        await _list_offsets_once(session, remaining, result, isolation_level)
        return result

    return await _retrying(session, "ListOffsets", attempt)


async def _list_offsets_once(
    session: Session,
    remaining: dict[TopicPartition, int],
    result: dict[TopicPartition, OffsetAndTimestamp],
    isolation_level: int,
) -> None:
    metadata = session.metadata
    by_leader: dict[int, list[TopicPartition]] = {}
    unknown = [tp for tp in remaining if metadata.leader_id(*tp) < 0]
    if unknown:
        await session.refresh_metadata({tp.topic for tp in remaining})
    for tp in remaining:
        node = metadata.leader_id(*tp)
        if node < 0:
            raise errors.LeaderNotAvailableError(f"no leader for {tp.topic}-{tp.partition}")
        by_leader.setdefault(node, []).append(tp)
    failures: list[errors.KafkaError] = []
    results = await asyncio.gather(
        *(_list_offsets_at(session, node, tps, remaining, isolation_level) for node, tps in by_leader.items()),
        return_exceptions=True,
    )
    for outcome in results:
        if isinstance(outcome, BaseException):
            raise outcome
        for tp, value in outcome.items():
            if isinstance(value, errors.KafkaError):
                failures.append(value)
                if value.refresh_metadata:
                    metadata.forget_leader(*tp)
            else:
                result[tp] = value
                remaining.pop(tp, None)
    for failure in failures:
        if not failure.retriable:
            raise failure
    if failures:
        raise failures[0]


async def _list_offsets_at(
    session: Session, node: int, tps: list[TopicPartition], specs: Mapping[TopicPartition, int], isolation_level: int
) -> dict[TopicPartition, OffsetAndTimestamp | errors.KafkaError]:
    metadata = session.metadata
    by_topic: dict[str, list[ListOffsetsPartition]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(
            ListOffsetsPartition(
                partition_index=tp.partition,
                current_leader_epoch=metadata.leader_epoch(*tp),
                timestamp=specs[tp],
            )
        )
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[ListOffsetsTopic(name=name, partitions=parts) for name, parts in by_topic.items()],
        timeout_ms=int(session.request_timeout * 1000),
    )
    response = await session.request(node, body)
    out: dict[TopicPartition, OffsetAndTimestamp | errors.KafkaError] = {}
    for topic in response.topics:
        for partition in topic.partitions:
            tp = TopicPartition(topic.name, partition.partition_index)
            if partition.error_code:
                out[tp] = errors.error_for(partition.error_code, f"ListOffsets {tp.topic}-{tp.partition}")
            else:
                epoch = partition.leader_epoch if partition.leader_epoch >= 0 else None
                out[tp] = OffsetAndTimestamp(partition.offset, partition.timestamp, epoch)
    return out


# ---------------------------------------------------------------------------------- group offsets
async def fetch_committed(
    session: Session, group: str, partitions: Iterable[TopicPartition], *, require_stable: bool = False
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The offsets ``group`` committed for ``partitions`` (None where nothing was committed)."""
    wanted = sorted(set(partitions))

    async def attempt() -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await _fetch_committed_once(session, group, wanted, require_stable)

    return await _retrying(session, f"OffsetFetch for group {group!r}", attempt)


async def _fetch_committed_once(
    session: Session, group: str, wanted: list[TopicPartition], require_stable: bool
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    node = await session.coordinator(group)
    connection = await _coordinator_connection(session, group, node)
    metadata = session.metadata
    version = connection.version_for(OFFSET_FETCH_KEY)
    if version > OFFSET_FETCH_BY_NAME_MAX and any(metadata.topic_id(tp.topic) is None for tp in wanted):
        version = connection.version_for(OFFSET_FETCH_KEY, at_most=OFFSET_FETCH_BY_NAME_MAX)
    by_topic: dict[str, list[int]] = {}
    for tp in wanted:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if version >= OFFSET_FETCH_GROUPS_MIN:
        topics = [
            OffsetFetchRequestGroupTopic(name=name, topic_id=metadata.topic_id(name) or ZERO_UUID, partition_indexes=p)
            for name, p in by_topic.items()
        ]
        body = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id=group, topics=topics)], require_stable=require_stable
        )
    else:
        body = OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequestTopic(name=name, partition_indexes=p) for name, p in by_topic.items()],
            require_stable=require_stable,
        )
    response = await _coordinator_request(session, group, node, connection, body, version)
    if version >= OFFSET_FETCH_GROUPS_MIN:
        found = next((g for g in response.groups if g.group_id == group), None)
        if found is None:
            raise errors.CoordinatorNotAvailableError(f"OffsetFetch response names no group {group!r}")
        group_code, topics_out = found.error_code, found.topics
    else:
        group_code, topics_out = response.error_code, response.topics
    _check_coordinator_error(session, group, group_code)
    result: dict[TopicPartition, OffsetAndMetadata | None] = {tp: None for tp in wanted}
    for topic in topics_out:
        name = topic.name or metadata.topic_names.get(getattr(topic, "topic_id", ZERO_UUID), "")
        for partition in topic.partitions:
            tp = TopicPartition(name, partition.partition_index)
            _check_coordinator_error(session, group, partition.error_code)
            if partition.committed_offset >= 0:
                epoch = partition.committed_leader_epoch if partition.committed_leader_epoch >= 0 else None
                result[tp] = OffsetAndMetadata(partition.committed_offset, partition.metadata or "", epoch)
    return result


async def commit_offsets(
    session: Session,
    group: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    generation: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
) -> None:
    """Store ``offsets`` for ``group``. Generation -1 and an empty member id commit outside group membership
    (a consumer that assigns its partitions itself); a member passes its generation and id."""
    if not offsets:
        return

    async def attempt() -> None:
        await _commit_once(session, group, offsets, generation, member_id, group_instance_id)

    await _retrying(session, f"OffsetCommit for group {group!r}", attempt)


async def _commit_once(
    session: Session,
    group: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    generation: int,
    member_id: str,
    group_instance_id: str | None,
) -> None:
    node = await session.coordinator(group)
    connection = await _coordinator_connection(session, group, node)
    metadata = session.metadata
    version = connection.version_for(OFFSET_COMMIT_KEY)
    if version > OFFSET_COMMIT_BY_NAME_MAX and any(metadata.topic_id(tp.topic) is None for tp in offsets):
        version = connection.version_for(OFFSET_COMMIT_KEY, at_most=OFFSET_COMMIT_BY_NAME_MAX)
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, value in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=value.offset,
                committed_leader_epoch=-1 if value.leader_epoch is None else value.leader_epoch,
                committed_metadata=value.metadata,
            )
        )
    body = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=group_instance_id,
        topics=[
            OffsetCommitRequestTopic(name=name, topic_id=metadata.topic_id(name) or ZERO_UUID, partitions=parts)
            for name, parts in by_topic.items()
        ],
    )
    response = await _coordinator_request(session, group, node, connection, body, version)
    first_error: errors.KafkaError | None = None
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code:
                error = errors.error_for(partition.error_code, f"OffsetCommit for group {group!r}")
                if error.refresh_coordinator:
                    session.forget_coordinator(group)
                if first_error is None or (first_error.retriable and not error.retriable):
                    first_error = error
    if first_error is not None:
        raise first_error


async def _coordinator_connection(session: Session, group: str, node: Any) -> Any:
    try:
        return await session.connection_to(node)
    except ConnectError:
        session.forget_coordinator(group)
        raise


async def _coordinator_request(
    session: Session, group: str, node: Any, connection: Any, body: Any, version: int
) -> Any:
    try:
        return await connection.request(body, version=version)
    except (ConnectionLostError, RequestTimeoutError) as exc:
        session.forget_coordinator(group)
        session.discard(connection, exc)
        raise


def _check_coordinator_error(session: Session, group: str, code: int) -> None:
    if code:
        error = errors.error_for(code, f"group {group!r}")
        if error.refresh_coordinator:
            session.forget_coordinator(group)
        raise error
