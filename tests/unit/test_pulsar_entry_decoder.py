"""The sans-IO entry decoder: a stored entry's metadata and data in, messages out."""

from __future__ import annotations

from pulsarwire.batch_builder import BatchBuilder, batch_metadata
from pulsarwire.entry_decoder import decode_entry
from pulsarwire.protocol.batch import encode_entry_fast
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata

WHERE = {"topic": "t", "topic_name": "persistent://public/default/t", "partition": -1, "ledger": 7, "entry": 3,
         "redelivery": 0, "owner": None}


def a_batch(count: int) -> tuple[MessageMetadata, bytes]:
    builder: BatchBuilder[int] = BatchBuilder()
    for index in range(count):
        builder.add(encode_entry_fast(b"v%d" % index, b"", b"k", False, None, 0, 100 + index, False), index,
                    100 + index)
    batch = builder.take()
    assert batch is not None
    metadata = MessageMetadata.FromString(batch_metadata(batch, producer_name_field("p"), 1_700_000_000_000,
                                                         compression=0))
    return metadata, batch.payload


def test_a_single_message() -> None:
    metadata = MessageMetadata.FromString(
        encode_message_metadata(producer_name_field("p"), 5, 1_700_000_000_000, partition_key=b"key")
    )
    messages, skipped = decode_entry(metadata, b"payload", **WHERE)  # type: ignore[arg-type]
    assert skipped == 0 and len(messages) == 1
    message = messages[0]
    assert (message.value, message.partition_key, message.sequence_id, message.producer_name) == (
        b"payload", "key", 5, "p")
    assert tuple(message.message_id)[:3] == (7, 3, -1)


def test_a_batch_leaves_out_acknowledged_indexes_and_those_before_the_start() -> None:
    metadata, data = a_batch(5)
    messages, skipped = decode_entry(metadata, data, **WHERE)  # type: ignore[arg-type]
    assert ([m.value for m in messages], skipped) == ([b"v0", b"v1", b"v2", b"v3", b"v4"], 0)
    assert [m.sequence_id for m in messages] == [100, 101, 102, 103, 104]
    assert [m.message_id.batch_index for m in messages] == [0, 1, 2, 3, 4]
    # The broker's ack set: bits of the indexes still to deliver (here 1, 3 and 4); a reader starting at 3.
    messages, skipped = decode_entry(metadata, data, ack_set=0b11010, start=3, **WHERE)  # type: ignore[arg-type]
    assert ([m.value for m in messages], skipped) == ([b"v3", b"v4"], 3)


def test_an_encrypted_batch_is_one_message() -> None:
    metadata, _ = a_batch(4)
    messages, skipped = decode_entry(metadata, b"sealed", encrypted=True, **WHERE)  # type: ignore[arg-type]
    assert ([m.payload for m in messages], [m.encrypted for m in messages], skipped) == ([b"sealed"], [True], 3)
