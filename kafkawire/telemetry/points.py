"""The client's metrics as KIP-714 names them: points read from the statistics and the telemetry measures.

Names follow the Java client's telemetry names (``org.apache.kafka.`` + the metric group without
``-metrics`` + the metric name, dashes as dots), so that a broker's client-metrics subscription written
for Java clients selects the same metrics here. Running totals are kept per producer and consumer and
pushed as the increase since the previous push (delta temporality) or as a total that never decreases
(cumulative), so a producer closing between two pushes takes nothing back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkawire.telemetry.measures import AvgMax, ClientMeasures
from mqwire.common.stats import ConsumerStats, ProducerStats

__all__ = ["CONSUMER", "PRODUCER", "Collector", "Point", "selected"]

PRODUCER = "org.apache.kafka.producer."
CONSUMER = "org.apache.kafka.consumer."

Attributes = tuple[tuple[str, str], ...]
Key = tuple[str, Attributes]
# Closed producers and consumers kept for the next push at most (a client that cannot push keeps no more).
MAX_RETIRED = 1000


@dataclass(frozen=True, slots=True)
class Point:
    """One metric value: a running total (``monotonic``: an OTLP sum) or a gauge."""

    name: str
    value: float
    monotonic: bool
    attributes: Attributes = ()


def _producer_totals(stats: ProducerStats) -> dict[Key, int]:
    return {
        (PRODUCER + "record.send.total", ()): stats.records_sent,
        (PRODUCER + "record.error.total", ()): stats.records_failed,
        # Batches sent again (the Java client counts their records).
        (PRODUCER + "record.retry.total", ()): stats.retries,
        (PRODUCER + "request.total", ()): stats.requests_sent,
        (PRODUCER + "byte.total", ()): stats.bytes_sent,
    }


def _consumer_totals(stats: ConsumerStats) -> dict[Key, int]:
    return {
        (CONSUMER + "fetch.manager.records.consumed.total", ()): stats.records_received,
        (CONSUMER + "fetch.manager.bytes.consumed.total", ()): stats.bytes_received,
        (CONSUMER + "fetch.manager.fetch.total", ()): stats.requests_sent,
        (CONSUMER + "coordinator.rebalance.total", ()): stats.rebalances,
    }


def _avg_max(points: list[Point], name: str, measure: AvgMax, attributes: Attributes = ()) -> None:
    taken = measure.take()
    if taken is not None:
        points.append(Point(name + ".avg", taken[0], False, attributes))
        points.append(Point(name + ".max", taken[1], False, attributes))


class Collector:
    """Reads the points of one client at each push."""

    def __init__(self, measures: ClientMeasures) -> None:
        self.measures = measures
        # The totals each producer or consumer had at the previous push, by the object itself.
        self._last: list[tuple[object, dict[Key, int]]] = []
        self._cumulative: dict[Key, int] = {}
        self._connects = 0
        self._idle = 0.0
        # Producers and consumers closed since the previous push: their last counts still go out once.
        self._retired: list[object] = []

    def retire(self, child: object) -> None:
        """``child`` closed: count what it did since the previous push at the next one."""
        if len(self._retired) < MAX_RETIRED:
            self._retired.append(child)

    def collect(self, children: Iterable[object], connects: int, elapsed: float, delta: bool) -> list[Point]:
        """The points since the previous call: ``children`` are what the client made (those with ``stats()``
        count), ``connects`` the connections it opened so far, ``elapsed`` the seconds since the previous call."""
        producers: list[ProducerStats] = []
        consumers: list[ConsumerStats] = []
        increase: dict[Key, int] = {}
        last = dict((id(child), (child, totals)) for child, totals in self._last)
        seen: list[tuple[object, dict[Key, int]]] = []
        retired, self._retired = self._retired, []
        current = list(children)
        for child in [*current, *(c for c in retired if all(c is not o for o in current))]:
            stats = getattr(child, "stats", None)
            if stats is None:
                continue
            snapshot = stats()
            if isinstance(snapshot, ProducerStats):
                producers.append(snapshot)
                totals = _producer_totals(snapshot)
            elif isinstance(snapshot, ConsumerStats):
                consumers.append(snapshot)
                totals = _consumer_totals(snapshot)
            else:
                continue
            before = last.get(id(child))
            previous = before[1] if before is not None and before[0] is child else {}
            for key, value in totals.items():
                increase[key] = increase.get(key, 0) + max(value - previous.get(key, 0), 0)
            seen.append((child, totals))
        self._last = seen
        for key, value in increase.items():
            self._cumulative[key] = self._cumulative.get(key, 0) + value
        totals_now = increase if delta else self._cumulative
        points = [Point(name, value, True, attributes) for (name, attributes), value in totals_now.items()]

        new_connects = max(connects - self._connects, 0)
        self._connects = connects
        measures = self.measures
        kinds = ([PRODUCER] if producers else []) + ([CONSUMER] if consumers else [])
        for prefix in kinds:
            points.append(Point(prefix + "connection.creation.total", new_connects if delta else connects, True))
            if elapsed > 0:
                points.append(Point(prefix + "connection.creation.rate", new_connects / elapsed, False))
        if producers:
            in_flight = sum(p.requests_in_flight for p in producers)
            points.append(Point(PRODUCER + "requests.in.flight", in_flight, False))
            points.append(Point(PRODUCER + "buffer.total.bytes.used", sum(p.buffered_bytes for p in producers), False))
            _avg_max(points, PRODUCER + "record.queue.time", measures.record_queue_time)
            for node, measure in sorted(measures.produce_node_latency.items()):
                _avg_max(points, PRODUCER + "node.request.latency", measure, (("node_id", str(node)),))
        if consumers:
            idle = measures.poll_idle
            if elapsed > 0:
                ratio = (idle - self._idle) / (elapsed * len(consumers))
                points.append(Point(CONSUMER + "poll.idle.ratio.avg", min(max(ratio, 0.0), 1.0), False))
            self._idle = idle
            lags = [p.lag for c in consumers for p in c.lag if p.lag is not None]
            if lags:
                points.append(Point(CONSUMER + "fetch.manager.records.lag.max", max(lags), False))
            _avg_max(points, CONSUMER + "fetch.manager.fetch.latency", measures.fetch_latency)
            _avg_max(points, CONSUMER + "coordinator.commit.latency", measures.commit_latency)
            for node, measure in sorted(measures.fetch_node_latency.items()):
                _avg_max(points, CONSUMER + "node.request.latency", measure, (("node_id", str(node)),))
        return points


def selected(points: Sequence[Point], prefixes: Sequence[str]) -> list[Point]:
    """The points whose names begin with one of ``prefixes`` (KIP-714: ``""`` or ``"*"`` selects all)."""
    if any(prefix in ("", "*") for prefix in prefixes):
        return list(points)
    return [p for p in points if any(p.name.startswith(prefix) for prefix in prefixes)]
