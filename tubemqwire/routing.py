"""Which partition a message goes to.

Without a key, partitions take turns (round robin per topic, starting at a random place so that many
producers do not all start on the same one); a partition that failed recently is skipped while others
are available. With a key, the partition is CRC-32 of the key modulo the partition count, over the
partitions sorted by broker and partition id, so every producer with the same view sends a key to the
same partition.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Sequence

from mqwire.common.checksums import crc32
from tubemqwire.errors import TopicNoPartitionError
from tubemqwire.protocol.metadata import PartitionInfo

# How long a partition is avoided after a failed send, in seconds.
FAILURE_PENALTY = 3.0


def sort_partitions(partitions: Collection[PartitionInfo]) -> tuple[PartitionInfo, ...]:
    return tuple(sorted(partitions, key=lambda p: (p.broker.broker_id, p.partition_id)))


def key_index(key: bytes, count: int) -> int:
    return crc32(key) % count


class PartitionRouter:
    def __init__(self, *, rng: random.Random | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._rng = rng or random.Random()
        self._clock = clock
        self._counters: dict[str, int] = {}
        self._penalized: dict[str, float] = {}

    def choose(
        self,
        topic: str,
        partitions: Sequence[PartitionInfo],
        key: bytes | None = None,
        *,
        avoid: Collection[str] = (),
    ) -> PartitionInfo:
        """The partition for the next message of ``topic``; ``partitions`` must be sorted.

        ``avoid`` holds partition keys this message already failed on: they are skipped while any
        other partition remains. Keyed messages always go to their key's partition.
        """
        if not partitions:
            raise TopicNoPartitionError(f"topic {topic!r} has no partition to send to", code=444)
        count = len(partitions)
        if key is not None:
            return partitions[key_index(key, count)]
        start = self._counters.get(topic)
        if start is None:
            start = self._rng.randrange(count)
        now = self._clock()
        fallback = None
        for step in range(count):
            candidate = partitions[(start + step) % count]
            if candidate.key in avoid:
                continue
            if self._penalized.get(candidate.key, 0.0) > now:
                fallback = fallback or candidate
                continue
            self._counters[topic] = (start + step + 1) % count
            return candidate
        self._counters[topic] = (start + 1) % count
        if fallback is not None:
            return fallback
        # Every partition already failed for this message: go round again.
        return partitions[start % count]

    def penalize(self, partition: PartitionInfo, seconds: float = FAILURE_PENALTY) -> None:
        self._penalized[partition.key] = self._clock() + seconds
        if len(self._penalized) > 4096:
            now = self._clock()
            self._penalized = {k: v for k, v in self._penalized.items() if v > now}

    def forgive(self, partition: PartitionInfo) -> None:
        self._penalized.pop(partition.key, None)
