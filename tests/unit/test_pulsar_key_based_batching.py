"""Key-based batching: one batch per key in each window, the key on the batch, sequence ids kept in order."""

from __future__ import annotations

import asyncio

import pulsarwire
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.batch import decode_batch, decompress_payload
from pulsarwire.protocol.frames import Frame
from tests.unit.test_pulsar_client_flow import FakeBroker, add, started_producer

T = pb.BaseCommand.Type


def entries(frame: Frame) -> list[tuple[bytes, int | None]]:
    assert frame.metadata is not None and frame.payload is not None
    data = decompress_payload(frame.metadata.compression, frame.payload, frame.metadata.uncompressed_size, 1 << 24)
    return [(e.payload, e.sequence_id) for e in decode_batch(data, frame.metadata.num_messages_in_batch)]


async def test_a_window_leaves_as_one_batch_per_key_in_sequence_order() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batcher_builder="key_based", batching_max_messages=100)
    keys = [b"a", b"b", b"a", None, b"b", b"a"]
    futures = [add(producer, b"m%d" % n, key=key) for n, key in enumerate(keys)]
    futures.append(add(producer, b"m6", key=b"a", ordering_key=b"o"))  # the ordering key wins
    assert broker.current.sent_of(T.SEND) == []
    producer.flush_batch()
    sends = broker.current.sent_of(T.SEND)
    summary = []
    for frame in sends:
        metadata = frame.metadata
        assert metadata is not None
        key = metadata.partition_key if metadata.HasField("partition_key") else None
        ordering = metadata.ordering_key if metadata.HasField("ordering_key") else None
        body = frame.command.send
        summary.append((key, ordering, body.sequence_id, body.highest_sequence_id, body.num_messages, entries(frame)))
    assert summary == [
        ("a", None, 0, 5, 3, [(b"m0", 0), (b"m2", 2), (b"m5", 5)]),
        ("b", None, 1, 4, 2, [(b"m1", 1), (b"m4", 4)]),
        (None, None, 3, 3, 1, [(b"m3", 3)]),
        ("a", b"o", 6, 6, 1, [(b"m6", 6)]),
    ]
    # Receipts come in the order the batches were sent and complete each message with its index.
    for entry, frame in enumerate(sends):
        broker.current.receipt(producer.producer_id, frame.command.send.sequence_id, 4, entry)
    ids = [await future for future in futures]
    assert ids[0] == pulsarwire.MessageId(4, 0, 0, -1, 3)
    assert ids[5] == pulsarwire.MessageId(4, 0, 2, -1, 3)
    assert ids[1] == pulsarwire.MessageId(4, 1, 0, -1, 2)
    assert ids[3] == pulsarwire.MessageId(4, 2, 0, -1, 1)
    assert producer.pending_messages == 0


async def test_a_full_window_sends_every_key_and_a_timeout_fails_the_open_window_too() -> None:
    broker = FakeBroker()
    producer = await started_producer(broker, batcher_builder="key_based", batching_max_messages=4,
                                      send_timeout_ms=200)
    futures = [add(producer, b"m%d" % n, key=b"k%d" % (n % 2)) for n in range(4)]
    assert [f.command.send.num_messages for f in broker.current.sent_of(T.SEND)] == [2, 2]
    futures.append(add(producer, b"later", key=b"k9"))  # in the next window, not sent yet
    await asyncio.wait(futures, timeout=5)
    assert all(isinstance(f.exception(), pulsarwire.SendTimeoutError) for f in futures)
    assert producer.pending_messages == 0
    await producer.close()
