"""Decrypting a message costs a bounded number of key look-ups and RSA operations, whatever it names.

The review's message: 300 bogus key entries, each read and parsed the key file again and ran one RSA
decrypt on the event loop (9.7 s); a 5 MiB message fits about 19,800 of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import pulsarwire
from pulsarwire import crypto
from pulsarwire.crypto import MAX_KEYS_TRIED, EncryptionKeyInfo, MessageDecryptor, MessageEncryptor
from pulsarwire.errors import CryptoError
from pulsarwire.protocol.pulsar_api_pb2 import EncryptionKeys, MessageMetadata
from tests.unit.test_pulsar_crypto import key_files, sealed


class CountingReader(pulsarwire.CryptoKeyReader):
    """The default reader, counting the private keys asked of it."""

    def __init__(self, private_key_path: str) -> None:
        super().__init__(private_key_path=private_key_path)
        self.asked = 0

    def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        self.asked += 1
        return super().get_private_key(key_name, metadata)


class RsaCount:
    """Counts private keys parsed and RSA decryptions done with them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed = 0
        self.decrypted = 0
        real = crypto._rsa_private
        count = self

        class Counted:
            def __init__(self, key: Any) -> None:
                self.key = key

            def decrypt(self, data: bytes, padding: Any) -> bytes:
                count.decrypted += 1
                result: bytes = self.key.decrypt(data, padding)
                return result

        def parse(pem: bytes, key_name: str) -> Any:
            self.parsed += 1
            return Counted(real(pem, key_name))

        monkeypatch.setattr(crypto, "_rsa_private", parse)


def bogus_message(entries: int) -> tuple[MessageMetadata, bytes]:
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, encryption_param=os.urandom(12))
    metadata.encryption_keys.extend(EncryptionKeys(key="app-key", value=os.urandom(256)) for _ in range(entries))
    return metadata, os.urandom(64)


def test_bogus_key_entries_cost_a_bounded_number_of_rsa_operations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    public, private = key_files(tmp_path)
    reader = CountingReader(private)
    counts = RsaCount(monkeypatch)
    decryptor = MessageDecryptor(reader)
    metadata, body = bogus_message(300)
    with pytest.raises(CryptoError, match="not tried"):
        decryptor.decrypt(metadata, body)
    assert counts.decrypted == MAX_KEYS_TRIED
    assert counts.parsed == 1  # the key file parsed once
    assert reader.asked <= MAX_KEYS_TRIED
    # The same entries again: remembered as opened by no key, no RSA operation at all.
    with pytest.raises(CryptoError):
        decryptor.decrypt(metadata, body)
    assert counts.decrypted == MAX_KEYS_TRIED
    assert counts.parsed == 1
    # A real message still opens, with the key parsed before.
    encryptor = MessageEncryptor(["app-key"], pulsarwire.CryptoKeyReader(public))
    assert decryptor.decrypt(*sealed(encryptor, b"hello")) == b"hello"
    assert counts.parsed == 1


def test_a_key_name_without_a_key_is_not_asked_again(tmp_path: Path) -> None:
    class Missing(pulsarwire.CryptoKeyReader):
        asked = 0

        def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
            Missing.asked += 1
            raise CryptoError(f"no key {key_name!r}")

    decryptor = MessageDecryptor(Missing())
    for _ in range(50):
        with pytest.raises(CryptoError):
            decryptor.decrypt(*bogus_message(3))
    assert Missing.asked == 1
