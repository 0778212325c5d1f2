"""The TubeMQ consumer that picks its own partitions (the reference client's ClientBalanceConsumer).

The master only keeps the consumer in its group's books and lists the partitions of the consumed topics;
the application chooses which partitions to consume, and from which offset, with ``connect_partition``
(or the ``partitions`` option), and gives them up with ``disconnect_partition``. Fetching, acknowledging
and confirming are those of the master-balanced :class:`~tubemqwire.consumer.Consumer`. A group is
balanced one way or the other: the master refuses to mix the two kinds of member in one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mqwire.common.errors import ClosedError, ConfigurationError
from tubemqwire.assignment import Assignment
from tubemqwire.client_balance_membership import ClientBalanceMembership
from tubemqwire.consumer import Consumer
from tubemqwire.errors import error_for_code
from tubemqwire.options import ClientBalanceConsumerConfig, check_partitions
from tubemqwire.protocol.constants import ErrorCode
from tubemqwire.protocol.metadata import PartitionMeta, parse_partition_key
from tubemqwire.session import Session


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Where the group reads in a partition and where the partition ends, as index offsets (the broker
    counts one index entry per message).

    - ``partition_key`` — the partition, ``brokerId:topic:partitionId``.
    - ``position`` — the group's read position, or None where the broker has not said yet.
    - ``end`` — where the partition ends (the broker's maximum offset), or None where it has not said yet.
    - ``caught_up`` — True when the last fetch found nothing more to read: everything written so far was
      delivered.
    """

    partition_key: str
    position: int | None
    end: int | None
    caught_up: bool = False


class ClientBalanceConsumer(Consumer):
    """Consumes the partitions it is told to; ``async with client.client_balance_consumer(...)``.

    Made by :meth:`tubemqwire.Client.client_balance_consumer`, which describes the options (those of
    :meth:`tubemqwire.Client.consumer`, and ``partitions``, ``source_count`` and ``node_id``).
    """

    def __init__(self, session: Session, topics: str | Sequence[str], config: ClientBalanceConsumerConfig) -> None:
        super().__init__(session, topics, config)
        self._initial = dict(config.partitions)
        for key in self._initial:
            if parse_partition_key(key)[1] not in self.topics:
                raise ConfigurationError(f"option partitions: {key} is not a partition of the consumed topics")
        source_count, node_id = config.source_count, config.node_id
        self.source_count = source_count if source_count > 0 else -1
        self.node_id = node_id if source_count > 0 else -1
        self._balance: ClientBalanceMembership | None = None

    async def _join(self, assignment: Assignment) -> None:
        membership = ClientBalanceMembership(
            self._session.master,
            self._member(assignment),
            held=lambda: [fetcher.partition for fetcher in assignment.fetchers.values()],
            on_failure=self._fail,
            source_count=self.source_count,
            node_id=self.node_id,
        )
        self._membership = self._balance = membership
        await membership.start()
        # A failure here is cleaned up by the start that called us.
        for key, offset in self._initial.items():
            await self._connect(key, offset)

    def _membership_or_fail(self) -> ClientBalanceMembership:
        self._affinity.check()
        self._lifecycle.check_open()
        if self._balance is None or self._assignment is None:
            raise ClosedError("consumer is not started: use 'async with client.client_balance_consumer(...)'")
        return self._balance

    async def partition_metadata(self) -> dict[str, bool]:
        """Every partition of the consumed topics, by key, and whether it may be consumed now."""
        membership = self._membership_or_fail()
        await membership.refresh()
        return {key: meta.subscribable for key, meta in sorted(membership.partitions().items())}

    async def _meta(self, key: str) -> PartitionMeta:
        membership = self._membership_or_fail()
        meta = membership.partitions().get(key)
        if meta is None:
            await membership.refresh()
            meta = membership.partitions().get(key)
        if meta is None:
            raise error_for_code(ErrorCode.NOT_FOUND, f"partition {key} is not among the consumed topics' partitions")
        return meta

    async def connect_partition(self, partition_key: str, offset: int | None = None) -> PartitionOffsets:
        """Claim a partition, reading from ``offset`` (kept within the partition by the broker) or, when
        None, from the group's stored position (a group without one starts as ``start`` says).

        A partition held by another member raises PartitionOccupiedError; one not open for consuming,
        PartitionUnsubscribableError. A partition this consumer holds already is left as it is (``offset``
        does not move it: use ``seek``).
        """
        self._started_assignment()
        return await self._connect(partition_key, offset)

    async def _connect(self, partition_key: str, offset: int | None) -> PartitionOffsets:
        checked = check_partitions("partitions", {partition_key: offset})
        meta = await self._meta(partition_key)
        if not meta.subscribable:
            raise error_for_code(
                ErrorCode.PARTITION_UNSUBSCRIBABLE, f"partition {partition_key} is not open for consuming"
            )
        assert self._assignment is not None
        fetcher = await self._assignment.connect(meta.partition, checked[partition_key])
        self._assignment_changed()
        return PartitionOffsets(partition_key, fetcher.position, fetcher.end)

    async def disconnect_partition(self, partition_key: str, *, confirm_wait: float | None = None) -> None:
        """Stop consuming a partition and release it. A batch delivered but not yet acknowledged gets
        ``confirm_wait`` seconds (default ``rebalance_confirm_wait_ms``) to be, then goes back."""
        self._membership_or_fail()
        assert self._assignment is not None
        fetcher = self._assignment.fetchers.get(partition_key)
        if fetcher is not None:
            await self._assignment.release([fetcher.partition], wait=confirm_wait)

    def offsets(self) -> dict[str, PartitionOffsets]:
        """The read position and end of every partition held, as the broker last told them."""
        if self._assignment is None:
            return {}
        return {
            key: PartitionOffsets(key, fetcher.position, fetcher.end, fetcher.caught_up)
            for key, fetcher in sorted(self._assignment.fetchers.items())
        }
