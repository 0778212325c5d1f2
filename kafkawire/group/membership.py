"""Membership in a consumer group on the classic protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

The member keeps a connection of its own to the group coordinator: a broker answers one request per
connection at a time, and a JoinGroup may wait there for the whole rebalance, which must not hold up
fetches to the same broker. Rebalances are eager: before joining again the member gives up all its
partitions (``on_revoke``), and after SyncGroup it takes its new ones (``on_assign``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkawire import errors
from kafkawire.group.assignors import Assignor
from kafkawire.group.metadata import GroupMetadata
from kafkawire.group.poll_watch import PollWatch
from kafkawire.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkawire.metadata import TopicPartition
from kafkawire.options import PartitionsCallback
from kafkawire.protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from mqwire.common.errors import ConnectError, ConnectionLostError, MqwireError, RequestTimeoutError
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.policy import Backoff

if TYPE_CHECKING:
    from kafkawire.connection import KafkaConnection
    from kafkawire.session import Session

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"
LEAVE_GROUP_MEMBERS_MIN = 3  # LeaveGroup v3+ names members in a list


class Rejoin(Exception):
    """The group is rebalancing, or forgot this member: join again."""


class GroupMembership:
    def __init__(
        self,
        session: Session,
        group: str,
        topics: Sequence[str],
        assignors: Sequence[Assignor],
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        group_instance_id: str | None,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lose: PartitionsCallback,
        on_fail: Callable[[BaseException], None] | None = None,
        poll_watch: PollWatch | None = None,
    ) -> None:
        self.session = session
        self._on_fail = on_fail
        self._topics_changed = False
        self.group = group
        self.topics = list(topics)
        self.assignors = list(assignors)
        self.poll_watch = poll_watch
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.group_instance_id = group_instance_id
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._on_lose = on_lose
        self.member_id = ""
        self.generation = -1
        self.assignment: set[TopicPartition] = set()
        self.rebalances = 0
        self._connection: KafkaConnection | None = None
        self._tasks = OwnedTasks(f"member of group {group!r}")
        self._task: asyncio.Task[None] | None = None
        self._joined = asyncio.Event()
        self._closing = False
        self.failure: BaseException | None = None
        # Java's rule: cooperative rebalancing only when every configured assignor supports it.
        self.cooperative = all(assignor.cooperative for assignor in self.assignors)
        self._lost = False

    @property
    def metadata(self) -> GroupMetadata:
        return GroupMetadata(self.group, self.generation, self.member_id, self.group_instance_id)

    def set_topics(self, topics: Sequence[str]) -> None:
        """Subscribe to ``topics`` instead (a pattern matched new ones): the member joins again at its next turn."""
        self.topics = list(topics)
        self._topics_changed = True

    # ---------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self._task = self._tasks.spawn(self._run(), name="membership")

    async def wait_joined(self, timeout: float) -> None:
        """Until the first assignment arrives (or ``timeout`` seconds)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._joined.wait(), timeout)

    async def close(self) -> None:
        """Give the partitions up and leave the group, so that the others take over at once."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            if self.assignment:
                await self._revoke_all()
            if self.member_id and self.group_instance_id is None:
                await self._leave()
        except MqwireError as exc:
            log.info("group %r: leaving failed: %s", self.group, exc)
        finally:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # ---------------------------------------------------------------------------------- the loop
    async def _run(self) -> None:
        backoff = Backoff(initial=0.1, maximum=2.0)
        need_join = True
        while not self._closing:
            try:
                if need_join:
                    await self._join_and_sync()
                    need_join = False
                    backoff.reset()
                await asyncio.sleep(self.heartbeat_interval)
                if self._topics_changed:
                    self._topics_changed = False
                    raise Rejoin("the subscription changed")
                if self.poll_watch is not None and self.poll_watch.overdue():
                    await self._leave_until_polled(self.poll_watch)
                    need_join = True
                    continue
                await self._heartbeat()
            except Rejoin as why:
                log.info("group %r: rejoining (%s)", self.group, why)
                need_join = True
            except errors.COORDINATOR_TROUBLE as exc:
                log.info("group %r: coordinator trouble (%s); finding it again", self.group, exc)
                self._drop_connection(exc)
                await asyncio.sleep(backoff.next_delay())
            except MqwireError as exc:
                # Authorization and protocol mismatches do not heal by retrying: the consumer reports it.
                log.error("group %r: giving up: %s", self.group, exc)
                self.failure = exc
                self._joined.set()
                if self._on_fail is not None:
                    self._on_fail(exc)
                return

    def _drop_connection(self, error: BaseException) -> None:
        self.session.forget_coordinator(self.group)
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _coordinator(self) -> KafkaConnection:
        if self._connection is None or self._connection.closed:
            node = await self.session.coordinator(self.group)
            self._connection = await self.session.dedicated_connection(node)
        return self._connection

    async def _request(self, body: Any, timeout: float | None = None) -> Any:
        connection = await self._coordinator()
        return await connection.request(body, timeout=timeout)

    def _check(self, code: int, what: str) -> None:
        if not code:
            return
        error = errors.error_for(code, f"{what} for group {self.group!r}")
        if isinstance(error, errors.UnknownMemberIdError | errors.FencedInstanceIdError):
            if isinstance(error, errors.FencedInstanceIdError):
                raise error  # another member holds this group_instance_id: not ours to take back
            self.member_id = ""
            self.generation = -1
            self._lost = True
            raise Rejoin(str(error))
        if isinstance(error, errors.IllegalGenerationError):
            self._lost = True  # the group moved on without this member: what it held is no longer its own
            raise Rejoin(str(error))
        if isinstance(error, errors.RebalanceInProgressError):
            raise Rejoin(str(error))
        if error.refresh_coordinator:
            self._drop_connection(error)
        raise error

    # ---------------------------------------------------------------------------------- rebalancing
    async def _join_and_sync(self) -> None:
        held: set[TopicPartition] = set() if self._lost else set(self.assignment)
        if self.assignment and self._lost:
            lost, self.assignment = self.assignment, set()
            await self._on_lose(lost)  # the group moved on: nothing of these may be committed any more
        elif self.assignment and not self.cooperative:
            await self._revoke_all()  # eager: everything is given up before joining
        self._lost = False
        # Sticky members tell the leader what they held (and since which generation) so it stays put.
        sticky = self.cooperative or any(assignor.name == "sticky" for assignor in self.assignors)
        owned = sorted(held) if sticky else []
        subscription = encode_subscription(
            Subscription(self.topics, None, owned, self.generation), version=2 if sticky else 1
        )
        while True:
            request = JoinGroupRequest(
                group_id=self.group,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=[JoinGroupRequestProtocol(name=a.name, metadata=subscription) for a in self.assignors],
            )
            # The broker answers when every member has joined: up to the rebalance timeout.
            joined = await self._request(request, timeout=self.rebalance_timeout_ms / 1000 + 5)
            if joined.error_code == errors.MemberIdRequiredError.error_code:
                self.member_id = joined.member_id  # KIP-394: join again with the id the broker gave
                continue
            self._check(joined.error_code, "JoinGroup")
            break
        self.member_id = joined.member_id
        self.generation = joined.generation_id
        assignments: list[SyncGroupRequestAssignment] = []
        if joined.leader == self.member_id:
            assignments = await self._lead(joined.protocol_name or "", joined.members)
        synced = await self._request(
            SyncGroupRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=joined.protocol_name,
                assignments=assignments,
            )
        )
        self._check(synced.error_code, "SyncGroup")
        assignment = decode_assignment(synced.assignment)
        target = {tp for tp in assignment.partitions if tp.topic in self.topics}
        revoked, added = self.assignment - target, target - self.assignment
        # The added partitions are owned only once their starting offsets are known: when that fails, the
        # next join (the error reaches _run) neither revokes them nor counts them as held.
        self.assignment = target - added
        self.rebalances += 1
        log.info(
            "group %r: generation %d, member %s, %d partitions", self.group, self.generation, self.member_id,
            len(target),
        )
        if revoked:
            await self._on_revoke(revoked)
        await self._on_assign(added)
        self.assignment = target
        self._joined.set()
        if revoked and self.cooperative:
            # KIP-429: partitions given up go to their new owners in the rebalance that follows at once.
            raise Rejoin(f"gave up {len(revoked)} partitions for others")

    async def _lead(self, protocol: str, members: Sequence[Any]) -> list[SyncGroupRequestAssignment]:
        assignor = next((a for a in self.assignors if a.name == protocol), None)
        if assignor is None:
            raise errors.InconsistentGroupProtocolError(f"group {self.group!r} chose assignor {protocol!r}")
        subscriptions = {member.member_id: decode_subscription(member.metadata) for member in members}
        topics = sorted({topic for s in subscriptions.values() for topic in s.topics})
        counts: dict[str, int] = {}
        for topic in topics:
            try:
                counts[topic] = len(await self.session.partitions_for(topic))
            except MqwireError as exc:
                log.warning("group %r: topic %r left out of the assignment: %s", self.group, topic, exc)
        plan = assignor.assign(counts, subscriptions)
        return [
            SyncGroupRequestAssignment(member_id=member, assignment=encode_assignment(Assignment(partitions)))
            for member, partitions in plan.items()
        ]

    async def _leave_until_polled(self, watch: PollWatch) -> None:
        """The application stopped polling: give the partitions up as lost, leave, wait for the next poll.

        As in the Java client the partitions count as lost (the group reassigns them while this member's
        application may still be working on their records), so nothing of them is committed.
        """
        log.warning(
            "group %r: no poll for more than max_poll_interval_ms (%.0f ms); leaving the group until the next poll",
            self.group,
            watch.interval * 1000,
        )
        watch.mark_left()
        lost, self.assignment = self.assignment, set()
        if lost:
            await self._on_lose(lost)
        if self.member_id and self.group_instance_id is None:
            try:
                await self._leave()
            except (ConnectError, ConnectionLostError, RequestTimeoutError, errors.KafkaError) as exc:
                log.info("group %r: LeaveGroup failed (%s); the session timeout removes the member", self.group, exc)
                self.member_id = ""
                self.generation = -1
        else:
            self.generation = -1  # a static member keeps its id; the join after the poll takes its place again
        await watch.wait_resumed()

    async def _revoke_all(self) -> None:
        revoked, self.assignment = self.assignment, set()
        await self._on_revoke(revoked)

    async def _heartbeat(self) -> None:
        reply = await self._request(
            HeartbeatRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.group_instance_id,
            )
        )
        self._check(reply.error_code, "Heartbeat")

    async def _leave(self) -> None:
        connection = await self._coordinator()
        version = connection.version_for(LeaveGroupRequest.API_KEY)
        if version >= LEAVE_GROUP_MEMBERS_MIN:
            body = LeaveGroupRequest(
                group_id=self.group,
                members=[MemberIdentity(member_id=self.member_id, group_instance_id=self.group_instance_id)],
            )
        else:
            body = LeaveGroupRequest(group_id=self.group, member_id=self.member_id)
        reply = await connection.request(body, version=version)
        if reply.error_code:
            log.info("group %r: LeaveGroup answered %s", self.group, errors.error_for(reply.error_code, "LeaveGroup"))
        self.member_id = ""
        self.generation = -1
