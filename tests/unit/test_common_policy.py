"""Backoff bounds and address rotation."""

from __future__ import annotations

import random

import pytest

from mqwire.common.policy import AddressRotation, Backoff


def test_backoff_stays_within_floor_and_cap() -> None:
    backoff = Backoff(initial=0.1, maximum=5.0, jitter=0.2, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(200)]
    assert all(0.1 * 0.8 <= d <= 5.0 for d in delays)
    assert max(delays[-50:]) == pytest.approx(5.0, rel=0.21)
    assert min(delays[-50:]) >= 5.0 * 0.8


def test_backoff_grows_then_resets() -> None:
    backoff = Backoff(initial=0.1, maximum=60.0, jitter=0.0)
    assert [backoff.next_delay() for _ in range(4)] == pytest.approx([0.1, 0.2, 0.4, 0.8])
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.1)


def test_backoff_never_overflows() -> None:
    backoff = Backoff(initial=0.1, maximum=2.0, jitter=0.0)
    for _ in range(5000):
        delay = backoff.next_delay()
    assert delay == 2.0


@pytest.mark.parametrize("kwargs", [{"initial": 0}, {"initial": 2, "maximum": 1}, {"multiplier": 0.5}, {"jitter": 1.0}])
def test_backoff_rejects_bad_options(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_rotation_cycles_and_prefers() -> None:
    rotation = AddressRotation([("a", 1), ("b", 2), ("c", 3)])
    assert rotation.current() == ("a", 1)
    assert [rotation.advance() for _ in range(4)] == [("b", 2), ("c", 3), ("a", 1), ("b", 2)]
    rotation.prefer(("c", 3))
    assert rotation.current() == ("c", 3)
    rotation.prefer(("d", 4))
    assert rotation.current() == ("d", 4)
    assert len(rotation) == 4


def test_rotation_needs_an_address() -> None:
    with pytest.raises(ValueError):
        AddressRotation([])
