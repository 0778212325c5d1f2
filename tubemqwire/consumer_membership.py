"""A consumer's registration with the master under server-side balancing.

Each heartbeat reports the partitions this consumer holds and the outcome of the last rebalance
instruction; the answer may carry the next instruction, which goes to ``on_event``. The master only
learns that an instruction is done from a later heartbeat, so one is sent as soon as an outcome is ready.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from mqwire.common.errors import MqwireError
from tubemqwire import identity
from tubemqwire.errors import error_for_code
from tubemqwire.master import MasterLink, Membership
from tubemqwire.member import Member
from tubemqwire.protocol import consumer as proto
from tubemqwire.protocol.constants import Method
from tubemqwire.protocol.consumer import RebalanceEvent
from tubemqwire.protocol.metadata import SubscribeInfo

log = logging.getLogger(__name__)

# Until the first instruction arrives, heartbeats come this often (at most), for this long: the master
# balances a new member within a few seconds, and waiting a whole period for it would delay the start.
_SETTLE_INTERVAL = 1.0
_SETTLE_PERIOD = 60.0


class ConsumerMembership(Membership):
    def __init__(
        self,
        link: MasterLink,
        member: Member,
        *,
        subscriptions: Callable[[], list[SubscribeInfo]],
        on_event: Callable[[RebalanceEvent], None],
        on_failure: Callable[[MqwireError], None],
    ) -> None:
        super().__init__(link, interval=member.interval, name=f"TubeMQ consumer {member.client_id}")
        self.client_id = member.client_id
        self.group = member.group
        self.host = member.host
        self.topics = member.topics
        self.filters = member.filters
        self.credentials = member.credentials
        self._timeout = member.request_timeout
        self._subscriptions = subscriptions
        self._on_event = on_event
        self._on_failure = on_failure
        self._default_port = member.default_broker_port
        self._session_time_ms = int(time.time() * 1000)
        self._results: deque[RebalanceEvent] = deque()
        self._settle_until = 0.0
        self.events_seen = 0

    def report(self, event: RebalanceEvent) -> None:
        """Queue the outcome of an instruction for the next heartbeat, and send that heartbeat now."""
        self._results.append(event)
        self.wake()

    def next_delay(self) -> float:
        if self.events_seen == 0 and asyncio.get_running_loop().time() < self._settle_until:
            return min(self.interval, _SETTLE_INTERVAL)
        return self.interval

    def on_fatal(self, error: MqwireError) -> None:
        self._on_failure(error)

    async def register(self) -> None:
        request = proto.register_request(
            self.client_id,
            self.group,
            self.host,
            self.topics,
            session_time_ms=self._session_time_ms,
            subscriptions=self._subscriptions(),
            filters=self.filters,
            client_description=identity.CLIENT_DESCRIPTION,
            auth=self.credentials.master_certificate(force=True),
        )
        data = await self.link.call(Method.MASTER_CONSUMER_REGISTER, request, timeout=self._timeout)
        answer = proto.parse_register_response(data)
        if not answer.success:
            raise error_for_code(answer.err_code, answer.err_msg)
        self.credentials.update(answer.visit_token, answer.auth_token)
        self._settle_until = asyncio.get_running_loop().time() + _SETTLE_PERIOD
        # The first heartbeat follows at once: it may already bring the partitions.
        self.wake()

    async def heartbeat(self) -> None:
        event = self._results.popleft() if self._results else None
        request = proto.heartbeat_request(
            self.client_id,
            self.group,
            subscriptions=self._subscriptions(),
            event=event,
            auth=self.credentials.master_certificate(),
        )
        try:
            data = await self.link.call(Method.MASTER_CONSUMER_HEARTBEAT, request, timeout=self._timeout)
            answer = proto.parse_heartbeat_response(data, default_port=self._default_port)
        except BaseException:
            if event is not None:
                self._results.appendleft(event)
            raise
        if not answer.success:
            if event is not None:
                self._results.appendleft(event)
            raise error_for_code(answer.err_code, answer.err_msg)
        self.credentials.update(answer.visit_token, answer.auth_token, answer.require_auth)
        if self._results:
            # More outcomes wait: report the next one right away.
            self.wake()
        if answer.event is not None:
            self.events_seen += 1
            self._on_event(answer.event)

    async def deregister(self) -> None:
        request = proto.close_request(self.client_id, self.group, auth=self.credentials.master_certificate(force=True))
        data = await self.link.call(Method.MASTER_CONSUMER_CLOSE, request, timeout=self._timeout)
        success, code, message = proto.parse_close_response(data)
        if not success:
            log.info("%s: the master refused the close: %d %s", self.name, code, message)
