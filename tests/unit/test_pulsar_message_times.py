"""Event and delivery times a Pulsar producer takes: what Java reads as a long, and nothing it would read wrong."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pulsarwire.producer import _millis


def test_milliseconds_and_datetimes_up_to_the_largest_long_are_taken() -> None:
    assert _millis("event_time", 0) == 0
    assert _millis("event_time", 2**63 - 1) == 2**63 - 1
    assert _millis("event_time", datetime(2024, 5, 6, tzinfo=UTC)) == 1_714_953_600_000


@pytest.mark.parametrize("value", [-1, 2**63, 2**64, datetime(1969, 12, 31, tzinfo=UTC)])
def test_times_java_would_read_wrong_are_refused_by_name(value: int | datetime) -> None:
    with pytest.raises(ValueError, match="event_time"):
        _millis("event_time", value)


@pytest.mark.parametrize("value", [True, 1.5, "1"])
def test_other_types_are_refused_by_name(value: object) -> None:
    with pytest.raises(TypeError, match="deliver_at"):
        _millis("deliver_at", value)  # type: ignore[arg-type]
