"""Statistics with one shape for the three clients: cheap live counters and the typed snapshots read from them.

A producer, consumer or client keeps a counters object (``ProducerCounters``, ``ConsumerCounters``,
``ClientCounters``) whose attributes are plain ints, incremented where the work happens: once per batch
where the system batches, never under a lock, no dictionary on the success path (errors are counted by type
in a dict, only when one happens). ``stats()`` turns them, with what the object knows at that moment (what
its buffer holds, its positions and the broker's end offsets), into a frozen snapshot: ``ProducerStats``,
``ConsumerStats``, ``ClientStats``. A snapshot never changes; read another to see the counters move.

Nothing here knows a protocol: each package decides what its counters mean in its own terms (a Kafka
record batch, a Pulsar batch, a TubeMQ message) and documents what its consumer lag is made of.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = [
    "LATENCY_BOUNDS_MS",
    "ClientCounters",
    "ClientStats",
    "ConsumerCounters",
    "ConsumerStats",
    "LatencyHistogram",
    "LatencyRecorder",
    "PartitionLag",
    "ProducerCounters",
    "ProducerStats",
    "split_children",
]

LATENCY_BOUNDS_MS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000)
"""Upper bounds (inclusive, milliseconds) of the send latency buckets; one more bucket holds what is above."""

System = Literal["kafka", "pulsar", "tubemq"]

_EMPTY: Mapping[str, int] = MappingProxyType({})


def _frozen(counts: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(counts)) if counts else _EMPTY


# ---------------------------------------------------------------------------------------------- snapshots
@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """Send latencies in fixed buckets: ``counts[i]`` messages took at most ``bounds_ms[i]`` ms (and more
    than the bound before); the last count is for those above the last bound."""

    bounds_ms: tuple[float, ...]
    counts: tuple[int, ...]
    count: int
    sum_ms: float

    @property
    def mean_ms(self) -> float | None:
        """The mean latency, None before anything was acknowledged."""
        return self.sum_ms / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile ``q`` (0..1), in ms; inf past the last bound."""
        if not 0 <= q <= 1:
            raise ValueError(f"quantile must be within 0..1, got {q}")
        if not self.count:
            return None
        rank = q * self.count
        seen = 0
        for bound, n in zip((*self.bounds_ms, float("inf")), self.counts, strict=True):
            seen += n
            if n and seen >= rank:
                return bound
        return float("inf")


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """How far a consumer is behind in one partition: ``end - position`` messages (None where not known)."""

    topic: str
    partition: int
    position: int | None
    """The next offset the consumer will be handed (Kafka, TubeMQ), None before the first fetch."""
    end: int | None
    """The broker's end of the partition (Kafka: the high watermark or last stable offset of the last fetch;
    TubeMQ: the broker's max offset), None where the protocol does not say."""
    lag: int | None
    """Messages behind the end (Pulsar: the subscription's backlog as CONSUMER_STATS gives it, in entries: a
    batch counts once)."""


@dataclass(frozen=True, slots=True)
class ProducerStats:
    """What one producer has sent so far and holds now."""

    system: System
    topic: str | None
    records_sent: int
    """Messages the broker acknowledged."""
    bytes_sent: int
    """Their encoded size as sent (batch payloads, after compression where the system compresses batches)."""
    batches_sent: int
    """Batches the broker acknowledged (a message sent alone counts as a batch of one)."""
    requests_sent: int
    """Produce/send requests written to the wire, retries included."""
    requests_in_flight: int
    retries: int
    records_failed: int
    """Messages whose send failed (their futures raised)."""
    errors: Mapping[str, int]
    """Errors met, by exception class name (retried ones included)."""
    buffered_records: int
    buffered_bytes: int
    send_latency: LatencyHistogram
    """From a message's batch being opened (the first message buffered) to its acknowledgement."""


@dataclass(frozen=True, slots=True)
class ConsumerStats:
    """What one consumer has received so far, holds now, and how far it is behind."""

    system: System
    topics: tuple[str, ...]
    records_received: int
    """Messages handed to the application."""
    bytes_received: int
    """Value bytes of those messages."""
    batches_received: int
    """Fetch responses / batches / pulls that brought messages."""
    requests_sent: int
    """Fetch requests, flow permits or pull requests sent."""
    errors: Mapping[str, int]
    buffered_records: int
    """Received but not yet handed to the application."""
    rebalances: int
    """Assignments this consumer has taken since it started (the first one included)."""
    lag: tuple[PartitionLag, ...]

    @property
    def total_lag(self) -> int | None:
        """The sum of the known lags, None when none is known."""
        known = [p.lag for p in self.lag if p.lag is not None]
        return sum(known) if known else None


@dataclass(frozen=True, slots=True)
class ClientStats:
    """One client: its connections, and the stats of every producer and consumer it has open."""

    system: System
    connections: int
    """Connections open now."""
    connects: int
    """Connections opened since the client started."""
    reconnects: int
    """Of those, connections opened again to an address that had one before."""
    connections_lost: int
    errors: Mapping[str, int]
    producers: tuple[ProducerStats, ...] = field(default=())
    consumers: tuple[ConsumerStats, ...] = field(default=())

    @property
    def records_sent(self) -> int:
        """Messages acknowledged to the open producers."""
        return sum(p.records_sent for p in self.producers)

    @property
    def records_received(self) -> int:
        """Messages handed out by the open consumers."""
        return sum(c.records_received for c in self.consumers)


# ---------------------------------------------------------------------------------------------- counters
class LatencyRecorder:
    """The live side of ``LatencyHistogram``: one bisect and three additions per observation."""

    __slots__ = ("_counts", "count", "sum_ms")

    def __init__(self) -> None:
        self._counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.count = 0
        self.sum_ms = 0.0

    def observe(self, seconds: float, n: int = 1) -> None:
        """Count ``n`` messages acknowledged ``seconds`` after their batch began."""
        ms = seconds * 1000.0
        self._counts[bisect_left(LATENCY_BOUNDS_MS, ms)] += n
        self.count += n
        self.sum_ms += ms * n

    def snapshot(self) -> LatencyHistogram:
        """The histogram as it is now."""
        return LatencyHistogram(LATENCY_BOUNDS_MS, tuple(self._counts), self.count, self.sum_ms)


class _Errors:
    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: dict[str, int] = {}

    def error(self, exc: BaseException | type[BaseException], n: int = 1) -> None:
        """Count an error by its class name (only on the error path: a dict update)."""
        name = exc.__name__ if isinstance(exc, type) else type(exc).__name__
        self.errors[name] = self.errors.get(name, 0) + n


class ProducerCounters(_Errors):
    """A producer's running totals; the sending code adds to the attributes directly."""

    __slots__ = ("batches", "bytes", "latency", "records", "records_failed", "requests", "retries")

    def __init__(self) -> None:
        super().__init__()
        self.records = 0
        self.bytes = 0
        self.batches = 0
        self.requests = 0
        self.retries = 0
        self.records_failed = 0
        self.latency = LatencyRecorder()

    def acknowledged(self, records: int, size: int, seconds: float) -> None:
        """One batch of ``records`` messages and ``size`` bytes acknowledged ``seconds`` after it began."""
        self.records += records
        self.bytes += size
        self.batches += 1
        self.latency.observe(seconds, records)

    def snapshot(
        self,
        system: System,
        topic: str | None,
        *,
        in_flight: int,
        buffered_records: int,
        buffered_bytes: int,
    ) -> ProducerStats:
        """The typed snapshot, with what the producer holds at this moment."""
        return ProducerStats(
            system=system,
            topic=topic,
            records_sent=self.records,
            bytes_sent=self.bytes,
            batches_sent=self.batches,
            requests_sent=self.requests,
            requests_in_flight=in_flight,
            retries=self.retries,
            records_failed=self.records_failed,
            errors=_frozen(self.errors),
            buffered_records=buffered_records,
            buffered_bytes=buffered_bytes,
            send_latency=self.latency.snapshot(),
        )


class ConsumerCounters(_Errors):
    """A consumer's running totals."""

    __slots__ = ("batches", "bytes", "rebalances", "records", "requests")

    def __init__(self) -> None:
        super().__init__()
        self.records = 0
        self.bytes = 0
        self.batches = 0
        self.requests = 0
        self.rebalances = 0

    def snapshot(
        self, system: System, topics: Iterable[str], *, buffered_records: int, lag: Iterable[PartitionLag]
    ) -> ConsumerStats:
        """The typed snapshot, with the buffer and the lag as they are now."""
        return ConsumerStats(
            system=system,
            topics=tuple(topics),
            records_received=self.records,
            bytes_received=self.bytes,
            batches_received=self.batches,
            requests_sent=self.requests,
            errors=_frozen(self.errors),
            buffered_records=buffered_records,
            rebalances=self.rebalances,
            lag=tuple(sorted(lag, key=lambda p: (p.topic, p.partition))),
        )


class ClientCounters(_Errors):
    """A client's connection counts; ``opened`` tells a reconnect from a first connection by its address."""

    __slots__ = ("_addresses", "connections_lost", "connects", "reconnects")

    def __init__(self) -> None:
        super().__init__()
        self.connects = 0
        self.reconnects = 0
        self.connections_lost = 0
        self._addresses: set[object] = set()

    def opened(self, address: object) -> None:
        """A connection to ``address`` was opened."""
        self.connects += 1
        if address in self._addresses:
            self.reconnects += 1
        else:
            self._addresses.add(address)

    def lost(self, error: BaseException | None = None) -> None:
        """A connection was dropped after a failure (not closed on purpose)."""
        self.connections_lost += 1
        if error is not None:
            self.error(error)

    def snapshot(
        self,
        system: System,
        *,
        connections: int,
        producers: Iterable[ProducerStats] = (),
        consumers: Iterable[ConsumerStats] = (),
    ) -> ClientStats:
        """The typed snapshot with the stats of the producers and consumers open now."""
        return ClientStats(
            system=system,
            connections=connections,
            connects=self.connects,
            reconnects=self.reconnects,
            connections_lost=self.connections_lost,
            errors=_frozen(self.errors),
            producers=tuple(producers),
            consumers=tuple(consumers),
        )


def split_children(children: Iterable[object]) -> tuple[list[ProducerStats], list[ConsumerStats]]:
    """The stats of whichever of ``children`` (what a client made) have ``stats()``, by kind."""
    producers: list[ProducerStats] = []
    consumers: list[ConsumerStats] = []
    for child in children:
        stats = getattr(child, "stats", None)
        if stats is None:
            continue
        snapshot = stats()
        if isinstance(snapshot, ProducerStats):
            producers.append(snapshot)
        elif isinstance(snapshot, ConsumerStats):
            consumers.append(snapshot)
    return producers, consumers
