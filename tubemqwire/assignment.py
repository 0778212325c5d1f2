"""The partitions a consumer holds: claimed and released as the master instructs, kept alive at their
brokers by heartbeats.

Claiming is best effort, as in the reference client: a partition still held by another member of the
group (PARTITION_OCCUPIED) is skipped; the master sees it unclaimed in our next report and assigns it
again. A partition a broker no longer counts as ours (heartbeat failure list, or a failed heartbeat) is
dropped the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from mqwire.common.errors import FatalError, MqwireError, RetriableError
from mqwire.common.lifecycle import OwnedTasks
from tubemqwire.errors import error_for_code
from tubemqwire.fetcher import FetchSettings, PartitionFetcher
from tubemqwire.message import Message
from tubemqwire.protocol import broker as proto
from tubemqwire.protocol.constants import ErrorCode, EventStatus, EventType, Method, ServiceType
from tubemqwire.protocol.consumer import RebalanceEvent
from tubemqwire.protocol.metadata import PartitionInfo, SubscribeInfo

log = logging.getLogger(__name__)

_CONNECT = frozenset({EventType.CONNECT, EventType.ONLY_CONNECT})
_DISCONNECT = frozenset({EventType.DISCONNECT, EventType.ONLY_DISCONNECT})
# Refusals after which claiming the partition again now would not help.
_GIVE_UP = frozenset({ErrorCode.PARTITION_OCCUPIED, ErrorCode.CERTIFICATE_FAILURE})
# Pause between rounds of claims that failed for a reason a retry may fix, seconds.
_CLAIM_PAUSE = 1.0


class Assignment:
    def __init__(
        self,
        settings: FetchSettings,
        *,
        start: str,
        msg_types: Mapping[str, frozenset[str]],
        deliver: Callable[[Sequence[Message]], None],
        on_change: Callable[[], None],
        heartbeat_interval: float,
        release_wait: float,
        claim_rounds: int = 5,
    ) -> None:
        self.settings = settings
        self._start = start
        self._msg_types = msg_types
        self._deliver = deliver
        self._on_change = on_change
        self._interval = heartbeat_interval
        self._release_wait = release_wait
        self._claim_rounds = claim_rounds
        self.fetchers: dict[str, PartitionFetcher] = {}
        # Partitions claimed before by this consumer: the start position applies to the first claim only.
        self._claimed_before: set[str] = set()
        # Partition keys the application paused; they stay paused when claimed again.
        self.paused: set[str] = set()
        self._tasks = OwnedTasks("TubeMQ consumer assignment")
        self._heartbeats: asyncio.Task[None] | None = None

    @property
    def partition_keys(self) -> frozenset[str]:
        return frozenset(self.fetchers)

    def subscriptions(self) -> list[SubscribeInfo]:
        s = self.settings
        return [SubscribeInfo(s.client_id, s.group, fetcher.partition) for fetcher in self.fetchers.values()]

    # ------------------------------------------------------------------------------------ rebalance
    async def handle(self, event: RebalanceEvent) -> RebalanceEvent:
        """Carry out one instruction of the master; returns it with the status to report."""
        s = self.settings
        partitions = [
            info.partition for info in event.subscriptions if info.consumer_id == s.client_id and info.group == s.group
        ]
        status = EventStatus.DONE
        try:
            if event.event_type in _CONNECT:
                await self.claim(partitions)
            elif event.event_type in _DISCONNECT:
                await self.release(partitions)
            else:
                # REPORT and the like: the next heartbeat carries our partitions anyway.
                log.debug("rebalance instruction %d of type %d: nothing to do", event.rebalance_id, event.event_type)
        except Exception:
            log.exception("rebalance instruction %d failed", event.rebalance_id)
            status = EventStatus.FAILED
        return event.with_status(status)

    async def claim(self, partitions: Iterable[PartitionInfo]) -> None:
        todo = [p for p in dict.fromkeys(partitions) if p.key not in self.fetchers]
        for attempt in range(self._claim_rounds):
            if not todo:
                return
            if attempt:
                await asyncio.sleep(_CLAIM_PAUSE)
            retry = await asyncio.gather(*(self._claim_one(p) for p in todo))
            todo = [p for p, again in zip(todo, retry, strict=True) if again]
        for partition in todo:
            log.warning("could not claim %s; the master will assign it again", partition.key)

    async def _claim_one(self, partition: PartitionInfo) -> bool:
        """Claim one partition; True when another try may succeed."""
        fetcher = self._new_fetcher(partition)
        try:
            answer = await fetcher.register(read_status=self._read_status(partition))
        except RetriableError as exc:
            log.info("claiming %s failed: %s", partition.key, exc)
            return True
        except FatalError as exc:
            log.warning("claiming %s failed: %s", partition.key, exc)
            return False
        if answer.success:
            self._adopt(fetcher)
            return False
        if answer.err_code in _GIVE_UP:
            log.info("claiming %s: %s", partition.key, answer.err_msg)
            return False
        log.info("claiming %s: broker answered %d %s", partition.key, answer.err_code, answer.err_msg)
        return error_for_code(answer.err_code, answer.err_msg).retriable

    async def connect(self, partition: PartitionInfo, offset: int | None = None) -> PartitionFetcher:
        """Claim one partition now, from ``offset`` when given; a refusal raises its typed error."""
        held = self.fetchers.get(partition.key)
        if held is not None:
            return held
        fetcher = self._new_fetcher(partition)
        answer = await fetcher.register(read_status=self._read_status(partition), offset=offset)
        if not answer.success:
            raise error_for_code(answer.err_code, f"claiming {partition.key}: {answer.err_msg}")
        return self._adopt(fetcher)

    def _new_fetcher(self, partition: PartitionInfo) -> PartitionFetcher:
        fetcher = PartitionFetcher(
            self.settings,
            partition,
            self._msg_types.get(partition.topic, frozenset()),
            self._deliver,
            self._lost,
        )
        if partition.key in self.paused:
            fetcher.pause()
        return fetcher

    # ------------------------------------------------------------------------------ pause and seek
    def pause(self, keys: Iterable[str]) -> None:
        """Stop fetching these partitions (held now or claimed later) until ``resume``."""
        for key in keys:
            self.paused.add(key)
            fetcher = self.fetchers.get(key)
            if fetcher is not None:
                fetcher.pause()

    def resume(self, keys: Iterable[str]) -> None:
        """Fetch these partitions again."""
        for key in keys:
            self.paused.discard(key)
            fetcher = self.fetchers.get(key)
            if fetcher is not None:
                fetcher.resume()

    async def reposition(self, keys: Iterable[str] | None, *, read_status: int, offset: int | None) -> None:
        """Claim held partitions again from another place: ``offset`` (kept within the partition by the
        broker) or, with ``READ_FROM_MAX_ALWAYS``, the end. ``keys`` None means every held partition.

        The broker takes a new claim from the member that holds the partition (the same client id) and
        resets the group's position as it would for a first claim; what was fetched and not yet
        confirmed is dropped. A refusal raises its typed error (the partition is then let go).
        """
        held = self.fetchers
        chosen = list(held.values()) if keys is None else [held[k] for k in keys if k in held]
        results = await asyncio.gather(
            *(self._reposition_one(fetcher, read_status, offset) for fetcher in chosen), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _reposition_one(self, old: PartitionFetcher, read_status: int, offset: int | None) -> None:
        await old.stop(wait=0, release=False)
        fetcher = self._new_fetcher(old.partition)
        try:
            answer = await fetcher.register(read_status=read_status, offset=offset)
        except BaseException:
            self._lost(old, error_for_code(ErrorCode.HB_NO_NODE, f"{old.key}: claiming again failed"))
            raise
        if self.fetchers.get(old.key) is not old:
            # Released meanwhile (a rebalance): give the new claim back too.
            if answer.success:
                await fetcher.stop(wait=0)
            return
        if not answer.success:
            self._lost(old, error_for_code(answer.err_code, answer.err_msg))
            raise error_for_code(answer.err_code, f"claiming {old.key} again: {answer.err_msg}")
        self.fetchers[old.key] = fetcher
        fetcher.start()

    def _read_status(self, partition: PartitionInfo) -> int:
        first = partition.key not in self._claimed_before
        return proto.READ_FROM_MAX if first and self._start == "latest" else proto.READ_NORMAL

    def _adopt(self, fetcher: PartitionFetcher) -> PartitionFetcher:
        held = self.fetchers.get(fetcher.key)
        if held is not None:
            return held
        self._claimed_before.add(fetcher.key)
        self.fetchers[fetcher.key] = fetcher
        fetcher.start()
        self._on_change()
        return fetcher

    async def release(self, partitions: Iterable[PartitionInfo], *, wait: float | None = None) -> None:
        """Stop fetching ``partitions`` (after their outstanding batches, up to ``wait`` s) and release them."""
        leaving = [self.fetchers.pop(p.key) for p in dict.fromkeys(partitions) if p.key in self.fetchers]
        if not leaving:
            return
        pause = self._release_wait if wait is None else wait
        await asyncio.gather(*(fetcher.stop(wait=pause) for fetcher in leaving))
        self._on_change()

    async def release_all(self, *, wait: float) -> None:
        await self.release([fetcher.partition for fetcher in list(self.fetchers.values())], wait=wait)

    def _lost(self, fetcher: PartitionFetcher, error: MqwireError) -> None:
        if self.fetchers.get(fetcher.key) is fetcher:
            log.info("partition %s is no longer ours: %s", fetcher.key, error)
            del self.fetchers[fetcher.key]
            fetcher.abandon()
            self._on_change()

    # ---------------------------------------------------------------------------- broker heartbeats
    def start(self) -> None:
        self._heartbeats = self._tasks.spawn(self._beat(), name="broker heartbeats")

    async def stop(self) -> None:
        task, self._heartbeats = self._heartbeats, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            by_broker: dict[tuple[str, int], list[PartitionFetcher]] = {}
            for fetcher in self.fetchers.values():
                by_broker.setdefault(fetcher.partition.broker.address, []).append(fetcher)
            try:
                await asyncio.gather(*(self._beat_broker(address, group) for address, group in by_broker.items()))
            except Exception:
                # A bug must not end the heartbeats: the brokers would drop every partition.
                log.exception("broker heartbeats failed")

    async def _beat_broker(self, address: tuple[str, int], fetchers: list[PartitionFetcher]) -> None:
        s = self.settings
        request = proto.heartbeat_request(
            s.client_id, s.group, [f.partition for f in fetchers], auth=s.credentials.consumer_broker_auth()
        )
        try:
            data = await s.brokers.call(address, ServiceType.BROKER_READ, Method.BROKER_CONSUMER_HEARTBEAT, request)
            answer = proto.parse_heartbeat_response(data, default_port=fetchers[0].partition.broker.port)
        except MqwireError as exc:
            # The reference client gives the partitions up: the broker will time our claims out.
            log.warning("heartbeat to broker %s:%d failed: %s", address[0], address[1], exc)
            for fetcher in fetchers:
                self._lost(fetcher, exc)
            return
        if not answer.success:
            error = error_for_code(answer.err_code, answer.err_msg)
            log.warning("heartbeat to broker %s:%d refused: %s", address[0], address[1], error)
            if answer.err_code == ErrorCode.CERTIFICATE_FAILURE:
                for fetcher in fetchers:
                    self._lost(fetcher, error)
            return
        for code, partition in answer.failures:
            dropped = self.fetchers.get(partition.key)
            if dropped is not None:
                self._lost(dropped, error_for_code(code, f"broker dropped {partition.key}"))
