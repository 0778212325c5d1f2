"""The transaction id on the wire: in the message metadata (the broker filters aborted messages by it), on SEND
and on a transactional ACK."""

from __future__ import annotations

import pytest

import pulsarwire
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata

MOST, LEAST = 3, (1 << 63) + 17


def test_metadata_carries_the_transaction_id() -> None:
    data = encode_message_metadata(producer_name_field("p"), 7, 1_700_000_000_000, txnid=(MOST, LEAST))
    parsed = MessageMetadata.FromString(data)
    assert (parsed.txnid_most_bits, parsed.txnid_least_bits) == (MOST, LEAST)
    plain = MessageMetadata.FromString(encode_message_metadata(producer_name_field("p"), 7, 1_700_000_000_000))
    assert not plain.HasField("txnid_most_bits") and not plain.HasField("txnid_least_bits")


def test_transaction_timeout_is_checked() -> None:
    client = pulsarwire.Client("pulsar://127.0.0.1:6650")
    with pytest.raises(ValueError, match="timeout_ms"):
        client.transaction(timeout_ms=10)
    with pytest.raises(TypeError, match="timeout_ms"):
        client.transaction(timeout_ms="60s")  # type: ignore[arg-type]
