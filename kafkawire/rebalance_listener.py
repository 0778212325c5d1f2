"""aiokafka's ``ConsumerRebalanceListener``, and the calls a consumer makes to one in aiokafka's order.

A listener given to ``client.consumer(..., listener=)`` or ``consumer.subscribe(..., listener=)`` hears each
rebalance of the consumer's group as aiokafka's does: ``on_partitions_revoked`` with the partitions given up
(empty on the first join), then ``on_partitions_assigned`` with the whole assignment. A method that raises is
logged and the rebalance goes on, as in aiokafka.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Set

from kafkawire.metadata import TopicPartition

__all__ = ["ConsumerRebalanceListener"]

log = logging.getLogger(__name__)


class ConsumerRebalanceListener:
    """Subclass it and override what matters; every method is awaited on the consumer's event loop.

    The methods run while the group rebalances (classic JoinGroup/SyncGroup, or KIP-848 heartbeats), and the
    rebalance waits for them. For each new assignment the listener sees ``on_partitions_revoked`` (or
    ``on_partitions_lost``) first, with the partitions given up (an empty set when there are none, as on the
    first join), then ``on_partitions_assigned`` with every partition the consumer now holds. With the classic
    protocol's eager assignors every member has given up all its partitions before any member is assigned,
    so state saved in ``on_partitions_revoked`` is there for the member that loads it in
    ``on_partitions_assigned``. As in aiokafka the listener is not called when the consumer closes, and an
    exception raised by a method is logged and does not stop the rebalance. Methods written as plain
    functions (aiokafka accepts them too) are called without awaiting.
    """

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Partitions are given up: the consumer no longer hands out their records, and with auto-commit their
        positions were committed just before. A manual commit (``await consumer.commit()``) made here still
        counts, so that the next owner starts after what was processed. Default: nothing."""

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """The rebalance is over: ``assigned`` is every partition the consumer holds now (kept ones included),
        each to be read from the group's committed offset (a ``seek`` here changes that). Default: nothing."""

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """The partitions are already another member's (this one was fenced, or made no poll for
        ``max_poll_interval_ms``): nothing of them can be committed any more. Default: calls
        ``on_partitions_revoked``."""
        await self.on_partitions_revoked(lost)


class ListenerCalls:
    """The calls of one listener for one consumer: each method logged instead of raising, and an empty
    ``on_partitions_revoked`` before an assignment that no revoke or loss preceded."""

    def __init__(self, listener: ConsumerRebalanceListener, group: str | None) -> None:
        self.listener = listener
        self._group = group
        self._given_up = False  # a revoke or a loss was told since the last assignment

    async def revoked(self, partitions: Set[TopicPartition]) -> None:
        """Tell the listener that ``partitions`` are given up."""
        self._given_up = True
        await self._call("on_partitions_revoked", partitions)

    async def lost(self, partitions: Set[TopicPartition]) -> None:
        """Tell the listener that ``partitions`` were lost."""
        self._given_up = True
        await self._call("on_partitions_lost", partitions)

    async def assigned(self, assignment: Set[TopicPartition]) -> None:
        """Tell the listener the whole new ``assignment``, after an empty revoke when none came before it."""
        if not self._given_up:
            await self._call("on_partitions_revoked", set())
        self._given_up = False
        await self._call("on_partitions_assigned", assignment)

    async def _call(self, name: str, partitions: Set[TopicPartition]) -> None:
        try:
            result = getattr(self.listener, name)(set(partitions))
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("group %r: rebalance listener %r failed in %s", self._group, self.listener, name)
