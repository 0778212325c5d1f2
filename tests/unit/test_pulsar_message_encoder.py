"""The sans-IO message encoder: the exact SEND frames of a message sent whole, in chunks, or of a batch."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import pulsarwire
from pulsarwire.batch_builder import BatchBuilder, batch_metadata
from pulsarwire.crypto import MessageDecryptor, MessageEncryptor
from pulsarwire.errors import CryptoError, MessageTooBigError
from pulsarwire.message_encoder import CHUNK_HEADROOM, MessageEncoder, OutgoingMessage, chunk_size
from pulsarwire.protocol.batch import encode_entry_fast
from pulsarwire.protocol.frames import Frame, decode_frame, encode_payload_frame
from pulsarwire.protocol.metadata import producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, KeyValue, MessageMetadata

NAME = producer_name_field("p")
PUBLISH = 1_700_000_000_000
PRODUCER_ID = 7


def decoded(frame: bytes) -> Frame:
    """A frame as the broker reads it (after its 4-byte total size, which must be right)."""
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    return decode_frame(frame[4:])


def expected_frame(sequence_id: int, payload: bytes, *, is_chunk: bool = False, **metadata: object) -> bytes:
    """The frame built independently, from protobuf objects."""
    command = BaseCommand(type=BaseCommand.SEND)
    command.send.producer_id = PRODUCER_ID
    command.send.sequence_id = sequence_id
    if is_chunk:
        command.send.is_chunk = True
    fields = MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=PUBLISH, **metadata)
    return encode_payload_frame(command, fields, payload)


# ------------------------------------------------------------------------------------------- sent whole
def test_a_message_below_the_limit_is_one_frame_with_exact_bytes() -> None:
    encoder = MessageEncoder(PRODUCER_ID)
    message = OutgoingMessage(b"hello", [(b"a", b"1")], partition_key=b"key", event_time=42)
    encoded = encoder.encode_message(message, 3, NAME, PUBLISH, 1000)
    assert encoded.unencrypted is None
    assert encoded.frames == [expected_frame(
        3, b"hello", properties=[KeyValue(key="a", value="1")], partition_key="key", uncompressed_size=5,
        event_time=42,
    )]


def test_ordering_key_delivery_time_null_value_and_transaction_are_carried() -> None:
    message = OutgoingMessage(b"", None, ordering_key=b"o", deliver_at=PUBLISH + 5000, null_value=True, txn=(1, 2))
    (frame,) = MessageEncoder(PRODUCER_ID).encode_message(message, 0, NAME, PUBLISH, 1000).frames
    parsed = decoded(frame)
    assert (parsed.command.send.txnid_most_bits, parsed.command.send.txnid_least_bits) == (1, 2)
    metadata = parsed.metadata
    assert metadata is not None
    assert (metadata.ordering_key, metadata.deliver_at_time, metadata.null_value) == (b"o", PUBLISH + 5000, True)
    assert (metadata.txnid_most_bits, metadata.txnid_least_bits) == (1, 2)


def test_without_chunking_a_message_above_the_broker_maximum_fails() -> None:
    encoder = MessageEncoder(PRODUCER_ID)
    assert len(encoder.encode_message(OutgoingMessage(b"x" * 100), 0, NAME, PUBLISH, 100).frames) == 1
    with pytest.raises(MessageTooBigError, match="message of 101 bytes exceeds the broker's maximum of 100"):
        encoder.encode_message(OutgoingMessage(b"x" * 101), 0, NAME, PUBLISH, 100)


def test_the_size_that_counts_is_the_compressed_one() -> None:
    value = bytes(10_000)
    encoder = MessageEncoder(PRODUCER_ID, compression=2)  # ZLIB
    (frame,) = encoder.encode_message(OutgoingMessage(value), 0, NAME, PUBLISH, 1000).frames
    parsed = decoded(frame)
    assert parsed.metadata is not None and parsed.payload is not None
    assert (parsed.metadata.compression, parsed.metadata.uncompressed_size) == (2, 10_000)
    assert zlib.decompress(bytes(parsed.payload)) == value


# ------------------------------------------------------------------------------------------------ chunks
def chunks_of(size: int, chunk_max: int | None = 100, max_message_size: int = 5000) -> list[Frame]:
    encoder = MessageEncoder(PRODUCER_ID, chunking_enabled=True, chunk_max_message_size=chunk_max)
    body = bytes(index % 251 for index in range(size))
    encoded = encoder.encode_message(OutgoingMessage(body), 9, NAME, PUBLISH, max_message_size, chunk_uuid="u-9")
    frames = [decoded(frame) for frame in encoded.frames]
    assert b"".join(bytes(frame.payload or b"") for frame in frames) == body
    return frames


@pytest.mark.parametrize(("size", "pieces"), [(1, [1]), (99, [99]), (100, [100]), (101, [100, 1]),
                                               (199, [100, 99]), (200, [100, 100]), (201, [100, 100, 1])])
def test_chunk_sizes_at_and_around_the_boundary(size: int, pieces: list[int]) -> None:
    frames = chunks_of(size)
    assert [len(frame.payload or b"") for frame in frames] == pieces
    if len(pieces) == 1:
        # At most the chunk size: sent whole, no chunk fields.
        metadata = frames[0].metadata
        assert metadata is not None and not frames[0].command.send.is_chunk
        assert not metadata.HasField("uuid") and not metadata.HasField("num_chunks_from_msg")
        return
    for chunk_id, frame in enumerate(frames):
        metadata = frame.metadata
        assert metadata is not None
        assert frame.command.send.is_chunk and frame.command.send.sequence_id == 9
        assert (metadata.uuid, metadata.chunk_id, metadata.num_chunks_from_msg, metadata.total_chunk_msg_size) == (
            "u-9", chunk_id, len(pieces), size)
        assert (metadata.sequence_id, metadata.uncompressed_size) == (9, size)


def test_a_chunk_frame_has_exact_bytes() -> None:
    encoder = MessageEncoder(PRODUCER_ID, chunking_enabled=True, chunk_max_message_size=4)
    frames = encoder.encode_message(OutgoingMessage(b"abcdefghij", partition_key=b"k"), 5, NAME, PUBLISH, 5000,
                                    chunk_uuid="p-5-0a0b0c0d").frames
    pieces = [b"abcd", b"efgh", b"ij"]
    assert frames == [
        expected_frame(5, piece, is_chunk=True, partition_key="k", uncompressed_size=10, uuid="p-5-0a0b0c0d",
                       chunk_id=chunk_id, num_chunks_from_msg=3, total_chunk_msg_size=10)
        for chunk_id, piece in enumerate(pieces)
    ]


def test_the_chunk_size_leaves_room_for_command_and_metadata() -> None:
    assert (chunk_size(5000, None), chunk_size(5000, 100), chunk_size(5000, 10_000)) == (
        5000 - CHUNK_HEADROOM, 100, 5000 - CHUNK_HEADROOM)
    # No chunk_max_message_size: chunks only above the broker's maximum, each of its maximum less the headroom.
    assert [len(frame.payload or b"") for frame in chunks_of(2048, None, 2048)] == [2048]
    assert [len(frame.payload or b"") for frame in chunks_of(2049, None, 2048)] == [1024, 1024, 1]


def test_chunks_share_the_transaction_and_the_default_uuid_names_producer_and_sequence() -> None:
    encoder = MessageEncoder(PRODUCER_ID, chunking_enabled=True, chunk_max_message_size=10)
    frames = [decoded(frame) for frame in encoder.encode_message(
        OutgoingMessage(b"x" * 25, txn=(3, 4)), 12, NAME, PUBLISH, 5000, producer_label="prod").frames]
    uuids = {frame.metadata.uuid for frame in frames if frame.metadata is not None}
    assert len(frames) == 3 and len(uuids) == 1
    assert re.fullmatch(r"prod-12-[0-9a-f]{8}", uuids.pop())
    assert all((f.command.send.txnid_most_bits, f.command.send.txnid_least_bits) == (3, 4) for f in frames)


# ------------------------------------------------------------------------------------------------ batches
def test_a_batch_frame_has_exact_bytes_and_its_size_is_checked() -> None:
    builder: BatchBuilder[int] = BatchBuilder()
    for index in range(3):
        builder.add(encode_entry_fast(b"v%d" % index, b"", None, False, None, 0, 20 + index, False), index, 20 + index)
    batch = builder.take()
    assert batch is not None
    (frame,) = MessageEncoder(PRODUCER_ID).encode_batch(batch, NAME, PUBLISH, 1000).frames
    command = BaseCommand(type=BaseCommand.SEND)
    command.send.producer_id, command.send.sequence_id = PRODUCER_ID, 20
    command.send.num_messages, command.send.highest_sequence_id = 3, 22
    metadata = MessageMetadata.FromString(batch_metadata(batch, NAME, PUBLISH, compression=0))
    assert frame == encode_payload_frame(command, metadata, batch.payload)
    with pytest.raises(MessageTooBigError, match=f"batch of {len(batch.payload)} bytes exceeds"):
        MessageEncoder(PRODUCER_ID).encode_batch(batch, NAME, PUBLISH, len(batch.payload) - 1)


# --------------------------------------------------------------------------------------------- encryption
def key_files(tmp_path: Path) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public, private = tmp_path / "k.pub.pem", tmp_path / "k.pem"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return str(public), str(private)


def test_an_encrypted_message_is_compressed_then_sealed(tmp_path: Path) -> None:
    public, private = key_files(tmp_path)
    encryptor = MessageEncryptor(["app"], pulsarwire.CryptoKeyReader(public))
    encoder = MessageEncoder(PRODUCER_ID, compression=2, encryptor=encryptor)
    value = b"secret " * 100
    (frame,) = encoder.encode_message(OutgoingMessage(value), 0, NAME, PUBLISH, 5000).frames
    parsed = decoded(frame)
    assert parsed.metadata is not None and parsed.payload is not None
    assert [k.key for k in parsed.metadata.encryption_keys] == ["app"] and len(parsed.metadata.encryption_param) == 12
    assert b"secret" not in bytes(parsed.payload)
    opened = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=private)).decrypt(parsed.metadata,
                                                                                            parsed.payload)
    assert zlib.decompress(opened) == value


def test_an_encryption_failure_fails_or_sends_unencrypted_as_configured() -> None:
    no_key = MessageEncryptor(["app"], pulsarwire.CryptoKeyReader())  # no public key path
    failing = MessageEncoder(PRODUCER_ID, encryptor=no_key)
    with pytest.raises(CryptoError, match="public key"):
        failing.encode_message(OutgoingMessage(b"x"), 0, NAME, PUBLISH, 5000)
    builder: BatchBuilder[int] = BatchBuilder()
    builder.add(encode_entry_fast(b"v", b"", None, False, None, 0, 0, False), 0, 0)
    batch = builder.take()
    assert batch is not None
    with pytest.raises(CryptoError, match="public key"):
        failing.encode_batch(batch, NAME, PUBLISH, 5000)
    sending = MessageEncoder(PRODUCER_ID, encryptor=no_key, crypto_failure_action="SEND")
    encoded = sending.encode_message(OutgoingMessage(b"x"), 0, NAME, PUBLISH, 5000)
    assert isinstance(encoded.unencrypted, CryptoError)
    assert encoded.frames == [expected_frame(0, b"x", uncompressed_size=1)]
    assert sending.encode_batch(batch, NAME, PUBLISH, 5000).unencrypted is not None
