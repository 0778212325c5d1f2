"""Acknowledgement bit sets of a batch as large as a 5 MiB frame allows, built and consumed as bytes."""

from __future__ import annotations

import random

from pulsarwire.acks import BatchAcks, bits_of_words, bitset_words

# A 5 MiB frame of ack_set words.
WORDS = 5 * 1024 * 1024 // 8


def test_words_and_bits_round_trip_at_frame_size() -> None:
    rng = random.Random(7)
    words = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(WORDS)]
    words[-1] |= 1  # keep the last word non-zero, as a Java BitSet does
    bits = bits_of_words(words)
    assert bits.bit_length() > 64 * (WORDS - 1)
    assert bitset_words(bits) == words
    assert bitset_words(0) == [0]


def test_batch_acks_count_down_exactly_once() -> None:
    count = 200_000
    batch = BatchAcks()
    batch.expect((1 << count) - 1)
    assert not any(batch.ack(index) for index in range(0, count - 1, 2))
    assert not batch.ack(0)  # already acked
    assert batch.unacked == int.from_bytes(b"\xaa" * (count // 8), "little")  # the odd indexes
    assert not batch.ack_up_to(count - 3)
    assert batch.ack_up_to(count - 1)
    assert batch.complete and batch.unacked == 0
