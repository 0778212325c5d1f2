"""Acknowledgement bookkeeping of a share consumer, sans-IO: which records this member holds, which
acknowledgements wait to be sent, and the acknowledgement batches of a request.

A record fetched by a share consumer is *acquired*: locked to this member until it is acknowledged or its
acquisition lock times out, after which the broker hands it to any member again. Each acquisition gets a
serial number carried by the message object, so an acknowledgement is checked against the very delivery it
names: a message acknowledged twice, one this member never acquired, one acquired again since (a newer
delivery of the same offset), or one whose lock has expired, is refused here and never reaches the broker
where it could settle a later delivery by mistake. Time is passed in (``now``, seconds of a monotonic clock).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from kafkawire.errors import AcquisitionLockExpiredError, AlreadyAcknowledgedError, NotAcquiredError
from kafkawire.metadata import TopicPartition

__all__ = [
    "GAP",
    "RENEW",
    "AcknowledgeType",
    "ShareAcks",
    "ack_batches",
]

# Acknowledge type 0: no record at this offset (a control record or a compacted one) in an acquired range.
GAP = 0
# Acknowledge type 4 (KIP-1222): keep the record and extend its acquisition lock.
RENEW = 4


class AcknowledgeType(IntEnum):
    """How a share consumer settles a record (the wire values of KIP-932).

    - ``ACCEPT`` — processed: the record is never delivered to the group again.
    - ``RELEASE`` — given back: the record is delivered again, to any member, with a higher delivery count.
    - ``REJECT`` — unprocessable: the record is archived and never delivered again.
    """

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


# Serials are unique across the consumers of the process: a message of one consumer can never pass for a
# delivery that another consumer holds of the same record.
_SERIALS = itertools.count(1)


@dataclass(slots=True)
class _Held:
    serial: int
    deadline: float
    delivered: bool = False


@dataclass(slots=True)
class _Partition:
    held: dict[int, _Held] = field(default_factory=dict)
    # offset -> acknowledge type, waiting to be sent; the deadline says when sending it is too late.
    pending: dict[int, tuple[int, float]] = field(default_factory=dict)
    # offsets acknowledged and not yet answered, so a second ack is told apart from a foreign one.
    settled: dict[int, int] = field(default_factory=dict)


class ShareAcks:
    """The records one share consumer holds, across partitions, and their pending acknowledgements."""

    def __init__(self) -> None:
        self._partitions: dict[TopicPartition, _Partition] = {}

    def _partition(self, tp: TopicPartition) -> _Partition:
        state = self._partitions.get(tp)
        if state is None:
            state = self._partitions[tp] = _Partition()
        return state

    # ------------------------------------------------------------------------------ acquisition
    def acquire(self, tp: TopicPartition, offset: int, deadline: float) -> int:
        """Record an acquired record; returns the serial its message carries. A newer acquisition of the same
        offset replaces an older one (whose lock had expired), so the old message can no longer be acked."""
        serial = next(_SERIALS)
        state = self._partition(tp)
        state.held[offset] = _Held(serial, deadline)
        state.pending.pop(offset, None)
        state.settled.pop(offset, None)
        return serial

    def gap(self, tp: TopicPartition, offset: int, deadline: float) -> None:
        """An acquired offset without an application record: acknowledged as a gap with the next request."""
        self._partition(tp).pending[offset] = (GAP, deadline)

    def release(self, tp: TopicPartition, offset: int, deadline: float) -> None:
        """An acquired offset this member gives back unread (its batch was over the response's decompression
        budget): released with the next request, so the group delivers it again."""
        self._partition(tp).pending[offset] = (AcknowledgeType.RELEASE, deadline)

    def delivered(self, tp: TopicPartition, offset: int) -> None:
        """The record was handed to the application (implicit mode accepts it at the next poll)."""
        held = self._partition(tp).held.get(offset)
        if held is not None:
            held.delivered = True

    def is_held(self, tp: TopicPartition, offset: int, serial: int, now: float) -> bool:
        """Whether the delivery ``serial`` is still held with a live lock; an expired one is forgotten."""
        state = self._partitions.get(tp)
        held = None if state is None else state.held.get(offset)
        if state is None or held is None or held.serial != serial:
            return False
        if now >= held.deadline:
            del state.held[offset]
            return False
        return True

    def check(self, tp: TopicPartition, offset: int, serial: int, now: float) -> float:
        """The lock deadline of the delivery ``serial``; AcknowledgementError as ``ack`` when it is not held."""
        state = self._partitions.get(tp)
        held = None if state is None else state.held.get(offset)
        if state is None or held is None or held.serial != serial:
            if state is not None and state.settled.get(offset) == serial:
                raise AlreadyAcknowledgedError(
                    f"{tp.topic}[{tp.partition}]@{offset} was already acknowledged"
                )
            raise NotAcquiredError(
                f"{tp.topic}[{tp.partition}]@{offset} is not held by this consumer (another consumer's "
                "message, or delivered again since)"
            )
        if now >= held.deadline:
            del state.held[offset]
            raise AcquisitionLockExpiredError(
                f"{tp.topic}[{tp.partition}]@{offset}: the acquisition lock expired; the broker delivers it again"
            )
        return held.deadline

    def renewed(self, tp: TopicPartition, offset: int, serial: int, deadline: float) -> None:
        """The broker renewed the lock of the delivery ``serial`` until ``deadline``."""
        state = self._partitions.get(tp)
        held = None if state is None else state.held.get(offset)
        if held is not None and held.serial == serial:
            held.deadline = max(held.deadline, deadline)

    # ------------------------------------------------------------------------------ acknowledging
    def ack(self, tp: TopicPartition, offset: int, serial: int, type_: int, now: float) -> None:
        """Queue an acknowledgement of the delivery ``serial`` of ``tp``/``offset``; AcknowledgementError when
        this consumer does not hold that delivery or its lock expired."""
        deadline = self.check(tp, offset, serial, now)
        state = self._partitions[tp]
        del state.held[offset]
        state.pending[offset] = (type_, deadline)
        state.settled[offset] = serial

    def accept_delivered(self) -> int:
        """Implicit mode: accept every record handed to the application and not acknowledged; how many."""
        count = 0
        for state in self._partitions.values():
            for offset in [o for o, held in state.held.items() if held.delivered]:
                held = state.held.pop(offset)
                state.pending[offset] = (AcknowledgeType.ACCEPT, held.deadline)
                state.settled[offset] = held.serial
                count += 1
        return count

    def release_undelivered(
        self, tps: Iterable[TopicPartition] | None = None
    ) -> list[tuple[TopicPartition, int]]:
        """Give back the records not yet handed to the application (closing, or partitions unassigned)."""
        released: list[tuple[TopicPartition, int]] = []
        for tp in list(self._partitions) if tps is None else list(tps):
            state = self._partitions.get(tp)
            if state is None:
                continue
            for offset in [o for o, held in state.held.items() if not held.delivered]:
                held = state.held.pop(offset)
                state.pending[offset] = (AcknowledgeType.RELEASE, held.deadline)
                released.append((tp, offset))
        return released

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        """Drop everything about partitions no longer fetched from (their locks expire at the broker)."""
        for tp in tps:
            self._partitions.pop(tp, None)

    # ------------------------------------------------------------------------------ sending
    def has_pending(self, tps: Iterable[TopicPartition] | None = None) -> bool:
        """Whether acknowledgements wait to be sent (for ``tps``, or any partition)."""
        if tps is None:
            return any(state.pending for state in self._partitions.values())
        return any((state := self._partitions.get(tp)) is not None and state.pending for tp in tps)

    def pending_partitions(self) -> list[TopicPartition]:
        """The partitions with acknowledgements waiting to be sent."""
        return [tp for tp, state in self._partitions.items() if state.pending]

    def take(
        self, tps: Iterable[TopicPartition], now: float
    ) -> tuple[dict[TopicPartition, dict[int, int]], list[tuple[TopicPartition, int]]]:
        """The pending acknowledgements of ``tps`` to send now (offset -> type per partition), and those left
        out because the record's lock expired meanwhile (sending them could settle a later delivery)."""
        out: dict[TopicPartition, dict[int, int]] = {}
        expired: list[tuple[TopicPartition, int]] = []
        for tp in tps:
            state = self._partitions.get(tp)
            if state is None or not state.pending:
                continue
            acks: dict[int, int] = {}
            for offset, (type_, deadline) in state.pending.items():
                if now >= deadline:
                    expired.append((tp, offset))
                else:
                    acks[offset] = type_
            state.pending.clear()
            if acks:
                out[tp] = acks
        return out, expired

    def answered(self, acks: Mapping[TopicPartition, Mapping[int, int]]) -> None:
        """The broker answered these acknowledgements (either way): forget them."""
        for tp, offsets in acks.items():
            state = self._partitions.get(tp)
            if state is not None:
                for offset in offsets:
                    state.settled.pop(offset, None)

    def held_count(self) -> int:
        """Records held and not acknowledged."""
        return sum(len(state.held) for state in self._partitions.values())


def ack_batches(acks: Mapping[int, int]) -> list[tuple[int, int, list[int]]]:
    """Offsets and their types as acknowledgement batches ``(first, last, types)``: one batch per run of
    consecutive offsets, with a single type when the whole run has one, else one type per offset."""
    batches: list[tuple[int, int, list[int]]] = []
    run: list[int] = []
    first = last = -1
    for offset in sorted(acks):
        if run and offset == last + 1:
            run.append(acks[offset])
            last = offset
            continue
        if run:
            batches.append((first, last, _compact(run)))
        first = last = offset
        run = [acks[offset]]
    if run:
        batches.append((first, last, _compact(run)))
    return batches


def _compact(types: list[int]) -> list[int]:
    return [types[0]] if all(t == types[0] for t in types) else types
