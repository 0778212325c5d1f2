"""The options bounding what a broker or a producer can make the clients hold are checked at construction.

A fetch budget of 0 or below, or not an int, and a Pulsar frame limit or memory limit out of range, fail
when the consumer or client is made, naming the option: never later, deep in a fetch or a frame.
"""

from __future__ import annotations

from typing import Any

import pytest

import kafkawire
import pulsarwire
from kafkawire.protocol.records import RecordBatchTooLargeError


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-1, ValueError), (1 << 31, ValueError), (1.5, TypeError), ("64", TypeError), (True, TypeError)],
)
def test_a_bad_fetch_max_decompressed_bytes_is_refused(value: Any, error: type[Exception]) -> None:
    client = kafkawire.connect("kafka://127.0.0.1:1")
    with pytest.raises(error, match="fetch_max_decompressed_bytes"):
        client.consumer("t", fetch_max_decompressed_bytes=value)


@pytest.mark.parametrize("option", ["max_message_size", "memory_limit_bytes"])
@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (1 << 63, ValueError), (2.5, TypeError), ("8", TypeError), (None, TypeError)]
)
def test_a_bad_pulsar_limit_is_refused(option: str, value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=option):
        pulsarwire.Client("pulsar://127.0.0.1:1", **{option: value})


def test_a_pulsar_frame_limit_below_one_kib_is_refused() -> None:
    with pytest.raises(ValueError, match="max_message_size"):
        pulsarwire.Client("pulsar://127.0.0.1:1", max_message_size=0)


def test_the_batch_budget_error_is_one_of_kafkawire_errors() -> None:
    assert kafkawire.RecordBatchTooLargeError is RecordBatchTooLargeError
    assert kafkawire.errors.RecordBatchTooLargeError is RecordBatchTooLargeError
    assert "RecordBatchTooLargeError" in kafkawire.__all__
    assert issubclass(RecordBatchTooLargeError, kafkawire.ProtocolError)
