"""Kafka transactions for one producer: the state machine and the requests to the transaction coordinator.

    ready --begin--> in transaction --commit / abort--> ending --(EndTxn done)--> ready
                                 any fencing error --> failed (the producer can only be closed)

A partition joins the transaction (AddPartitionsToTxn) before its first batch is sent: the sender asks
``partition_ready`` and holds the batch back until the coordinator has answered. Ending flushes every
buffered record first, so nothing of the transaction is still on its way when EndTxn is sent. Brokers
with transaction version 2 (KIP-890) bump the producer epoch when a transaction ends; the new epoch comes
back in EndTxn and is used from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafkawire import errors
from kafkawire.metadata import TopicPartition
from kafkawire.offsets import OffsetAndMetadata
from kafkawire.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    EndTxnRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from mqwire.common.errors import ConnectError, ConnectionLostError, MqwireError, RequestTimeoutError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.policy import Backoff

if TYPE_CHECKING:
    from kafkawire.session import Session

log = logging.getLogger(__name__)

TRANSACTION_COORDINATOR = 1
ADD_PARTITIONS_KEY = 24
ADD_PARTITIONS_CLIENT_MAX = 3  # v4+ is for brokers verifying on a producer's behalf
FENCING = (errors.ProducerFencedError, errors.InvalidProducerEpochError, errors.TransactionalIdAuthorizationFailedError)
READY, IN_TRANSACTION, ENDING, FAILED = "ready", "in transaction", "ending", "failed"


class GroupMetadataLike(Protocol):
    """What ``consumer.group_metadata()`` returns (any object with these attributes will do)."""

    @property
    def group_id(self) -> str:
        """The consumer group's id."""
        ...

    @property
    def generation_id(self) -> int:
        """The group generation the member belongs to (-1 outside a group rebalance)."""
        ...

    @property
    def member_id(self) -> str:
        """The member's id in the group (empty outside a group rebalance)."""
        ...

    @property
    def group_instance_id(self) -> str | None:
        """The static member's instance id, or None."""
        ...


class ProducerIdentity(Protocol):
    producer_id: int
    producer_epoch: int

    def restart(self, producer_id: int, producer_epoch: int) -> None: ...


class TransactionManager:
    def __init__(
        self,
        session: Session,
        transactional_id: str,
        timeout_ms: int,
        identity: ProducerIdentity,
        wake_sender: Callable[[], None],
    ) -> None:
        self.session = session
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.identity = identity
        self._wake_sender = wake_sender
        self.state = READY
        self.error: MqwireError | None = None
        self.added: set[TopicPartition] = set()
        self._pending: set[TopicPartition] = set()
        self._tasks = OwnedTasks("kafka transaction")
        self._adding: asyncio.Task[None] | None = None
        self._offsets_added = False  # AddOffsetsToTxn makes a transaction worth ending even without records

    async def close(self) -> None:
        """Stop adding partitions (the producer is closing)."""
        if self._adding is not None and not self._adding.done():
            self._adding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._adding

    # ---------------------------------------------------------------------------------- states
    def _check(self, *allowed: str) -> None:
        if self.error is not None:
            raise self.error
        if self.state not in allowed:
            raise errors.InvalidTxnStateError(f"transaction is {self.state}; this needs {' or '.join(allowed)}")

    def begin(self) -> None:
        self._check(READY)
        self.state = IN_TRANSACTION

    def check_send(self) -> None:
        """Records of a transactional producer go only inside a transaction."""
        if self.state != IN_TRANSACTION or self.error is not None:
            self._check(IN_TRANSACTION)

    def fail(self, error: MqwireError) -> None:
        self.error = error
        self.state = FAILED

    # ---------------------------------------------------------------------------------- partitions
    def partition_ready(self, tp: TopicPartition) -> bool:
        """True once ``tp`` is part of the transaction; otherwise asks the coordinator and says False."""
        if tp in self.added:
            return True
        if self.error is None and tp not in self._pending:
            self._pending.add(tp)
            if self._adding is None or self._adding.done():
                self._adding = self._tasks.spawn(self._add_pending(), name="add partitions")
        return False

    async def _add_pending(self) -> None:
        backoff = Backoff(initial=0.02, maximum=1.0)
        while self._pending and self.error is None:
            batch = sorted(self._pending)
            try:
                await self._add(batch)
                self.added.update(batch)
                self._pending.difference_update(batch)
                backoff.reset()
                self._wake_sender()
            except errors.ConcurrentTransactionsError:
                await asyncio.sleep(backoff.next_delay())  # the previous transaction is still ending
            except errors.COORDINATOR_TROUBLE as exc:
                log.debug("AddPartitionsToTxn failed (%s); retrying", exc)
                self.session.forget_coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
                await asyncio.sleep(backoff.next_delay())
            except MqwireError as exc:
                self.fail(exc)
                self._wake_sender()

    async def _add(self, partitions: list[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.identity.producer_id,
            v3_and_below_producer_epoch=self.identity.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in by_topic.items()],
        )
        response = await self._to_coordinator(body, at_most=ADD_PARTITIONS_CLIENT_MAX)
        for topic in response.results_by_topic_v3_and_below:
            for result in topic.results_by_partition:
                if result.partition_error_code:
                    raise errors.error_for(
                        result.partition_error_code, f"AddPartitionsToTxn {topic.name}-{result.partition_index}"
                    )

    # ---------------------------------------------------------------------------------- ending
    async def end(self, commit: bool, flush: Callable[[], Awaitable[None]]) -> None:
        self._check(IN_TRANSACTION)
        self.state = ENDING
        try:
            await flush()
            if self.error is not None:
                raise self.error
            if self.added or not commit or self._offsets_added:
                await self._retry(lambda: self._end_txn(commit))
        except MqwireError as exc:
            if isinstance(exc, FENCING) or not exc.retriable:
                self.fail(exc)
            else:
                self.state = IN_TRANSACTION  # the application may try to end it again
            raise
        self.added.clear()
        self._offsets_added = False
        self.state = READY

    async def _end_txn(self, commit: bool) -> None:
        body = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch,
            committed=commit,
        )
        response = await self._to_coordinator(body)
        if response.error_code:
            raise errors.error_for(response.error_code, "EndTxn")
        if response.producer_id >= 0 and response.producer_epoch >= 0 and (
            response.producer_epoch != self.identity.producer_epoch
        ):
            # Transaction version 2: every transaction ends with a new epoch; sequences start again.
            self.identity.restart(response.producer_id, response.producer_epoch)

    # ---------------------------------------------------------------------------------- offsets
    async def send_offsets(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], group: str | GroupMetadataLike
    ) -> None:
        """Commit consumer offsets as part of the transaction (consume-transform-produce)."""
        self._check(IN_TRANSACTION)
        member = _group(group)
        await self._retry(lambda: self._add_offsets(member.group_id))
        self._offsets_added = True
        await self._retry(lambda: self._commit_offsets(offsets, member))

    async def _add_offsets(self, group_id: str) -> None:
        body = AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch,
            group_id=group_id,
        )
        response = await self._to_coordinator(body)
        if response.error_code:
            raise errors.error_for(response.error_code, "AddOffsetsToTxn")

    async def _commit_offsets(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], member: GroupMetadataLike
    ) -> None:
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, value in offsets.items():
            entry = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            by_topic.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=entry.offset,
                    committed_leader_epoch=-1 if entry.leader_epoch is None else entry.leader_epoch,
                    committed_metadata=entry.metadata,
                )
            )
        body = TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=member.group_id,
            producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch,
            generation_id=member.generation_id,
            member_id=member.member_id,
            group_instance_id=member.group_instance_id,
            topics=[TxnOffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()],
        )
        response = await self.session.request_coordinator(member.group_id, body)
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code:
                    raise errors.error_for(partition.error_code, f"TxnOffsetCommit {topic.name}")

    # ---------------------------------------------------------------------------------- plumbing
    async def _to_coordinator(self, body: Any, *, at_most: int | None = None) -> Any:
        node = await self.session.coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
        connection = await self.session.connection_to(node)
        version = connection.version_for(body.API_KEY, at_most=at_most)
        try:
            return await connection.request(body, version=version)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.session.forget_coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
            self.session.discard(connection, exc)
            raise

    async def _retry(self, attempt: Callable[[], Awaitable[None]]) -> None:
        """Retry what a retry can fix (the previous transaction still ending, a moved coordinator)."""
        backoff = Backoff(initial=0.02, maximum=1.0)
        deadline = asyncio.get_running_loop().time() + self.timeout_ms / 1000
        while True:
            try:
                await attempt()
                return
            except MqwireError as exc:
                retriable = isinstance(exc, errors.ConcurrentTransactionsError) or exc.retriable
                if not retriable or asyncio.get_running_loop().time() > deadline:
                    raise
                if getattr(exc, "refresh_coordinator", False) or isinstance(exc, ConnectError):
                    self.session.forget_coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
                await asyncio.sleep(backoff.next_delay())


def _group(group: str | GroupMetadataLike) -> GroupMetadataLike:
    if isinstance(group, str):
        from kafkawire.group.metadata import GroupMetadata

        return GroupMetadata(group)
    for name in ("group_id", "generation_id", "member_id", "group_instance_id"):
        if not hasattr(group, name):
            raise TypeError("group must be a group id or consumer.group_metadata()")
    return group
