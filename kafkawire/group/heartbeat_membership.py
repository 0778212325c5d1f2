"""Membership in a consumer group on the KIP-848 protocol (``group_protocol="consumer"``, Kafka 4.x).

One request does it all: ConsumerGroupHeartbeat carries the subscription on joining, and every answer
may carry the member's new target assignment, computed by the broker. Rebalances are incremental: the
member gives up only the partitions it lost, takes the new ones, and acknowledges by sending what it now
owns with its next heartbeat (sent at once rather than after the interval).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkawire import errors
from kafkawire.group.metadata import GroupMetadata
from kafkawire.group.poll_watch import PollWatch
from kafkawire.metadata import TopicPartition
from kafkawire.options import PartitionsCallback
from kafkawire.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupTopicPartitions
from mqwire.common.errors import (
    ConnectError,
    ConnectionLostError,
    MqwireError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.policy import Backoff

if TYPE_CHECKING:
    from kafkawire.connection import KafkaConnection
    from kafkawire.session import Session

log = logging.getLogger(__name__)

CONSUMER_GROUP_HEARTBEAT_KEY = 68
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
CLIENT_MEMBER_ID_MIN_VERSION = 1  # from v1 the member names itself


REGEX_MIN_VERSION = 1


def new_member_id() -> str:
    """A Kafka-style UUID string (URL-safe base64 of 16 random bytes, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class HeartbeatMembership:
    def __init__(
        self,
        session: Session,
        group: str,
        topics: Sequence[str],
        *,
        remote_assignor: str | None,
        rebalance_timeout_ms: int,
        group_instance_id: str | None,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lose: PartitionsCallback,
        pattern: str | None = None,
        on_fail: Callable[[BaseException], None] | None = None,
        poll_watch: PollWatch | None = None,
    ) -> None:
        self.poll_watch = poll_watch
        # A regex subscription is matched by the broker (ConsumerGroupHeartbeat v1+, SubscribedTopicRegex).
        self.pattern = pattern
        self._on_fail = on_fail
        self.session = session
        self.group = group
        self.topics = list(topics)
        self.remote_assignor = remote_assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.group_instance_id = group_instance_id
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._on_lose = on_lose
        self.member_id = ""
        self.epoch = 0
        self.assignment: set[TopicPartition] = set()
        self.rebalances = 0
        self.failure: BaseException | None = None
        self._interval = 3.0
        self._joining = True  # epoch 0: the first heartbeat, or after being fenced
        # Send every field (subscription, rebalance timeout, owned partitions): when joining, and after any
        # failed heartbeat or assignment, because only a full request makes the coordinator send the whole
        # assignment again (a lost or unapplied one would otherwise never come back).
        self._full = True
        self._unresolved = False  # a topic id of the last assignment the metadata did not know
        self._report_owned = True
        self._connection: KafkaConnection | None = None
        self._tasks = OwnedTasks(f"member of group {group!r}")
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def metadata(self) -> GroupMetadata:
        return GroupMetadata(self.group, self.epoch, self.member_id, self.group_instance_id)

    def start(self) -> None:
        self._task = self._tasks.spawn(self._run(), name="heartbeats")

    async def close(self) -> None:
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            if self.assignment:
                revoked, self.assignment = self.assignment, set()
                await self._on_revoke(revoked)
            if self.member_id and self.epoch > 0:
                epoch = STATIC_LEAVE_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
                await self._request(self._body(epoch))
        except MqwireError as exc:
            log.info("group %r: leaving failed: %s", self.group, exc)
        finally:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # ---------------------------------------------------------------------------------- the loop
    async def _run(self) -> None:
        backoff = Backoff(initial=0.1, maximum=2.0)
        while not self._closing:
            try:
                if self.poll_watch is not None and self.poll_watch.overdue():
                    await self._leave_until_polled(self.poll_watch)
                    continue
                changed = await self._beat()
                backoff.reset()
                if not changed:
                    await asyncio.sleep(self._interval)
            except errors.COORDINATOR_TROUBLE as exc:
                log.info("group %r: coordinator trouble (%s); finding it again", self.group, exc)
                self._full = True
                self.session.forget_coordinator(self.group)
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None
                await asyncio.sleep(backoff.next_delay())
            except MqwireError as exc:
                log.error("group %r: giving up: %s", self.group, exc)
                self.failure = exc
                if self._on_fail is not None:
                    self._on_fail(exc)
                return

    async def _leave_until_polled(self, watch: PollWatch) -> None:
        """The application stopped polling: the partitions are lost, the member leaves until the next poll."""
        log.warning(
            "group %r: no poll for more than max_poll_interval_ms (%.0f ms); leaving the group until the next poll",
            self.group,
            watch.interval * 1000,
        )
        watch.mark_left()
        lost, self.assignment = self.assignment, set()
        if lost:
            await self._on_lose(lost)
        if self.member_id and self.epoch > 0:
            epoch = STATIC_LEAVE_EPOCH if self.group_instance_id is not None else LEAVE_EPOCH
            try:
                await self._request(self._body(epoch))
            except (ConnectError, ConnectionLostError, RequestTimeoutError, errors.KafkaError) as exc:
                log.info("group %r: leaving failed (%s); the session timeout removes the member", self.group, exc)
        self.epoch = 0
        self._joining = True
        await watch.wait_resumed()

    async def _coordinator(self) -> KafkaConnection:
        if self._connection is None or self._connection.closed:
            node = await self.session.coordinator(self.group)
            self._connection = await self.session.dedicated_connection(node)
            if not self.member_id and self._connection.version_for(CONSUMER_GROUP_HEARTBEAT_KEY) >= (
                CLIENT_MEMBER_ID_MIN_VERSION
            ):
                self.member_id = new_member_id()
        return self._connection

    async def _request(self, body: Any) -> Any:
        connection = await self._coordinator()
        return await connection.request(body)

    def _body(self, epoch: int) -> ConsumerGroupHeartbeatRequest:
        joining = self._joining or self._full
        owned: list[ConsumerGroupTopicPartitions] | None = None
        if joining or self._report_owned:
            owned = []
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(self.assignment):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            for topic, partitions in by_topic.items():
                topic_id = self.session.metadata.topic_id(topic)
                if topic_id is not None:
                    owned.append(ConsumerGroupTopicPartitions(topic_id=topic_id, partitions=partitions))
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.group_instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
            subscribed_topic_names=self.topics if joining and self.pattern is None else None,
            subscribed_topic_regex=self.pattern if joining else None,
            server_assignor=self.remote_assignor if joining else None,
            topic_partitions=owned,
        )

    async def _beat(self) -> bool:
        """One heartbeat; True when the assignment changed (the next one then goes at once)."""
        connection = await self._coordinator()  # names the member before the body is built
        if self.pattern is not None and connection.version_for(CONSUMER_GROUP_HEARTBEAT_KEY) < REGEX_MIN_VERSION:
            raise UnsupportedVersionError(
                "a pattern subscription with group_protocol='consumer' needs ConsumerGroupHeartbeat v1 "
                "(SubscribedTopicRegex); this broker offers only v0: use group_protocol='classic'"
            )
        reply = await self._request(self._body(0 if self._joining else self.epoch))
        self._report_owned = False
        if reply.error_code:
            what = f"ConsumerGroupHeartbeat of group {self.group!r}"
            if reply.error_code == errors.BrokerUnsupportedVersionError.error_code:
                # Kafka 3.x answers so when the broker runs without the KIP-848 group coordinator.
                what += ": the broker does not run the consumer group protocol; use group_protocol='classic'"
            if reply.error_message:
                what += f": {reply.error_message}"
            error = errors.error_for(reply.error_code, what)
            if isinstance(error, errors.UnknownMemberIdError | errors.FencedMemberEpochError):
                # Fenced: the partitions are already someone else's; join again from scratch.
                lost, self.assignment = self.assignment, set()
                if lost:
                    await self._on_lose(lost)
                self.epoch = 0
                self._joining = self._full = True
                log.info("group %r: %s; joining again", self.group, error)
                return True
            raise error
        self._joining = self._full = False
        if reply.member_id:
            self.member_id = reply.member_id
        self.epoch = reply.member_epoch
        if reply.heartbeat_interval_ms > 0:
            self._interval = reply.heartbeat_interval_ms / 1000
        if reply.assignment is None:
            return False
        # Until this assignment is applied, a failure (the exception reaches _run) asks for it again.
        self._full = True
        target = await self._partitions(reply.assignment.topic_partitions)
        revoked = self.assignment - target
        added = target - self.assignment
        if revoked:
            self.assignment -= revoked
            await self._on_revoke(revoked)
        if added or revoked:
            # Called after a revoke too, with nothing added, to say the rebalance is over (as the classic member
            # does). Owned only once its starting offsets are known: a failed committed-offset fetch leaves it out.
            await self._on_assign(added)
            self.assignment |= added
        self._full = self._unresolved
        self.rebalances += 1
        self._report_owned = True
        log.info("group %r: epoch %d, %d partitions", self.group, self.epoch, len(self.assignment))
        return True

    async def _partitions(self, assigned: Sequence[ConsumerGroupTopicPartitions]) -> set[TopicPartition]:
        self._unresolved = False
        names = self.session.metadata.topic_names
        if any(item.topic_id not in names for item in assigned):
            await self.session.refresh_metadata(None if self.pattern is not None else self.topics)
            names = self.session.metadata.topic_names
        result: set[TopicPartition] = set()
        for item in assigned:
            name = names.get(item.topic_id)
            if name is None:
                # Not owned: the next full heartbeat brings the assignment again, by then with the topic known.
                log.warning("group %r: assigned a topic id %s the metadata does not know", self.group, item.topic_id)
                self._unresolved = True
                continue
            result.update(TopicPartition(name, p) for p in item.partitions)
        return result
