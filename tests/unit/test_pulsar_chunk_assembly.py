"""The sans-IO consumer side: joining chunks (with the consumer's limits) and opening encrypted payloads."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import pulsarwire
from mqwire.common.errors import ProtocolError
from pulsarwire.chunks import COMPLETE, DROPPED, DUPLICATE, INCOMPLETE, ChunkAssembler
from pulsarwire.crypto import MessageDecryptor, MessageEncryptor
from pulsarwire.entry_payload import OpenedPayload, open_payload
from pulsarwire.errors import Undecryptable
from pulsarwire.message_encoder import MessageEncoder, OutgoingMessage
from pulsarwire.protocol.frames import decode_frame
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata


# ---------------------------------------------------------------------------------------------- joining
def test_chunks_in_order_make_the_message_with_its_positions() -> None:
    chunks = ChunkAssembler()
    first = chunks.offer("u", 0, 3, 9, (1, 1), b"abc", 0.0)
    assert (first.outcome, first.dropped, len(chunks)) == (INCOMPLETE, [], 1)
    assert chunks.offer("u", 1, 3, 9, (1, 2), b"def", 1.0).outcome == INCOMPLETE
    done = chunks.offer("u", 2, 3, 9, (1, 3), b"ghi", 2.0)
    assert (done.outcome, done.payload, done.positions, done.dropped) == (
        COMPLETE, b"abcdefghi", [(1, 1), (1, 2), (1, 3)], [])
    assert len(chunks) == 0


def test_a_duplicate_chunk_is_given_up_alone_and_the_message_still_completes() -> None:
    chunks = ChunkAssembler()
    chunks.offer("u", 0, 2, 4, (1, 1), b"ab", 0.0)
    restart = chunks.offer("u", 0, 2, 4, (1, 2), b"ab", 0.0)
    # A first chunk again is the producer starting over: the old run is given up, the new one kept.
    assert (restart.outcome, restart.dropped) == (INCOMPLETE, [(1, 1)])
    again = chunks.offer("u", 1, 2, 4, (1, 3), b"cd", 0.0)
    assert again.outcome == COMPLETE and again.positions == [(1, 2), (1, 3)]
    chunks.offer("v", 0, 3, 6, (2, 1), b"ab", 0.0)
    chunks.offer("v", 1, 3, 6, (2, 2), b"cd", 0.0)
    repeated = chunks.offer("v", 1, 3, 6, (2, 3), b"cd", 0.0)
    assert (repeated.outcome, repeated.dropped) == (DUPLICATE, [(2, 3)])
    last = chunks.offer("v", 2, 3, 6, (2, 4), b"ef", 0.0)
    assert (last.outcome, last.payload, last.positions) == (COMPLETE, b"abcdef", [(2, 1), (2, 2), (2, 4)])


def test_out_of_order_and_missing_chunks_drop_the_message() -> None:
    chunks = ChunkAssembler()
    orphan = chunks.offer("u", 1, 2, 4, (1, 2), b"cd", 0.0)  # before its first chunk
    assert (orphan.outcome, orphan.dropped, len(chunks)) == (DROPPED, [(1, 2)], 0)
    chunks.offer("v", 0, 3, 6, (2, 1), b"ab", 0.0)
    gap = chunks.offer("v", 2, 3, 6, (2, 3), b"ef", 0.0)  # chunk 1 missing
    assert (gap.outcome, gap.dropped, len(chunks)) == (DROPPED, [(2, 1), (2, 3)], 0)
    assert chunks.offer("v", 1, 3, 6, (2, 2), b"cd", 0.0).outcome == DROPPED  # too late: the message is gone
    chunks.offer("w", 0, 3, 6, (3, 1), b"ab", 0.0)
    changed = chunks.offer("w", 1, 4, 6, (3, 2), b"cd", 0.0)  # a different number of chunks
    assert (changed.outcome, changed.dropped) == (DROPPED, [(3, 1), (3, 2)])


def test_declarations_that_do_not_add_up_drop_the_message() -> None:
    chunks = ChunkAssembler(max_size=100)
    for chunk_count, total in ((1, 4), (2, 0), (2, 101)):
        result = chunks.offer("u", 0, chunk_count, total, (1, 1), b"ab", 0.0)
        assert (result.outcome, result.dropped) == (DROPPED, [(1, 1)])
    chunks.offer("v", 0, 2, 3, (2, 1), b"ab", 0.0)
    oversize = chunks.offer("v", 1, 2, 3, (2, 2), b"cd", 0.0)  # 4 bytes where 3 were declared
    assert (oversize.outcome, oversize.dropped, len(chunks)) == (DROPPED, [(2, 1), (2, 2)], 0)


def test_too_many_open_messages_give_up_the_oldest() -> None:
    chunks = ChunkAssembler(max_pending=2)
    chunks.offer("a", 0, 2, 4, (1, 1), b"ab", 0.0)
    chunks.offer("b", 0, 2, 4, (2, 1), b"ab", 0.0)
    third = chunks.offer("c", 0, 2, 4, (3, 1), b"ab", 0.0)
    assert (third.outcome, third.evicted, third.dropped, len(chunks)) == (INCOMPLETE, ["a"], [(1, 1)], 2)
    assert chunks.offer("a", 1, 2, 4, (1, 2), b"cd", 0.0).outcome == DROPPED
    assert chunks.offer("b", 1, 2, 4, (2, 2), b"cd", 0.0).outcome == COMPLETE


def test_an_incomplete_message_expires() -> None:
    chunks = ChunkAssembler(expire_after=60.0)
    chunks.offer("old", 0, 2, 4, (1, 1), b"ab", 0.0)
    chunks.offer("new", 0, 2, 4, (2, 1), b"ab", 30.0)
    assert chunks.expire(59.9) == []
    later = chunks.offer("new", 1, 2, 4, (2, 2), b"cd", 60.0)
    assert (later.outcome, later.expired, later.dropped) == (COMPLETE, ["old"], [(1, 1)])
    chunks.offer("x", 0, 2, 4, (3, 1), b"ab", 100.0)
    dropped: list[tuple[int, int]] = []
    assert chunks.expire(160.0, dropped) == ["x"] and dropped == [(3, 1)] and len(chunks) == 0


def test_the_encoder_chunks_join_back_whatever_order_duplicates_come_in() -> None:
    encoder = MessageEncoder(1, chunking_enabled=True, chunk_max_message_size=64)
    body = bytes(range(200))
    frames = [decode_frame(frame[4:]) for frame in encoder.encode_message(
        OutgoingMessage(body), 0, producer_name_field("p"), 1, 5000, chunk_uuid="u").frames]
    chunks = ChunkAssembler()
    results = []
    for entry, frame in enumerate(frames + frames[-1:]):  # the last chunk stored twice
        metadata = frame.metadata
        assert metadata is not None and frame.payload is not None
        results.append(chunks.offer(metadata.uuid, metadata.chunk_id, metadata.num_chunks_from_msg,
                                    metadata.total_chunk_msg_size, (5, entry), bytes(frame.payload), 0.0))
    assert [r.outcome for r in results] == [INCOMPLETE, INCOMPLETE, INCOMPLETE, COMPLETE, DROPPED]
    assert results[3].payload == body and results[3].positions == [(5, 0), (5, 1), (5, 2), (5, 3)]


# ------------------------------------------------------------------------------------------- decryption
@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    folder: Path = tmp_path_factory.mktemp("keys")
    paths = []
    for name in ("right", "wrong"):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public, private = folder / f"{name}.pub.pem", folder / f"{name}.pem"
        public.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        private.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
        paths += [str(public), str(private)]
    return paths[0], paths[1], paths[3]


def sealed(public: str, value: bytes) -> tuple[MessageMetadata, bytes]:
    """An encrypted, ZLIB-compressed single message as a producer sends it."""
    encryptor = MessageEncryptor(["app"], pulsarwire.CryptoKeyReader(public))
    body, fields = encryptor.encrypt(zlib.compress(value))
    metadata = encode_message_metadata(producer_name_field("p"), 0, 1, compression=2, uncompressed_size=len(value),
                                       encryption=fields)
    return MessageMetadata.FromString(metadata), body


def test_a_payload_is_decrypted_then_decompressed(keys: tuple[str, str, str]) -> None:
    public, private, _ = keys
    metadata, body = sealed(public, b"hello " * 50)
    decryptor = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=private))
    opened = open_payload(metadata, body, decryptor=decryptor, crypto_failure_action="FAIL", max_uncompressed=1 << 20)
    assert opened == OpenedPayload(b"hello " * 50, encrypted=False)
    plain = MessageMetadata.FromString(encode_message_metadata(producer_name_field("p"), 0, 1, compression=2,
                                                               uncompressed_size=3))
    assert open_payload(plain, zlib.compress(b"abc"), decryptor=None, crypto_failure_action="FAIL",
                        max_uncompressed=100).data == b"abc"
    with pytest.raises(ProtocolError):
        open_payload(plain, b"not zlib", decryptor=None, crypto_failure_action="FAIL", max_uncompressed=100)


@pytest.mark.parametrize("action", ["FAIL", "DISCARD"])
def test_an_undecryptable_payload_is_refused_under_fail_and_discard(keys: tuple[str, str, str], action: str) -> None:
    public, _, wrong_private = keys
    metadata, body = sealed(public, b"secret")
    with pytest.raises(Undecryptable, match="no crypto_key_reader"):
        open_payload(metadata, body, decryptor=None, crypto_failure_action=action, max_uncompressed=100)
    wrong = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=wrong_private))
    with pytest.raises(Undecryptable):
        open_payload(metadata, body, decryptor=wrong, crypto_failure_action=action, max_uncompressed=100)
    no_key = MessageDecryptor(pulsarwire.CryptoKeyReader())
    with pytest.raises(Undecryptable, match="private key"):
        open_payload(metadata, body, decryptor=no_key, crypto_failure_action=action, max_uncompressed=100)


def test_an_undecryptable_payload_is_delivered_as_it_came_under_consume(keys: tuple[str, str, str]) -> None:
    public, _, wrong_private = keys
    metadata, body = sealed(public, b"secret")
    wrong = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=wrong_private))
    for decryptor in (None, wrong):
        opened = open_payload(metadata, memoryview(body), decryptor=decryptor, crypto_failure_action="CONSUME",
                              max_uncompressed=100)
        assert opened == OpenedPayload(body, encrypted=True)  # still encrypted and still compressed
