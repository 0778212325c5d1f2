"""A consumer's registration with the master under client-side balancing.

The master assigns nothing: it keeps the consumer in its group's books (so the group cannot also be
consumed with server-side balancing), and tells it which brokers and partitions exist. Each heartbeat
reports the versions of those lists the consumer holds, and the partitions it claimed when that set
changed; the answer carries a list again only when it is newer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mqwire.common.errors import MqwireError
from tubemqwire import identity
from tubemqwire.errors import error_for_code
from tubemqwire.master import MasterLink, Membership
from tubemqwire.member import Member
from tubemqwire.protocol import client_balance as proto
from tubemqwire.protocol import consumer as server_balance
from tubemqwire.protocol.client_balance import ClientBalanceAnswer, ClusterView
from tubemqwire.protocol.constants import Method
from tubemqwire.protocol.metadata import PartitionInfo, PartitionMeta, parse_topic_meta

log = logging.getLogger(__name__)

# The held partitions are reported on a change and, in any case, every this many heartbeats.
_REPORT_EVERY = 10


class ClientBalanceMembership(Membership):
    def __init__(
        self,
        link: MasterLink,
        member: Member,
        *,
        held: Callable[[], list[PartitionInfo]],
        on_failure: Callable[[MqwireError], None],
        source_count: int = -1,
        node_id: int = -1,
    ) -> None:
        super().__init__(link, interval=member.interval, name=f"TubeMQ client-balance consumer {member.client_id}")
        self.client_id = member.client_id
        self.group = member.group
        self.host = member.host
        self.topics = member.topics
        self.filters = member.filters
        self.credentials = member.credentials
        self.source_count = source_count
        self.node_id = node_id
        self._timeout = member.request_timeout
        self._held = held
        self._on_failure = on_failure
        self._default_port = member.default_broker_port
        self.view = ClusterView()
        self._partitions: dict[str, PartitionMeta] = {}
        self._reported: frozenset[str] | None = None
        self._beats = 0

    def on_fatal(self, error: MqwireError) -> None:
        self._on_failure(error)

    # --------------------------------------------------------------------------------- the lists
    def partitions(self) -> dict[str, PartitionMeta]:
        """Every partition of the consumed topics the master told us of, by key."""
        return self._partitions

    def _absorb(self, answer: ClientBalanceAnswer) -> None:
        """Take the newer lists of an answer; the partitions are parsed once, when either list changes, and a
        malformed list raises before it replaces a good one."""
        view = self.view
        brokers, broker_id = view.brokers, view.broker_config_id
        if answer.brokers is not None and answer.brokers[0] != broker_id:
            broker_id, brokers = answer.brokers
        meta, meta_id = view.topic_meta, view.topic_meta_id
        if answer.topic_meta is not None and answer.topic_meta[0] != meta_id:
            meta_id, meta = answer.topic_meta
        if (broker_id, meta_id) == (view.broker_config_id, view.topic_meta_id):
            return
        known = {broker.broker_id: broker for broker in brokers}
        self._partitions = {m.partition.key: m for text in meta for m in parse_topic_meta(text, known)}
        self.view = ClusterView(broker_id, meta_id, brokers, meta)

    def _report(self) -> list[PartitionInfo] | None:
        """The held partitions when they changed since the last report (or it is time), else None."""
        held = self._held()
        keys = frozenset(p.key for p in held)
        self._beats += 1
        if keys != self._reported or self._beats % _REPORT_EVERY == 0:
            self._reported = keys
            return held
        return None

    # ------------------------------------------------------------------------------------ hooks
    async def register(self) -> None:
        held = self._held()
        request = proto.register_request(
            self.client_id,
            self.group,
            self.host,
            self.topics,
            view=self.view,
            held=held,
            filters=self.filters,
            source_count=self.source_count,
            node_id=self.node_id,
            client_description=identity.CLIENT_DESCRIPTION,
            auth=self.credentials.master_certificate(force=True),
        )
        data = await self.link.call(Method.MASTER_CONSUMER_REGISTER_V2, request, timeout=self._timeout)
        answer = proto.parse_register_response(data, default_port=self._default_port)
        if not answer.success:
            raise error_for_code(answer.err_code, answer.err_msg)
        self.credentials.update(answer.visit_token, answer.auth_token, answer.require_auth)
        self._absorb(answer)
        self._reported = frozenset(p.key for p in held) if held else None
        await self.refresh()

    async def heartbeat(self) -> None:
        request = proto.heartbeat_request(
            self.client_id,
            self.group,
            view=self.view,
            held=self._report(),
            auth=self.credentials.master_certificate(),
        )
        data = await self.link.call(Method.MASTER_CONSUMER_HEARTBEAT_V2, request, timeout=self._timeout)
        answer = proto.parse_heartbeat_response(data, default_port=self._default_port)
        if not answer.success:
            self._reported = None
            raise error_for_code(answer.err_code, answer.err_msg)
        self.credentials.update(answer.visit_token, answer.auth_token, answer.require_auth)
        self._absorb(answer)

    async def refresh(self) -> None:
        """Ask the master for the partition metadata now (method 22)."""
        request = proto.part_meta_request(
            self.client_id, self.group, view=self.view, auth=self.credentials.master_certificate()
        )
        data = await self.link.call(Method.MASTER_CONSUMER_GET_PART_META, request, timeout=self._timeout)
        answer = proto.parse_part_meta_response(data, default_port=self._default_port)
        if not answer.success:
            raise error_for_code(answer.err_code, answer.err_msg)
        self._absorb(answer)

    async def deregister(self) -> None:
        request = server_balance.close_request(
            self.client_id, self.group, auth=self.credentials.master_certificate(force=True)
        )
        data = await self.link.call(Method.MASTER_CONSUMER_CLOSE, request, timeout=self._timeout)
        success, code, message = server_balance.parse_close_response(data)
        if not success:
            log.info("%s: the master refused the close: %d %s", self.name, code, message)
