"""Pushing the client's metrics to the brokers that ask for them (KIP-714).

When a broker offers GetTelemetrySubscriptions and PushTelemetry, the client asks which metrics it wants
and how often, then pushes them at that interval as an OTLP ``MetricsData`` protobuf; an unknown subscription
id (the subscription changed) or a refused compression type makes it ask again; closing the client sends
a last, terminating push. Nothing here ever fails a send or a receive: a failure is logged once and
telemetry goes on at the next interval, or stops where the broker says the payload is unusable.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkawire.connection import KafkaConnection
from kafkawire.protocol.messages import GetTelemetrySubscriptionsRequest, PushTelemetryRequest
from kafkawire.telemetry.measures import ClientMeasures
from kafkawire.telemetry.points import Collector, selected
from mqwire.common.compression import compress
from mqwire.common.errors import MqwireError
from mqwire.common.version import __version__

__all__ = ["Subscription", "TelemetryHost", "TelemetryReporter"]

log = logging.getLogger(__name__)

GET_SUBSCRIPTIONS_KEY = 71
PUSH_KEY = 72
ZERO_UUID = uuid.UUID(int=0)
# Error codes that change what the client does next (the rest: try again at the next interval).
INVALID_REQUEST = 42
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
UNKNOWN_SUBSCRIPTION_ID = 117
TELEMETRY_TOO_LARGE = 118
STOP = frozenset({INVALID_REQUEST, INVALID_RECORD})
ASK_AGAIN = frozenset({UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE})
# Kafka's compression type ids and the codecs that write them, in the order we prefer them.
CODECS = {4: "zstd", 3: "lz4", 1: "gzip"}
# How long to wait before asking again after a failure, without an interval from the broker.
RETRY_SECONDS = 30.0
# The terminating push on close waits at most this long.
CLOSE_PUSH_SECONDS = 5.0

Encoder = Callable[..., bytes]


class TelemetryHost(Protocol):
    """What the reporter needs of the client's ``Session``."""

    client_id: str
    measures: ClientMeasures

    @property
    def connects(self) -> int:
        """Connections opened so far."""

    async def any_connection(self) -> KafkaConnection:
        """A connection to some broker."""

    def discard(self, connection: KafkaConnection, error: BaseException | None = None) -> None:
        """Drop a failed connection."""

    def children(self) -> list[object]:
        """The producers and consumers open now."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """What the broker asked for in GetTelemetrySubscriptions."""

    instance_id: uuid.UUID
    subscription_id: int
    compression_type: int
    interval: float
    max_bytes: int
    delta: bool
    prefixes: tuple[str, ...]


def choose_compression(accepted: Iterable[int]) -> int:
    """The first of the broker's accepted compression types we can write, or 0 (none)."""
    for code in accepted:
        if code in CODECS:
            return code
    return 0


class TelemetryReporter:
    """One client's telemetry: asks for the subscription, pushes at its interval, and once more at close."""

    def __init__(self, host: TelemetryHost, *, enabled: bool) -> None:
        self.enabled = enabled
        self._host = host
        self._collector = Collector(host.measures)
        self._encode: Encoder | None = None
        self.instance_id = ZERO_UUID
        self.subscription: Subscription | None = None
        self.pushes = 0
        """Pushes the broker accepted (the terminating one included)."""
        self._task: asyncio.Task[None] | None = None
        self._reported = False
        self._started_ns = time.time_ns()
        self._last_ns = self._started_ns
        self._last_push = time.monotonic()

    def start(self, spawn: Callable[[Any], asyncio.Task[None]]) -> None:
        """Begin in the background (``spawn`` runs the coroutine as an owned task), when enabled."""
        if self.enabled and self._task is None:
            self._task = spawn(self._run())

    async def _run(self) -> None:
        try:
            await self._loop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # telemetry must never take the client down
            self._failed("stopped", exc)

    def _failed(self, what: str, exc: BaseException | str) -> None:
        # The first failure is worth a warning; repeats of a broken setup would only be noise.
        level = logging.DEBUG if self._reported else logging.WARNING
        self._reported = True
        log.log(level, "client telemetry %s: %s", what, exc)

    async def _loop(self) -> None:
        connection = await self._host.any_connection()
        if not (connection.offers(GET_SUBSCRIPTIONS_KEY) and connection.offers(PUSH_KEY)):
            log.debug("the broker does not take client telemetry")
            return
        try:
            from kafkawire.telemetry.otlp import encode
        except ImportError:
            log.info("the broker takes client telemetry, but opentelemetry-proto is missing "
                     "(pip install 'mqwire[telemetry]'): no metrics are pushed")
            return
        self._encode = encode
        first = True
        while True:
            subscription = await self._subscribe()
            if not subscription.prefixes:
                # Nothing wanted now; a subscription added later shows at the next ask.
                await asyncio.sleep(subscription.interval)
                continue
            # The first push comes at a random point of the interval, so clients started together spread out.
            wait = subscription.interval * (random.uniform(0.5, 1.5) if first else 1.0)
            first = False
            while True:
                await asyncio.sleep(wait)
                wait = subscription.interval
                try:
                    code = await self._push(subscription, terminating=False, children=self._host.children())
                except MqwireError as exc:
                    self._failed("push failed", exc)
                    break
                if code in ASK_AGAIN:
                    break
                if code in STOP:
                    self._failed("stopped", f"the broker refused the metrics with error {code}")
                    self.subscription = None
                    return

    async def _subscribe(self) -> Subscription:
        """Ask until the broker answers with a subscription."""
        while True:
            try:
                connection = await self._host.any_connection()
                response = await self._request(
                    connection, GetTelemetrySubscriptionsRequest(client_instance_id=self.instance_id)
                )
            except MqwireError as exc:
                self._failed("subscription request failed", exc)
                await asyncio.sleep(self._retry_interval())
                continue
            if response.error_code:
                # Throttled (asked again too soon) or another error: ask again later.
                log.debug("GetTelemetrySubscriptions error %d", response.error_code)
                await asyncio.sleep(self._retry_interval())
                continue
            self.instance_id = response.client_instance_id
            interval = response.push_interval_ms / 1000 if response.push_interval_ms > 0 else RETRY_SECONDS
            self.subscription = Subscription(
                instance_id=response.client_instance_id,
                subscription_id=response.subscription_id,
                compression_type=choose_compression(response.accepted_compression_types),
                interval=interval,
                max_bytes=response.telemetry_max_bytes,
                delta=response.delta_temporality,
                prefixes=tuple(response.requested_metrics),
            )
            log.debug("client telemetry: instance %s, subscription %d, every %.1f s, metrics %s",
                      self.instance_id, response.subscription_id, interval, list(response.requested_metrics))
            return self.subscription

    def _retry_interval(self) -> float:
        return self.subscription.interval if self.subscription is not None else RETRY_SECONDS

    async def _request(self, connection: KafkaConnection, body: Any) -> Any:
        try:
            return await connection.request(body)
        except MqwireError as exc:
            self._host.discard(connection, exc)
            raise

    def payload(self, subscription: Subscription, children: list[object]) -> bytes:
        """The metrics since the previous push, selected by the subscription, encoded (not compressed)."""
        assert self._encode is not None
        now = time.monotonic()
        elapsed = now - self._last_push
        self._last_push = now
        now_ns = time.time_ns()
        points = self._collector.collect(children, self._host.connects, elapsed, subscription.delta)
        data = self._encode(
            selected(points, subscription.prefixes),
            resource={},
            scope_version=__version__,
            start_ns=self._last_ns if subscription.delta else self._started_ns,
            now_ns=now_ns,
            delta=subscription.delta,
        )
        self._last_ns = now_ns
        return data

    async def _push(self, subscription: Subscription, *, terminating: bool, children: list[object]) -> int:
        data = self.payload(subscription, children)
        codec = subscription.compression_type
        if codec:
            data = compress(CODECS[codec], data)
        if subscription.max_bytes > 0 and len(data) > subscription.max_bytes:
            self._failed("push skipped", f"{len(data)} bytes is above the broker's {subscription.max_bytes}")
            return TELEMETRY_TOO_LARGE
        body = PushTelemetryRequest(
            client_instance_id=subscription.instance_id,
            subscription_id=subscription.subscription_id,
            terminating=terminating,
            compression_type=codec,
            metrics=data,
        )
        response = await self._request(await self._host.any_connection(), body)
        code: int = response.error_code
        if code:
            log.debug("PushTelemetry error %d", code)
            if code not in ASK_AGAIN:
                self._failed("push refused", f"error {code}")
        else:
            self.pushes += 1
        return code

    def retire(self, child: object) -> None:
        """A producer or consumer closed: its last counts go with the next push (while pushing at all)."""
        task = self._task
        if task is None or task.done():
            return
        # Before the first subscription too: a producer may close before the broker has answered.
        if self.subscription is None or self.subscription.prefixes:
            self._collector.retire(child)

    async def close(self, children: list[object]) -> None:
        """Stop pushing; with a subscription, push once more as terminating (bounded, failures only logged).

        ``children`` are the producers and consumers the client had open, so their last counts go too.
        """
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        subscription = self.subscription
        if subscription is None or not subscription.prefixes or self._encode is None:
            return
        self.subscription = None
        try:
            await asyncio.wait_for(
                self._push(subscription, terminating=True, children=children), CLOSE_PUSH_SECONDS
            )
        except (MqwireError, TimeoutError) as exc:
            self._failed("terminating push failed", exc)
