"""Membership in a share group: ShareGroupHeartbeat to the group coordinator (KIP-932).

The broker assigns partitions to share group members; several members may share a partition, so there is
no revocation protocol: the member simply fetches from whatever its latest assignment holds. The member
names itself (a UUID string) and keeps that id for its whole life.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kafkawire import errors
from kafkawire.group.heartbeat_membership import new_member_id
from kafkawire.metadata import TopicPartition
from kafkawire.protocol.messages import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupTopicPartitions,
)
from mqwire.common.errors import (
    MqwireError,
    UnsupportedVersionError,
)
from mqwire.common.policy import Backoff

if TYPE_CHECKING:
    from kafkawire.connection import KafkaConnection
    from kafkawire.session import Session

log = logging.getLogger(__name__)

SHARE_GROUP_HEARTBEAT_KEY = 76
SHARE_FETCH_KEY = 78
SHARE_ACKNOWLEDGE_KEY = 79
LEAVE_EPOCH = -1


class ShareMembership:
    """Joins, heartbeats and leaves; ``assignment`` is the latest set of partitions to fetch from."""

    def __init__(
        self,
        session: Session,
        group: str,
        topics: Sequence[str],
        *,
        rack: str | None,
        on_assignment: Callable[[frozenset[TopicPartition]], None],
    ) -> None:
        self.session = session
        self.group = group
        self.topics = list(topics)
        self.rack = rack
        self.member_id = new_member_id()
        self.epoch = 0
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.failure: BaseException | None = None
        self._on_assignment = on_assignment
        self._interval = 5.0
        self._joining = True
        self._connection: KafkaConnection | None = None

    async def join(self) -> None:
        """The first heartbeat: a broker without share groups fails here, naming what it lacks. While the
        coordinator moves or is still loading (as just after a broker starts), it is found again and asked
        again, for up to the client's request timeout."""
        backoff = self.session.new_backoff()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.session.request_timeout
        while True:
            try:
                await self._beat()
                return
            except errors.COORDINATOR_TROUBLE as exc:
                if loop.time() > deadline:
                    raise
                self._find_coordinator_again(exc)
                await asyncio.sleep(backoff.next_delay())

    async def run(self) -> None:
        """Heartbeat until cancelled; a fatal error is kept in ``failure`` and ends the loop."""
        backoff = Backoff(initial=0.1, maximum=2.0)
        while True:
            # Right after joining the broker may not have assigned anything yet: ask again soon.
            await asyncio.sleep(self._interval if self.assignment else min(self._interval, 1.0))
            try:
                await self._beat()
                backoff.reset()
            except errors.COORDINATOR_TROUBLE as exc:
                self._find_coordinator_again(exc)
                await asyncio.sleep(backoff.next_delay())
            except MqwireError as exc:
                log.error("share group %r: giving up: %s", self.group, exc)
                self.failure = exc
                return

    async def leave(self) -> None:
        """Leave the group (epoch -1): the broker reassigns at once instead of after the session timeout."""
        try:
            if self.epoch > 0:
                await self._request(self._body(LEAVE_EPOCH))
        except MqwireError as exc:
            log.info("share group %r: leaving failed: %s", self.group, exc)
        finally:
            self._drop_connection()

    def _find_coordinator_again(self, trouble: BaseException) -> None:
        log.info("share group %r: coordinator trouble (%s); finding it again", self.group, trouble)
        self._drop_connection()
        self.session.forget_coordinator(self.group)

    def _drop_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _coordinator(self) -> KafkaConnection:
        if self._connection is None or self._connection.closed:
            node = await self.session.coordinator(self.group)
            connection = await self.session.dedicated_connection(node)
            missing = [
                name
                for key, name in (
                    (SHARE_GROUP_HEARTBEAT_KEY, "ShareGroupHeartbeat"),
                    (SHARE_FETCH_KEY, "ShareFetch"),
                    (SHARE_ACKNOWLEDGE_KEY, "ShareAcknowledge"),
                )
                if not connection.offers(key)
            ]
            if missing:
                connection.close()
                raise UnsupportedVersionError(
                    f"share group {self.group!r}: the broker does not offer {', '.join(missing)} (KIP-932 share "
                    "groups need Kafka 4.1 or later with share groups enabled)"
                )
            connection.version_for(SHARE_GROUP_HEARTBEAT_KEY)  # no shared version: UnsupportedVersionError
            self._connection = connection
        return self._connection

    async def _request(self, body: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
        connection = await self._coordinator()
        reply: ShareGroupHeartbeatResponse = await connection.request(body)
        return reply

    def _body(self, epoch: int) -> ShareGroupHeartbeatRequest:
        joining = self._joining
        return ShareGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=epoch,
            rack_id=self.rack if joining else None,
            subscribed_topic_names=self.topics if joining else None,
        )

    async def _beat(self) -> None:
        reply = await self._request(self._body(0 if self._joining else self.epoch))
        if reply.error_code:
            what = f"ShareGroupHeartbeat of share group {self.group!r}"
            if reply.error_code == errors.BrokerUnsupportedVersionError.error_code:
                what += ": the broker does not run share groups (group.share.enable / share.version feature)"
            if reply.error_message:
                what += f": {reply.error_message}"
            error = errors.error_for(reply.error_code, what)
            if isinstance(error, errors.UnknownMemberIdError | errors.FencedMemberEpochError):
                log.info("share group %r: %s; joining again", self.group, error)
                self.epoch = 0
                self._joining = True
                return
            raise error
        self._joining = False
        self.epoch = reply.member_epoch
        if reply.heartbeat_interval_ms > 0:
            self._interval = reply.heartbeat_interval_ms / 1000
        if reply.assignment is not None:
            self.assignment = frozenset(await self._partitions(reply.assignment.topic_partitions))
            log.info("share group %r: epoch %d, %d partitions", self.group, self.epoch, len(self.assignment))
            self._on_assignment(self.assignment)

    async def _partitions(self, assigned: Sequence[ShareGroupTopicPartitions]) -> set[TopicPartition]:
        names = self.session.metadata.topic_names
        if any(item.topic_id not in names for item in assigned):
            await self.session.refresh_metadata(self.topics)
            names = self.session.metadata.topic_names
        result: set[TopicPartition] = set()
        for item in assigned:
            name = names.get(item.topic_id)
            if name is None:
                log.warning(
                    "share group %r: assigned a topic id %s the metadata does not know",
                    self.group,
                    item.topic_id,
                )
                continue
            result.update(TopicPartition(name, p) for p in item.partitions)
        return result
