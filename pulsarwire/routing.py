"""Which partition a message goes to: key hashing as the Java client does it, round robin otherwise.

A keyed message goes to ``hash(partition_key) % partitions``, with the hash cut to 31 bits:

- ``java_string_hash``: Java's ``String.hashCode`` (over UTF-16 code units), the Java client's default.
  The C++ and Go clients hash the UTF-8 bytes instead, which agrees only for ASCII keys.
- ``murmur3_32``: MurmurHash3 x86 32-bit with seed 0 over the UTF-8 bytes.

Messages without a key rotate over the partitions; with batching, the rotation moves on once per batching
window rather than per message, as the Java client does, so that batches stay full.
"""

from __future__ import annotations

import functools
import random
import sys
import time
from array import array
from collections.abc import Callable

_MASK32 = 0xFFFFFFFF
_MASK31 = 0x7FFFFFFF

HASHING_SCHEMES = ("java_string_hash", "murmur3_32")
ROUTING_MODES = ("round_robin", "single_partition")

MessageRouter = Callable[[str | None, int], int]


def java_string_hash(key: str) -> int:
    """Java's ``key.hashCode() & Integer.MAX_VALUE``."""
    value = 0
    units: bytes | array[int]
    if key.isascii():
        units = key.encode()
    else:
        units = array("H", key.encode("utf-16-le"))
        if sys.byteorder == "big":
            units.byteswap()
    for unit in units:
        value = (31 * value + unit) & _MASK32
    return value & _MASK31


def _rotl(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (32 - shift))) & _MASK32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (unsigned)."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & _MASK32
    length = len(data)
    whole = length - length % 4
    for offset in range(0, whole, 4):
        k = int.from_bytes(data[offset : offset + 4], "little")
        k = (_rotl((k * c1) & _MASK32, 15) * c2) & _MASK32
        h = (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _MASK32
    tail = data[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= (_rotl((k * c1) & _MASK32, 15) * c2) & _MASK32
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def murmur3_32_hash(key: str) -> int:
    """The Java client's ``Murmur3_32Hash``: murmur3_32 of the UTF-8 bytes, cut to 31 bits."""
    return murmur3_32(key.encode()) & _MASK31


# Keys repeat (customer ids, device ids): remembering recent hashes spares the pure-Python loops.
_HASHES: dict[str, Callable[[str], int]] = {
    "java_string_hash": functools.lru_cache(maxsize=8192)(java_string_hash),
    "murmur3_32": functools.lru_cache(maxsize=8192)(murmur3_32_hash),
}


def hash_function(scheme: str) -> Callable[[str], int]:
    try:
        return _HASHES[scheme]
    except KeyError:
        raise ValueError(f"option hashing_scheme must be one of {HASHING_SCHEMES}, got {scheme!r}") from None


class PartitionRouter:
    """Chooses a partition for each message of a partitioned topic."""

    __slots__ = ("_batching", "_hash", "_index", "_mode", "_router", "_start", "_switch_ms")

    def __init__(
        self,
        *,
        mode: str = "round_robin",
        hashing_scheme: str = "java_string_hash",
        batching: bool = True,
        partition_switch_ms: float = 10.0,
        router: MessageRouter | None = None,
    ) -> None:
        if mode not in ROUTING_MODES:
            raise ValueError(f"option message_routing_mode must be one of {ROUTING_MODES}, got {mode!r}")
        self._mode = mode
        self._hash = hash_function(hashing_scheme)
        self._batching = batching
        self._switch_ms = max(1.0, partition_switch_ms)
        self._router = router
        # A random start spreads the producers of many processes over the partitions.
        self._start = random.randrange(1 << 16)
        self._index = self._start

    def choose(self, partition_key: str | None, partitions: int) -> int:
        if self._router is not None:
            chosen = self._router(partition_key, partitions)
            if not isinstance(chosen, int) or not 0 <= chosen < partitions:
                raise ValueError(f"message_router returned {chosen!r} for a topic of {partitions} partitions")
            return chosen
        if partition_key is not None:
            return self._hash(partition_key) % partitions
        if self._mode == "single_partition":
            return self._start % partitions
        if self._batching:
            return (int(time.time() * 1000 / self._switch_ms) + self._start) % partitions
        index = self._index
        self._index = index + 1
        return index % partitions
