"""Kafka transactions for one producer: the state machine and the requests to the transaction coordinator.

    ready --begin--> in transaction --commit / abort--> ending --(EndTxn done)--> ready
                     in transaction --failed batch, TRANSACTION_ABORTABLE--> abortable --abort--> ready
                                 any fencing error --> failed (the producer can only be closed)

Two protocols, chosen each time the producer gets its producer id (a fresh epoch, so switching is safe):

* transaction version 1 (Kafka 3.x, or a 4.x cluster whose ``transaction.version`` feature is below 2): a
  partition joins the transaction (AddPartitionsToTxn) before its first batch is sent: the sender asks
  ``partition_ready`` and holds the batch back until the coordinator has answered; offsets join with
  AddOffsetsToTxn. Produce stays at v11 and below, EndTxn at v4, TxnOffsetCommit at v4.
* transaction version 2 (KIP-890 part 2; the coordinator's broker finalizes ``transaction.version`` >= 2 and
  offers EndTxn v5): partitions join implicitly through Produce v12+, offsets through TxnOffsetCommit v5,
  and the coordinator bumps the epoch at every EndTxn (v5), which returns the new one for what follows.

Ending flushes every buffered record first, so nothing of the transaction is still on its way when EndTxn is
sent. A batch that fails inside a transaction, or a TRANSACTION_ABORTABLE answer, makes the transaction
abortable: commit and send raise TransactionAbortableError (its cause attached), abort ends the transaction
and the producer goes on.
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
END_TXN_KEY = 26
GROUP_COORDINATOR = 0
TRANSACTION_VERSION_FEATURE = "transaction.version"
# The last versions of transaction version 1 (Produce's is the sender's); the next ones mean version 2.
END_TXN_V1_MAX, TXN_OFFSET_COMMIT_V1_MAX = 4, 4
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
    reset_needed: bool

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
        self._offsets_added = False  # offsets make a transaction worth ending even without records
        # 1 or 2, set from the transaction coordinator's features with every producer id (settle_version).
        self.version = 1
        # Set when the running transaction can only be aborted (a failed batch, TRANSACTION_ABORTABLE).
        self.abortable: MqwireError | None = None
        self._bump_after_abort = False  # v1: sequences of a failed batch's partition restart with a new epoch

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
        """Records of a transactional producer go only inside a transaction that can still commit."""
        if self.state != IN_TRANSACTION or self.error is not None:
            self._check(IN_TRANSACTION)
        if self.abortable is not None:
            raise self.abortable

    def fail(self, error: MqwireError) -> None:
        self.error = error
        self.state = FAILED

    def make_abortable(self, error: MqwireError, *, bump_epoch: bool = False) -> bool:
        """The running transaction cannot commit any more: ``error`` is raised until it is aborted.

        False when no transaction is running (or the producer already failed).
        """
        if self.error is not None or self.state not in (IN_TRANSACTION, ENDING):
            return False
        if self.abortable is None:
            log.debug("transaction %r can only be aborted: %s", self.transactional_id, error)
            if not isinstance(error, errors.TransactionAbortableError):
                # One type to catch whatever the cause: the cause stays attached.
                cause = error
                error = errors.TransactionAbortableError(f"abort the transaction: {cause}")
                error.__cause__ = cause
            self.abortable = error
        self._bump_after_abort = self._bump_after_abort or bump_epoch
        self._wake_sender()  # its queued batches fail with the error
        return True

    def batch_failed(self, error: BaseException, *, numbered: bool) -> bool:
        """A batch of the transaction was not written: committing would lose it. False outside a transaction."""
        return isinstance(error, MqwireError) and self.make_abortable(error, bump_epoch=numbered)

    # ---------------------------------------------------------------------------------- version
    @property
    def v2(self) -> bool:
        """Whether transaction version 2 (KIP-890 part 2) is used."""
        return self.version >= 2

    async def settle_version(self) -> None:
        """Choose the protocol from the transaction coordinator's broker; called with every new producer id."""
        if self.state != READY and self.added:
            return  # a producer id renewed inside a transaction keeps the protocol its partitions joined with
        node = await self.session.coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
        connection = await self.session.connection_to(node)
        self.version = transaction_version(connection.finalized_features, connection.broker_versions)
        log.debug("transaction %r uses transaction version %d", self.transactional_id, self.version)

    # ---------------------------------------------------------------------------------- partitions
    def partition_ready(self, tp: TopicPartition) -> bool:
        """True once ``tp`` is part of the transaction; otherwise asks the coordinator and says False.

        Under transaction version 2 the Produce request itself adds the partition: nothing to ask.
        """
        if tp in self.added:
            return True
        if self.v2:
            self.added.add(tp)
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
            except errors.TransactionAbortableError as exc:
                self._pending.clear()
                self.make_abortable(exc)
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
        if commit and self.abortable is not None:
            raise self.abortable
        self.state = ENDING
        try:
            await flush()
            if self.error is not None:
                raise self.error
            if commit and self.abortable is not None:
                raise self.abortable  # a batch failed while the records were flushed
            epoch = (self.identity.producer_id, self.identity.producer_epoch)
            if self.added or not commit or self._offsets_added:
                await self._retry(lambda: self._end_txn(commit))
        except MqwireError as exc:
            if isinstance(exc, errors.TransactionAbortableError) or exc is self.abortable:
                self.make_abortable(exc)
                self.state = IN_TRANSACTION  # abort_transaction() ends it and the producer goes on
            elif isinstance(exc, FENCING) or not exc.retriable:
                self.fail(exc)
            else:
                self.state = IN_TRANSACTION  # the application may try to end it again
            raise
        if self._bump_after_abort and epoch == (self.identity.producer_id, self.identity.producer_epoch):
            # EndTxn kept the epoch (version 1): a new one renumbers the partitions whose batch was lost.
            self.identity.reset_needed = True
            self._wake_sender()
        self.added.clear()
        self._offsets_added = False
        self.abortable = None
        self._bump_after_abort = False
        self.state = READY

    async def _end_txn(self, commit: bool) -> None:
        body = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch,
            committed=commit,
        )
        at_most = None if self.v2 else END_TXN_V1_MAX
        response = await self._to_coordinator(body, at_most=at_most, v2_from=5)
        if response.error_code:
            raise errors.error_for(
                response.error_code, f"EndTxn ({'commit' if commit else 'abort'}, transaction version {self.version})"
            )
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
        if self.abortable is not None:
            raise self.abortable
        member = _group(group)
        try:
            if not self.v2:  # version 2: TxnOffsetCommit v5 adds the group's offsets to the transaction itself
                await self._retry(lambda: self._add_offsets(member.group_id))
            self._offsets_added = True
            await self._retry(lambda: self._commit_offsets(offsets, member))
        except errors.TransactionAbortableError as exc:
            self.make_abortable(exc)
            raise

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
        response = await self._to_group_coordinator(member.group_id, body)
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code:
                    where = f"{topic.name}-{partition.partition_index}"
                    raise errors.error_for(
                        partition.error_code, f"TxnOffsetCommit {where} (transaction version {self.version})"
                    )

    # ---------------------------------------------------------------------------------- plumbing
    async def _to_coordinator(self, body: Any, *, at_most: int | None = None, v2_from: int | None = None) -> Any:
        node = await self.session.coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
        connection = await self.session.connection_to(node)
        version = connection.version_for(body.API_KEY, at_most=at_most)
        self._check_v2_version(body, version, v2_from)
        try:
            return await connection.request(body, version=version)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.session.forget_coordinator(self.transactional_id, TRANSACTION_COORDINATOR)
            self.session.discard(connection, exc)
            raise

    async def _to_group_coordinator(self, group_id: str, body: Any) -> Any:
        node = await self.session.coordinator(group_id, GROUP_COORDINATOR)
        try:
            connection = await self.session.connection_to(node)
        except ConnectError:
            self.session.forget_coordinator(group_id, GROUP_COORDINATOR)
            raise
        version = connection.version_for(body.API_KEY, at_most=None if self.v2 else TXN_OFFSET_COMMIT_V1_MAX)
        self._check_v2_version(body, version, 5)
        try:
            return await connection.request(body, version=version)
        except (ConnectionLostError, RequestTimeoutError) as exc:
            self.session.forget_coordinator(group_id, GROUP_COORDINATOR)
            self.session.discard(connection, exc)
            raise

    def _check_v2_version(self, body: Any, version: int, v2_from: int | None) -> None:
        """Under version 2 a request below its version-2 form would join nothing: refuse to send it."""
        if self.v2 and v2_from is not None and version < v2_from:
            raise errors.UnsupportedVersionError(
                f"{type(body).__name__.removesuffix('Request')} v{v2_from}+ is needed for transaction version 2 "
                f"and the broker offers v{version} at most"
            )

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


def transaction_version(features: Mapping[str, int], broker_versions: Mapping[int, tuple[int, int]]) -> int:
    """2 when the broker finalizes ``transaction.version`` >= 2 and offers EndTxn v5 (KIP-890 part 2), else 1."""
    end_txn = broker_versions.get(END_TXN_KEY)
    if features.get(TRANSACTION_VERSION_FEATURE, 0) >= 2 and end_txn is not None and end_txn[1] >= 5:
        return 2
    return 1


def _group(group: str | GroupMetadataLike) -> GroupMetadataLike:
    if isinstance(group, str):
        from kafkawire.group.metadata import GroupMetadata

        return GroupMetadata(group)
    for name in ("group_id", "generation_id", "member_id", "group_instance_id"):
        if not hasattr(group, name):
            raise TypeError("group must be a group id or consumer.group_metadata()")
    return group
