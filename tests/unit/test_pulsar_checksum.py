"""A MESSAGE with a wrong checksum: not delivered, acknowledged with ChecksumMismatch, and the consumer goes on."""

from __future__ import annotations

import pytest

from mqwire.common.errors import ChecksumError
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.frames import decode_frame, encode_payload_frame_raw
from tests.unit.test_pulsar_client_flow import FakeBroker, acked, flows, metadata, started_consumer

T = pb.BaseCommand.Type


def message_frame(consumer_id: int, entry: int, payload: bytes, *, corrupt: bool) -> bytes:
    command = pb.BaseCommand(type=T.MESSAGE)
    command.message.consumer_id = consumer_id
    command.message.message_id.ledgerId = 7
    command.message.message_id.entryId = entry
    raw = bytearray(encode_payload_frame_raw(command.SerializeToString(), metadata().SerializeToString(), payload))
    if corrupt:
        raw[-1] ^= 0xFF  # a flipped payload byte
    return bytes(raw[4:])


def test_a_corrupt_message_decodes_flagged_without_metadata_or_payload() -> None:
    frame = decode_frame(message_frame(3, 1, b"payload", corrupt=True))
    assert frame.checksum_mismatch and frame.metadata is None and frame.payload is None
    assert frame.command.message.message_id.entryId == 1
    assert not decode_frame(message_frame(3, 1, b"payload", corrupt=False)).checksum_mismatch


def test_other_payload_frames_with_a_wrong_checksum_still_fail() -> None:
    command = pb.BaseCommand(type=T.SEND)
    command.send.producer_id, command.send.sequence_id = 1, 1
    raw = bytearray(encode_payload_frame_raw(command.SerializeToString(), metadata().SerializeToString(), b"x"))
    raw[-1] ^= 0xFF
    with pytest.raises(ChecksumError):
        decode_frame(bytes(raw[4:]))


async def test_the_consumer_rejects_the_corrupt_message_and_delivers_the_next() -> None:
    broker = FakeBroker()
    consumer, queue, failures = await started_consumer(broker, queue_size=2)
    connection = broker.current
    for entry, corrupt in ((1, True), (2, False)):
        frame = decode_frame(message_frame(consumer.consumer_id, entry, b"value-%d" % entry, corrupt=corrupt))
        connection.consumers[consumer.consumer_id](T.MESSAGE, frame.command.message, frame)
    message = queue.get_nowait()
    assert message is not None and message.value == b"value-2" and queue.get_nowait() is None
    [reject] = connection.sent_of(T.ACK)
    assert reject.command.ack.validation_error == pb.CommandAck.ChecksumMismatch
    assert acked(connection) == [(7, 1)]
    assert flows(connection) == [2, 1]  # the permit of the rejected message is given back
    assert failures == []
