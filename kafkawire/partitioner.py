"""Which partition a record goes to, the way the Java client decides it.

Keyed records: ``murmur2(key) & 0x7fffffff`` modulo the partition count, so records with the same key land
on the same partition as they would from any Java, librdkafka ("murmur2_random") or kafka-python producer.
Unkeyed records stick to one partition until its batch is complete, then move on to the next one, so
batches fill up instead of every partition getting a trickle (KIP-480).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from mqwire.common.speedups import load_speedups

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2_py(data: bytes) -> int:
    """The 32-bit murmur2 hash Kafka uses, as the signed int Java returns (the reference for the compiled one)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length // 4
    for k in struct.unpack_from(f"<{words}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        base = length - tail
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key_py(key: bytes, partitions: int) -> int:
    """The partition of a keyed record among ``partitions`` partitions (Java's default partitioner)."""
    return (murmur2_py(key) & 0x7FFFFFFF) % partitions


# The compiled hash (built with the package when a C compiler is present; MQWIRE_PURE_PYTHON=1 forces the
# Python one): the producer hashes every keyed record.
_speedups = load_speedups("kafkawire._partitioner_speedups")
murmur2: Callable[[bytes], int] = murmur2_py if _speedups is None else _speedups.murmur2
partition_for_key: Callable[[bytes, int], int] = (
    partition_for_key_py if _speedups is None else _speedups.partition_for_key
)
COMPILED = _speedups is not None


class StickyPartitioner:
    """The partition for unkeyed records of each topic, changed when the current one's batch is done."""

    __slots__ = ("_counter", "_current", "current")

    def __init__(self, start: int = 0) -> None:
        self._current: dict[str, int] = {}
        # The sticky partition of each topic, read directly by the producer's per-record path (may be stale:
        # ``partition`` checks it against the partition count).
        self.current = self._current
        self._counter = start

    def partition(self, topic: str, partitions: int, available: Sequence[int] = ()) -> int:
        current = self._current.get(topic)
        if current is None or current >= partitions:
            current = self._choose(partitions, available, None)
            self._current[topic] = current
        return current

    def next_batch(self, topic: str, partitions: int, available: Sequence[int] = (), previous: int = -1) -> int:
        """Move on after the batch of ``previous`` was completed; returns the new sticky partition."""
        current = self._current.get(topic)
        if current is not None and current != previous and current < partitions:
            return current  # someone else already moved on
        chosen = self._choose(partitions, available, previous)
        self._current[topic] = chosen
        return chosen

    def _choose(self, partitions: int, available: Sequence[int], previous: int | None) -> int:
        # Round robin over partitions that have a leader, falling back to all of them.
        candidates = available if available else range(partitions)
        self._counter += 1
        chosen = candidates[self._counter % len(candidates)]
        if chosen == previous and len(candidates) > 1:
            self._counter += 1
            chosen = candidates[self._counter % len(candidates)]
        return chosen
