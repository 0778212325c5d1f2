"""The partitioner matches the Java client's murmur2 partitioning and sticks to one partition per batch."""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkawire import partitioner
from kafkawire.partitioner import StickyPartitioner, murmur2, murmur2_py, partition_for_key_py

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))


def compiled() -> Any:
    return importlib.import_module("kafkawire._partitioner_speedups")


def test_the_extension_is_built_and_used() -> None:
    module = compiled()
    if not os.environ.get("MQWIRE_PURE_PYTHON"):
        assert partitioner.COMPILED
        assert partitioner.murmur2 is module.murmur2
        assert partitioner.partition_for_key is module.partition_for_key


HASHES = pytest.mark.parametrize("hash_of", [murmur2_py, compiled().murmur2], ids=["python", "compiled"])
PARTITIONS = pytest.mark.parametrize(
    "place", [partition_for_key_py, compiled().partition_for_key], ids=["python", "compiled"]
)

# Values returned by org.apache.kafka.common.utils.Utils.murmur2 for these UTF-8 keys.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"1": -1993445489,
    b"12": 126087238,
    b"123": -267702483,
    b"1234": -1614185708,
    b"12345": -1188365604,
}


@HASHES
@pytest.mark.parametrize(("key", "expected"), sorted(JAVA_MURMUR2.items()))
def test_murmur2_matches_java(hash_of: Callable[[bytes], int], key: bytes, expected: int) -> None:
    assert hash_of(key) == expected


@PARTITIONS
def test_partition_for_key_is_positive_hash_modulo_count(place: Callable[[bytes, int], int]) -> None:
    for key, hashed in JAVA_MURMUR2.items():
        for count in (1, 3, 7, 12, 100):
            assert place(key, count) == (hashed & 0x7FFFFFFF) % count
    # Known placements, as the Java client computes them for a 3-partition topic.
    assert place(b"foobar", 3) == (3504634814 & 0x7FFFFFFF) % 3


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 10_000))
def test_the_compiled_hash_and_partition_are_the_python_ones(key: bytes, partitions: int) -> None:
    assert compiled().murmur2(key) == murmur2_py(key)
    assert compiled().murmur2(bytearray(key)) == compiled().murmur2(memoryview(key)) == murmur2_py(key)
    assert compiled().partition_for_key(key, partitions) == partition_for_key_py(key, partitions)


@pytest.mark.parametrize("partitions", [0, -3, 2.0, "3", None])
def test_the_compiled_partition_refuses_and_answers_as_the_python_one(partitions: Any) -> None:
    outcomes = []
    for function in (partition_for_key_py, compiled().partition_for_key):
        try:
            outcomes.append(function(b"key", partitions))
        except Exception as exc:  # the same class of error, from the same Python % underneath
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("key", ["text", 5, None])
def test_the_compiled_hash_refuses_what_the_python_one_refuses(key: Any) -> None:
    for function in (murmur2_py, compiled().murmur2):
        with pytest.raises(TypeError):
            function(key)


def test_murmur2_agrees_with_kafka_python_on_random_keys() -> None:
    default = pytest.importorskip("kafka.partitioner.default")
    rng = random.Random(42)
    for length in range(0, 64):
        for _ in range(20):
            key = bytes(rng.getrandbits(8) for _ in range(length))
            assert murmur2(key) & 0xFFFFFFFF == default.murmur2(key) & 0xFFFFFFFF
    key = os.urandom(1000)
    assert murmur2(key) & 0xFFFFFFFF == default.murmur2(key) & 0xFFFFFFFF


def test_sticky_partition_holds_until_the_batch_is_done() -> None:
    sticky = StickyPartitioner()
    first = sticky.partition("t", 4)
    assert all(sticky.partition("t", 4) == first for _ in range(10))
    second = sticky.next_batch("t", 4, previous=first)
    assert second != first
    assert sticky.partition("t", 4) == second
    # A second caller reporting the same completed batch does not move the partition again.
    assert sticky.next_batch("t", 4, previous=first) == second


def test_sticky_partition_spreads_batches_over_all_partitions() -> None:
    sticky = StickyPartitioner()
    seen = {sticky.partition("t", 5)}
    current = sticky.partition("t", 5)
    for _ in range(20):
        current = sticky.next_batch("t", 5, previous=current)
        seen.add(current)
    assert seen == set(range(5))


def test_sticky_partition_prefers_partitions_with_a_leader() -> None:
    sticky = StickyPartitioner()
    current = sticky.partition("t", 6, available=[1, 4])
    assert current in (1, 4)
    for _ in range(10):
        current = sticky.next_batch("t", 6, available=[1, 4], previous=current)
        assert current in (1, 4)


def test_sticky_partition_follows_a_shrunk_view() -> None:
    sticky = StickyPartitioner()
    sticky._current["t"] = 7
    assert sticky.partition("t", 3) in range(3)
