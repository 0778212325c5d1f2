"""The sans-IO batch builders: the bytes of batches, key-based batches and chunks, without a connection."""

from __future__ import annotations

import pytest

from pulsarwire.batch_builder import BatchBuilder, KeyBasedBatchBuilder, batch_metadata, split_chunks
from pulsarwire.protocol.batch import decode_batch, encode_entry_fast
from pulsarwire.protocol.metadata import producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata


def entry(value: bytes, sequence_id: int, key: bytes | None = None, ordering_key: bytes | None = None) -> bytes:
    return encode_entry_fast(value, b"", key, False, ordering_key, 0, sequence_id, False)


def test_a_batch_is_its_entries_in_order_with_their_sequence_ids() -> None:
    builder: BatchBuilder[str] = BatchBuilder()
    assert builder.take() is None
    entries = [entry(b"v%d" % i, 10 + i) for i in range(3)]
    for index, data in enumerate(entries):
        builder.add(data, f"item{index}", 10 + index)
    assert (len(builder), builder.size) == (3, sum(map(len, entries)))
    batch = builder.take()
    assert batch is not None
    assert batch.payload == b"".join(entries)
    assert (batch.items, batch.first, batch.last, batch.count) == (["item0", "item1", "item2"], 10, 12, 3)
    assert (len(builder), builder.size, builder.take()) == (0, 0, None)
    decoded = decode_batch(batch.payload, 3)
    assert [e.payload for e in decoded] == [b"v0", b"v1", b"v2"]
    metadata = MessageMetadata.FromString(
        batch_metadata(batch, producer_name_field("p"), 1_700_000_000_000, compression=0)
    )
    assert (metadata.sequence_id, metadata.highest_sequence_id, metadata.num_messages_in_batch) == (10, 12, 3)
    assert metadata.uncompressed_size == len(batch.payload) and not metadata.HasField("partition_key")


def test_key_based_batches_one_per_key_in_first_message_order() -> None:
    builder: KeyBasedBatchBuilder[int] = KeyBasedBatchBuilder()
    sent = [(b"b", None), (b"a", None), (b"b", None), (b"a", b"ord"), (None, None), (b"a", None)]
    for sequence_id, (key, ordering) in enumerate(sent):
        builder.add(entry(b"%d" % sequence_id, sequence_id, key, ordering), sequence_id, sequence_id, key, False,
                    ordering)
    assert len(builder) == 6
    batches = builder.take()
    assert len(builder) == 0 and builder.size == 0
    # By ordering key when there is one, else by partition key; each batch in the order of its first message.
    assert [(b.partition_key, b.ordering_key, b.items, b.first, b.last) for b in batches] == [
        (b"b", None, [0, 2], 0, 2),
        (b"a", None, [1, 5], 1, 5),
        (b"a", b"ord", [3], 3, 3),
        (None, None, [4], 4, 4),
    ]
    metadata = MessageMetadata.FromString(batch_metadata(batches[2], b"", 1, compression=0))
    assert (metadata.partition_key, metadata.ordering_key, metadata.num_messages_in_batch) == ("a", b"ord", 1)


def test_chunks_cover_the_body_exactly() -> None:
    body = bytes(range(256)) * 10
    pieces = split_chunks(body, 1000)
    assert [len(p) for p in pieces] == [1000, 1000, 560]
    assert b"".join(pieces) == body
    assert split_chunks(b"small", 1000) == [b"small"]
    with pytest.raises(ValueError, match="positive"):
        split_chunks(body, 0)
