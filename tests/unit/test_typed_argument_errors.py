"""Bad arguments and malformed headers raise the library's own typed errors, never a bare ValueError, TypeError
or OverflowError: TubeMQ names and attributes, Kafka timestamps past int64, bulk calls of a batch whose offsets
pass int64, and a batch header whose last offset delta does.

ConfigurationError is a ValueError and OptionTypeError a TypeError, so code that caught those goes on working.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

import kafkawire
from kafkawire.accumulator import Accumulator
from kafkawire.bulk import BulkSend
from kafkawire.protocol.records import BatchBuilder, decode_batches
from mqwire.common.errors import ConfigurationError, OptionTypeError, ProtocolError
from tubemqwire.names import check_group, check_msg_types, check_topic, check_topics
from tubemqwire.protocol.messages import format_attributes

INT64_MAX = 2**63 - 1


# ------------------------------------------------------------------------------------------------ TubeMQ
@pytest.mark.parametrize("bad", ["1orders", "o", "or-ders", "x" * 300, ""])
def test_an_invalid_tubemq_topic_is_a_configuration_error(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="topic"):
        check_topic(bad)
    with pytest.raises(ConfigurationError, match="topics"):
        check_topics([bad], "topics")


@pytest.mark.parametrize("bad", [5, b"orders", None])
def test_a_tubemq_topic_that_is_no_str_is_an_option_type_error(bad: object) -> None:
    with pytest.raises(OptionTypeError, match="topic must be a str") as caught:
        check_topic(bad)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ConfigurationError)


def test_tubemq_groups_and_message_type_filters_are_checked_with_typed_errors() -> None:
    with pytest.raises(ConfigurationError, match="group"):
        check_group("-g")
    with pytest.raises(OptionTypeError, match="group"):
        check_group(7)
    with pytest.raises(ConfigurationError, match="msg_types"):
        check_msg_types(["a,b"])
    with pytest.raises(OptionTypeError, match="msg_types"):
        check_msg_types(5)
    with pytest.raises(ConfigurationError, match="at least one"):
        check_topics([])


@pytest.mark.parametrize(
    ("attributes", "msg_type", "named"),
    [
        ({"a,b": "v"}, None, "attribute key"),
        ({"k": "v=w"}, None, "attribute value"),
        ({"k": "$msgType$x"}, None, "reserved"),
        ({" ": "v"}, None, "blank"),
        (None, "a=b", "msg_type"),
        (None, "x" * 300, "msg_type"),
    ],
)
def test_tubemq_attributes_the_format_cannot_carry_are_configuration_errors(
    attributes: dict[str, str] | None, msg_type: str | None, named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named):
        format_attributes(attributes, msg_type=msg_type)


# ------------------------------------------------------------------------------------------------- Kafka
def producer() -> kafkawire.Producer:
    return kafkawire.connect("kafka://127.0.0.1:1").producer()


@pytest.mark.parametrize("timestamp_ms", [2**70, INT64_MAX + 1, -1, -(2**63)])
async def test_a_timestamp_outside_int64_or_negative_is_refused_at_the_call(timestamp_ms: int) -> None:
    # Checked before the topic's partitions are looked up: no broker listens here, yet the call fails at once
    # with the typed error rather than an OverflowError from the encoder.
    sender = producer()
    with pytest.raises(ConfigurationError, match=r"timestamp_ms .* out of range"):
        await asyncio.wait_for(sender.enqueue(b"v", timestamp_ms=timestamp_ms, topic="t"), 5)
    with pytest.raises(ConfigurationError, match=r"timestamp_ms .* out of range"):
        await asyncio.wait_for(sender.enqueue_many([b"v", b"w"], timestamp_ms=timestamp_ms, topic="t"), 5)
    assert sender.stats().buffered_bytes == 0
    await sender.close()


async def test_a_timestamp_of_another_type_is_an_option_type_error() -> None:
    sender = producer()
    with pytest.raises(OptionTypeError, match="timestamp_ms"):
        await sender.enqueue_many([b"v"], timestamp_ms=1.5, topic="t")  # type: ignore[arg-type]
    await sender.close()


def accumulator() -> Accumulator:
    return Accumulator(
        batch_size=16384,
        linger=0.005,
        compression=None,
        buffer_memory=1 << 20,
        delivery_timeout=120.0,
        max_request_size=1 << 20,
    )


@pytest.mark.parametrize("base_offset", [INT64_MAX - 1, INT64_MAX])
async def test_bulk_calls_of_a_batch_past_int64_fail_with_the_batch(base_offset: int) -> None:
    acc = accumulator()
    call = BulkSend(3, asyncio.get_running_loop())
    assert acc.append_many("t", 0, 1000, None, [b"a", b"b", b"c"], None, range(3), 0, 3, call) == 3
    (batch,) = acc.queued()
    batch.complete(base_offset)  # three records from there: the last one's offset passes int64
    with pytest.raises(ProtocolError, match="past int64"):
        call.future.result()
    assert batch.outcome.error is call.future.exception()
    assert batch.outcome.settled and batch.closed


async def test_bulk_calls_of_a_batch_within_int64_get_their_offsets() -> None:
    acc = accumulator()
    call = BulkSend(3, asyncio.get_running_loop())
    acc.append_many("t", 0, 1000, None, [b"a", b"b", b"c"], None, range(3), 0, 3, call)
    (batch,) = acc.queued()
    batch.complete(INT64_MAX - 2)
    assert [record.offset for record in call.future.result()] == [INT64_MAX - 2, INT64_MAX - 1, INT64_MAX]


def batch_bytes(base_offset: int, last_offset_delta: int) -> bytes:
    """One batch of one record, with its header's base offset and last offset delta as given."""
    builder = BatchBuilder()
    builder.append(1000, None, b"v", ())
    raw = bytearray(builder.build(base_offset=0))
    struct.pack_into(">q", raw, 0, base_offset)
    struct.pack_into(">i", raw, 23, last_offset_delta)  # after offset, length, epoch, magic, crc, attributes
    return bytes(raw)


@pytest.mark.parametrize(
    ("base_offset", "last_offset_delta"), [(INT64_MAX, 0), (INT64_MAX - 5, 5), (INT64_MAX - 1, 2**31 - 1)]
)
def test_a_header_whose_last_offset_delta_passes_int64_is_refused(base_offset: int, last_offset_delta: int) -> None:
    with pytest.raises(ProtocolError, match="past int64"):
        decode_batches(batch_bytes(base_offset, last_offset_delta), verify_crc=False)


def test_a_header_ending_just_inside_int64_decodes() -> None:
    (batch,) = decode_batches(batch_bytes(INT64_MAX - 6, 5), verify_crc=False)
    assert batch.next_offset == INT64_MAX
