"""Message crypto without a broker: what the producer writes into the metadata, and what the consumer makes of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import pulsarwire
from pulsarwire.crypto import MessageDecryptor, MessageEncryptor
from pulsarwire.errors import CryptoError
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import MessageMetadata


def key_files(tmp_path: Path, name: str = "k") -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public, private = tmp_path / f"{name}.pub.pem", tmp_path / f"{name}.pem"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return str(public), str(private)


def sealed(encryptor: MessageEncryptor, payload: bytes) -> tuple[MessageMetadata, bytes]:
    body, fields = encryptor.encrypt(payload)
    metadata = encode_message_metadata(producer_name_field("p"), 0, 1, encryption=fields)
    return MessageMetadata.FromString(metadata), body


def test_metadata_names_the_key_and_carries_the_iv_and_the_payload_decrypts(tmp_path: Path) -> None:
    public, private = key_files(tmp_path)
    encryptor = MessageEncryptor(["app-key"], pulsarwire.CryptoKeyReader(public))
    metadata, body = sealed(encryptor, b"hello")
    assert [k.key for k in metadata.encryption_keys] == ["app-key"]
    assert len(metadata.encryption_keys[0].value) == 256  # the data key under RSA-2048
    assert len(metadata.encryption_param) == 12
    assert len(body) == len(b"hello") + 16  # AES-GCM: the text and a 16-byte tag
    decryptor = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=private))
    assert decryptor.decrypt(metadata, body) == b"hello"
    other, body2 = sealed(encryptor, b"hello")
    assert other.encryption_param != metadata.encryption_param and body2 != body  # a fresh IV per message
    assert decryptor.decrypt(other, body2) == b"hello"


def test_wrong_key_corrupt_payload_and_elliptic_keys_are_crypto_errors(tmp_path: Path) -> None:
    public, private = key_files(tmp_path, "a")
    _, other_private = key_files(tmp_path, "b")
    metadata, body = sealed(MessageEncryptor(["a"], pulsarwire.CryptoKeyReader(public)), b"hello")
    with pytest.raises(CryptoError, match="does not open"):
        MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=other_private)).decrypt(metadata, body)
    right = MessageDecryptor(pulsarwire.CryptoKeyReader(private_key_path=private))
    with pytest.raises(CryptoError, match="InvalidTag"):
        right.decrypt(metadata, body[:-1] + bytes([body[-1] ^ 1]))  # the GCM tag catches a changed byte
    assert right.decrypt(metadata, body) == b"hello"
    ec_key = tmp_path / "ec.pub.pem"
    ec_key.write_bytes(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(CryptoError, match="only RSA"):
        MessageEncryptor(["e"], pulsarwire.CryptoKeyReader(str(ec_key))).encrypt(b"x")


def test_options_are_checked(tmp_path: Path) -> None:
    client = pulsarwire.Client("pulsar://127.0.0.1:6650")
    with pytest.raises(ValueError, match="crypto_key_reader"):
        client.producer("t", encryption_keys=["k"])
    with pytest.raises(TypeError, match="encryption_keys"):
        client.producer("t", encryption_keys="k", crypto_key_reader=pulsarwire.CryptoKeyReader())  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="chunking_enabled"):
        client.producer("t", encryption_keys=["k"], crypto_key_reader=pulsarwire.CryptoKeyReader(),
                        chunking_enabled=True, batching_enabled=False)
    with pytest.raises(ValueError, match="crypto_failure_action"):
        client.consumer("t", group="g", crypto_failure_action="IGNORE")
    with pytest.raises(TypeError, match="crypto_key_reader"):
        client.consumer("t", group="g", crypto_key_reader="keys.pem")  # type: ignore[typeddict-item]
