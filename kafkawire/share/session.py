"""A share session with one broker, sans-IO: the ShareFetch and ShareAcknowledge requests it sends and the
records of a ShareFetch response.

A share session holds the partitions this member fetches from one broker; its epoch is 0 on the request that
opens it, then counts up by one per request, and -1 closes it. Only the changes go on the wire: partitions
added (or carrying acknowledgements) and partitions forgotten. The opening request may not carry
acknowledgements, so those wait for the next one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkawire.message import TimestampType
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.messages import (
    AcknowledgementBatch,
    AcquiredRecords,
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareAcknowledgeTopic,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
    ShareForgottenTopic,
)
from kafkawire.protocol.records import DEFAULT_MAX_UNCOMPRESSED, DecompressionBudget, decode_batches
from kafkawire.share.acks import ShareAcks, ack_batches
from kafkawire.share.message import ShareMessage

__all__ = ["CLOSE_EPOCH", "OPEN_EPOCH", "FetchSettings", "ShareSession", "acquired_messages"]

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

Acks = Mapping[TopicPartition, Mapping[int, int]]


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """What every ShareFetch asks for."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    acquire_mode: int  # 0 batch-optimized, 1 record-limit


class ShareSession:
    """The share session of one member with one broker."""

    def __init__(self, group: str, member_id: str) -> None:
        self.group = group
        self.member_id = member_id
        self.epoch = OPEN_EPOCH
        self.partitions: frozenset[TopicPartition] = frozenset()
        self._sent: frozenset[TopicPartition] = frozenset()

    @property
    def can_acknowledge(self) -> bool:
        """Whether the next request may carry acknowledgements (not the one opening the session)."""
        return self.epoch != OPEN_EPOCH

    def fetch_request(
        self,
        want: Iterable[TopicPartition],
        acks: Acks,
        topic_ids: Mapping[str, uuid.UUID],
        settings: FetchSettings,
    ) -> ShareFetchRequest:
        """The next ShareFetch: fetch from ``want``, acknowledging ``acks`` (partitions among ``want``)."""
        wanted = frozenset(want)
        if acks and not self.can_acknowledge:
            raise ValueError("the request opening a share session cannot carry acknowledgements")
        listed = wanted if self.epoch == OPEN_EPOCH else (wanted - self.partitions) | frozenset(acks)
        forgotten = self.partitions - wanted if self.epoch != OPEN_EPOCH else frozenset()
        by_topic: dict[str, list[ShareFetchPartition]] = {}
        for tp in sorted(listed):
            by_topic.setdefault(tp.topic, []).append(
                ShareFetchPartition(
                    partition_index=tp.partition, acknowledgement_batches=_batches(acks.get(tp))
                )
            )
        gone: dict[str, list[int]] = {}
        for tp in sorted(forgotten):
            gone.setdefault(tp.topic, []).append(tp.partition)
        self._sent = wanted
        return ShareFetchRequest(
            group_id=self.group,
            member_id=self.member_id,
            share_session_epoch=self.epoch,
            max_wait_ms=settings.max_wait_ms,
            min_bytes=settings.min_bytes,
            max_bytes=settings.max_bytes,
            max_records=settings.max_records,
            batch_size=settings.batch_size,
            share_acquire_mode=settings.acquire_mode,
            topics=[
                ShareFetchTopic(topic_id=topic_ids[name], partitions=parts)
                for name, parts in by_topic.items()
            ],
            forgotten_topics_data=[
                ShareForgottenTopic(topic_id=topic_ids[name], partitions=parts)
                for name, parts in gone.items()
            ],
        )

    def acknowledge_request(
        self, acks: Acks, topic_ids: Mapping[str, uuid.UUID], *, close: bool = False, renew: bool = False
    ) -> ShareAcknowledgeRequest:
        """A ShareAcknowledge of ``acks``; with ``close`` it also ends the session (epoch -1); ``renew`` marks
        a request carrying RENEW acknowledgements (version 2)."""
        if not close and not self.can_acknowledge:
            raise ValueError("a share session must be opened by a ShareFetch before it acknowledges")
        by_topic: dict[str, list[ShareAcknowledgePartition]] = {}
        for tp in sorted(acks):
            by_topic.setdefault(tp.topic, []).append(
                ShareAcknowledgePartition(
                    partition_index=tp.partition, acknowledgement_batches=_batches(acks[tp])
                )
            )
        self._sent = self.partitions
        return ShareAcknowledgeRequest(
            group_id=self.group,
            member_id=self.member_id,
            share_session_epoch=CLOSE_EPOCH if close else self.epoch,
            is_renew_ack=renew,
            topics=[
                ShareAcknowledgeTopic(topic_id=topic_ids[name], partitions=parts)
                for name, parts in by_topic.items()
            ],
        )

    def answered(self) -> None:
        """The last request succeeded: the session now holds what it asked for, and the epoch moves on."""
        self.partitions = self._sent
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        """The broker lost the session (or the epoch went wrong): the next request opens a new one."""
        self.epoch = OPEN_EPOCH
        self.partitions = frozenset()


def _batches(acks: Mapping[int, int] | None) -> list[AcknowledgementBatch]:
    if not acks:
        return []
    return [
        AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=types)
        for first, last, types in ack_batches(acks)
    ]


def acquired_messages(
    tp: TopicPartition,
    records: bytes | None,
    acquired: Sequence[AcquiredRecords],
    deadline: float,
    acks: ShareAcks,
    *,
    check_crcs: bool = True,
    budget: DecompressionBudget | None = None,
) -> list[ShareMessage]:
    """The records of a ShareFetch partition that this member acquired, registered with ``acks``.

    Records outside the acquired ranges belong to other members and are dropped. An acquired offset inside
    a returned batch without an application record (a control record, or one compacted away) is
    acknowledged as a gap; acquired offsets past the last returned batch are left alone (their lock expires
    and the broker delivers them again), never settled blind.

    Compressed batches are decompressed one at a time out of ``budget`` (shared by the partitions of one
    response): the acquired records of a batch that no longer fits, and of every batch after it, are
    released, so the group delivers them again in a later fetch. A batch larger than the whole budget raises
    ``RecordBatchTooLargeError``.
    """
    if not acquired:
        return []
    ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in acquired)
    batches = (
        decode_batches(
            records, verify_crc=check_crcs, max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED, lazy=True
        )
        if records
        else []
    )
    out: list[ShareMessage] = []
    seen: set[int] = set()
    covered = -1
    deferred_from: int | None = None
    for batch in batches:
        if budget is not None and not budget.inflate(batch):
            deferred_from = batch.base_offset
            break
        covered = max(covered, batch.next_offset - 1)
        if batch.is_control:
            continue
        timestamp_type = TimestampType.LOG_APPEND_TIME if batch.log_append_time else TimestampType.CREATE_TIME
        epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
        for message in batch.decode_records(ShareMessage, (tp.topic, tp.partition), (timestamp_type, epoch)):
            count = _delivery_count(ranges, message.offset)
            if count is None or message.offset in seen:
                continue
            seen.add(message.offset)
            message.delivery_count = count
            message._serial = acks.acquire(tp, message.offset, deadline)
            out.append(message)
    for first, last, _ in ranges:
        for offset in range(first, min(last, covered) + 1):
            if offset not in seen:
                acks.gap(tp, offset, deadline)
        if deferred_from is not None:
            for offset in range(max(first, deferred_from, covered + 1), last + 1):
                acks.release(tp, offset, deadline)
    return out


def _delivery_count(ranges: list[tuple[int, int, int]], offset: int) -> int | None:
    for first, last, count in ranges:
        if first <= offset <= last:
            return count
        if first > offset:
            break
    return None
