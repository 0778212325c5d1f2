"""Timings kept for client telemetry: an average and a maximum per push interval.

The statistics (``mqwire.common.stats``) count what was sent and received; KIP-714's metrics also want
request, queue, fetch and commit latencies as the Java client measures them. One observation per request
or batch, never per record: a few attribute updates.
"""

from __future__ import annotations

__all__ = ["AvgMax", "ClientMeasures"]


class AvgMax:
    """Observations since the last ``take``: their count, sum and largest value (seconds)."""

    __slots__ = ("count", "largest", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.largest = 0.0

    def observe(self, seconds: float) -> None:
        """Add one observation."""
        self.count += 1
        self.total += seconds
        if seconds > self.largest:
            self.largest = seconds

    def take(self) -> tuple[float, float] | None:
        """``(average, maximum)`` in ms since the last take (None when nothing was observed), and start over."""
        if not self.count:
            return None
        result = (self.total / self.count * 1000.0, self.largest * 1000.0)
        self.count = 0
        self.total = 0.0
        self.largest = 0.0
        return result


class ClientMeasures:
    """What one client's producers and consumers time, shared through the client's ``Session``."""

    __slots__ = (
        "commit_latency",
        "fetch_latency",
        "fetch_node_latency",
        "poll_idle",
        "produce_node_latency",
        "record_queue_time",
    )

    def __init__(self) -> None:
        self.produce_node_latency: dict[int, AvgMax] = {}
        """Produce requests: from being written to their response, by broker."""
        self.record_queue_time = AvgMax()
        """A batch's time in the accumulator: from its first record to its produce request."""
        self.fetch_node_latency: dict[int, AvgMax] = {}
        """Fetch requests by broker."""
        self.fetch_latency = AvgMax()
        """Fetch requests of every broker."""
        self.commit_latency = AvgMax()
        """Offset commits, retries within one commit included."""
        self.poll_idle = 0.0
        """Seconds the consumers spent waiting inside a poll for records to arrive."""

    def produce_latency(self, node: int) -> AvgMax:
        """The produce request latency of broker ``node``."""
        found = self.produce_node_latency.get(node)
        if found is None:
            found = self.produce_node_latency[node] = AvgMax()
        return found

    def fetch_request(self, node: int, seconds: float) -> None:
        """One fetch request to ``node`` answered after ``seconds``."""
        found = self.fetch_node_latency.get(node)
        if found is None:
            found = self.fetch_node_latency[node] = AvgMax()
        found.observe(seconds)
        self.fetch_latency.observe(seconds)
