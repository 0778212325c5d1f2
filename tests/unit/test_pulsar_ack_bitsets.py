"""Acknowledgement bit sets of a batch as large as a 5 MiB frame allows, built and consumed as bytes."""

from __future__ import annotations

import random

from pulsarwire.acks import BatchAcks, bits_of_words, bitset_words
from pulsarwire.entry_decoder import decode_entry
from pulsarwire.topic_consumer import _bits
from tests.unit.test_pulsar_entry_decoder import WHERE, a_batch

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


# ------------------------------------------------------------------------------------- linear work
class QuadraticWork(Exception):
    """Raised once the integer work done exceeds the linear allowance of a test."""


class CountingInt(int):
    """An int that adds the bits of every operand of its bitwise and shift operations to a shared tally.

    Results are CountingInts again, so a bit set grown one operation at a time stays counted; past the
    allowance it raises at once, so the quadratic code fails quickly instead of running for minutes.
    """

    tally = 0
    allowance = 0

    def _count(self, other: object, result: int) -> CountingInt:
        other_bits = other.bit_length() if isinstance(other, int) else 0
        CountingInt.tally += self.bit_length() + other_bits + result.bit_length()
        if CountingInt.tally > CountingInt.allowance:
            raise QuadraticWork(f"{CountingInt.tally} bits processed, allowed {CountingInt.allowance}")
        return CountingInt(result)

    def __and__(self, other: int) -> CountingInt:
        return self._count(other, int(self) & other)

    __rand__ = __and__

    def __or__(self, other: int) -> CountingInt:
        return self._count(other, int(self) | other)

    __ror__ = __or__

    def __xor__(self, other: int) -> CountingInt:
        return self._count(other, int(self) ^ other)

    __rxor__ = __xor__

    def __invert__(self) -> CountingInt:
        return self._count(0, ~int(self))

    def __lshift__(self, other: int) -> CountingInt:
        return self._count(other, int(self) << other)

    def __rshift__(self, other: int) -> CountingInt:
        return self._count(other, int(self) >> other)


def counting(allowance: int) -> None:
    CountingInt.tally, CountingInt.allowance = 0, allowance


def test_a_frame_of_ack_set_words_is_read_with_linear_work() -> None:
    # Building one integer by or-ing each word in at its place processes 64 * i bits for word i: for a
    # 5 MiB frame of words that is about 10**13 bits. Linear work is a few times the 64 * WORDS bits.
    rng = random.Random(11)
    words = [CountingInt(rng.randrange(-(1 << 63), 1 << 63)) for _ in range(WORDS)]
    counting(8 * 64 * WORDS)
    bits = _bits(words)
    assert bits.bit_length() > 64 * (WORDS - 1) or words[-1] == 0
    assert CountingInt.tally <= 8 * 64 * WORDS


def test_acking_every_message_of_a_large_batch_is_linear() -> None:
    # Clearing one bit of an n-bit integer per ack processes n bits each time: n**2 in all.
    count = 200_000
    batch = BatchAcks()
    batch.expect(CountingInt((1 << count) - 1))
    counting(16 * count)
    for index in range(count - 1):
        assert not batch.ack(index)
    assert batch.ack(count - 1)
    assert CountingInt.tally <= 16 * count


def test_a_received_ack_set_is_applied_to_a_large_batch_with_linear_work() -> None:
    # Testing bit i of the received ack_set by shifting it right i places is quadratic in the batch.
    count = 50_000
    metadata, data = a_batch(count)
    ack_set = CountingInt(int.from_bytes(b"\x55" * (count // 8), "little"))  # the even indexes remain
    counting(16 * count)
    messages, skipped = decode_entry(metadata, data, ack_set=ack_set, **WHERE)  # type: ignore[arg-type]
    assert [m.message_id.batch_index for m in messages] == list(range(0, count, 2))
    assert skipped == count // 2
    assert CountingInt.tally <= 16 * count
