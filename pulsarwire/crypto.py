"""End-to-end encryption as the Java client does it (``MessageCryptoBc``), over the ``cryptography`` package.

A producer encrypts each payload (after compression; a whole batch at once) with AES-256-GCM under a data
key of its own (a random 12-byte IV per message, a 128-bit tag), and sends that data key encrypted with
the RSA public key of every name in ``encryption_keys`` (RSA-OAEP with SHA-1 and MGF1-SHA-1) in the
metadata's ``encryption_keys``, the IV in ``encryption_param``. A consumer decrypts the data key with the
private key its ``crypto_key_reader`` gives for one of those names, caches it by the MD5 digest of the
encrypted key, and decrypts the payload. The data key is replaced every four hours, as in the Java client.

Keys are PEM: a public key as ``BEGIN PUBLIC KEY`` (or a certificate), a private key as PKCS#1 (``BEGIN
RSA PRIVATE KEY``, the form the Java client reads) or PKCS#8. Elliptic-curve keys (the Java client's
ECIES) are refused with a clear error.

Decrypting costs a bounded amount whatever a producer writes into the metadata: at most
:data:`MAX_KEYS_TRIED` key entries of a message are tried (the Java client tries every one), each private
key is parsed once and kept, and a key name the reader has no usable key for, or an encrypted data key that
no key opens, is remembered (a bounded number of them, a key name for :data:`FAILED_KEY_RETRY` seconds) and
not tried again.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqwire.common.errors import ConfigurationError
from pulsarwire.errors import CryptoError
from pulsarwire.protocol.pulsar_api_pb2 import EncryptionKeys, KeyValue
from pulsarwire.protocol.wire import LEN, length_delimited, tag

__all__ = ["CryptoKeyReader", "EncryptionKeyInfo", "MessageDecryptor", "MessageEncryptor"]

IV_LENGTH = 12
DATA_KEY_LIFETIME = 4 * 3600.0
# The key entries of one message that a consumer tries, in the order the producer wrote them.
MAX_KEYS_TRIED = 8
# How long a key name the reader had no usable key for is skipped (seconds).
FAILED_KEY_RETRY = 60.0
# How many data keys, parsed private keys and failures a consumer remembers (the oldest go first).
_CACHE_SIZE = 256
_ENCRYPTION_KEYS = tag(13, LEN)
_ENCRYPTION_PARAM = tag(15, LEN)


@dataclass(frozen=True)
class EncryptionKeyInfo:
    """A PEM key and the metadata sent along with the data key it encrypts (the Java ``EncryptionKeyInfo``)."""

    key: bytes
    metadata: Mapping[str, str] = field(default_factory=dict)


class CryptoKeyReader:
    """Gives the keys by name: by default the same public and private key files for every name (the Python
    client's ``CryptoKeyReader(public_key_path, private_key_path)``, the Java ``DefaultCryptoKeyReader``).

    Subclass and override ``get_public_key`` / ``get_private_key`` to choose keys by name or by the
    metadata the producer sent.
    """

    def __init__(self, public_key_path: str | None = None, private_key_path: str | None = None) -> None:
        self.public_key_path = public_key_path
        self.private_key_path = private_key_path

    def get_public_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        """The public key a producer encrypts the data key with for ``key_name``."""
        return EncryptionKeyInfo(_read("public", self.public_key_path, key_name))

    def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        """The private key a consumer decrypts the data key with for ``key_name``."""
        return EncryptionKeyInfo(_read("private", self.private_key_path, key_name))


def _read(kind: str, path: str | None, key_name: str) -> bytes:
    if path is None:
        raise CryptoError(f"no {kind} key for {key_name!r}: the crypto_key_reader has no {kind} key path")
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise CryptoError(f"cannot read the {kind} key for {key_name!r}: {exc}") from None


def _require() -> None:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ConfigurationError("end-to-end encryption needs the cryptography package "
                                 "(pip install 'mqwire[crypto]')") from None


def _oaep() -> Any:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    return padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)


def _rsa_public(pem: bytes, key_name: str) -> Any:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        if b"CERTIFICATE" in pem:
            key: Any = x509.load_pem_x509_certificate(pem).public_key()
        else:
            key = serialization.load_pem_public_key(pem)
    except ValueError as exc:
        raise CryptoError(f"the public key for {key_name!r} is not a PEM public key: {exc}") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise CryptoError(f"the public key for {key_name!r} is {type(key).__name__}; only RSA keys are supported")
    return key


def _rsa_private(pem: bytes, key_name: str) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"the private key for {key_name!r} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CryptoError(f"the private key for {key_name!r} is {type(key).__name__}; only RSA keys are supported")
    return key


def _aesgcm(key: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


class MessageEncryptor:
    """A producer's side: encrypts payloads and gives the metadata fields to send with them."""

    def __init__(self, key_names: list[str], reader: CryptoKeyReader) -> None:
        _require()
        if not key_names:
            raise ValueError("option encryption_keys must name at least one key")
        self.key_names = list(key_names)
        self.reader = reader
        self._cipher: Any = None
        self._keys_field = b""
        self._made_at = -DATA_KEY_LIFETIME

    def _new_data_key(self) -> None:
        data_key = os.urandom(32)
        fields = []
        for name in self.key_names:
            try:
                info = self.reader.get_public_key(name, {})
            except CryptoError:
                raise
            except Exception as exc:
                raise CryptoError(f"the crypto_key_reader failed on public key {name!r}: {exc}") from exc
            encrypted = _rsa_public(info.key, name).encrypt(data_key, _oaep())
            keys = EncryptionKeys(key=name, value=encrypted,
                                  metadata=[KeyValue(key=k, value=v) for k, v in info.metadata.items()])
            fields.append(length_delimited(_ENCRYPTION_KEYS, keys.SerializeToString()))
        self._cipher = _aesgcm(data_key)
        self._keys_field = b"".join(fields)
        self._made_at = time.monotonic()

    def encrypt(self, payload: bytes) -> tuple[bytes, bytes]:
        """The encrypted payload, and the metadata fields (encryption_keys, encryption_param) to send it with."""
        if time.monotonic() - self._made_at >= DATA_KEY_LIFETIME:
            self._new_data_key()
        iv = os.urandom(IV_LENGTH)
        return self._cipher.encrypt(iv, payload, None), self._keys_field + length_delimited(_ENCRYPTION_PARAM, iv)


class _Bounded(OrderedDict[Any, Any]):
    """A dict that forgets its oldest entries beyond ``_CACHE_SIZE``."""

    def remember(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _CACHE_SIZE:
            self.popitem(last=False)


class MessageDecryptor:
    """A consumer's side: decrypts payloads with data keys found through the crypto_key_reader, cached."""

    def __init__(self, reader: CryptoKeyReader) -> None:
        _require()
        self.reader = reader
        # MD5 of an encrypted data key -> its cipher, or the reason no key opened it.
        self._ciphers: _Bounded = _Bounded()
        self._unopened: _Bounded = _Bounded()
        # PEM -> parsed private key; (key name, metadata) -> (when the reader failed on it, why).
        self._private: _Bounded = _Bounded()
        self._failed_names: _Bounded = _Bounded()

    def ready(self, metadata: Any) -> bool:
        """Whether ``decrypt`` needs no key look-up nor RSA operation for this message (all cached).

        The consumer calls :meth:`prepare` off the event loop first when it does.
        """
        for keys in metadata.encryption_keys[:MAX_KEYS_TRIED]:
            digest = hashlib.md5(keys.value, usedforsecurity=False).digest()
            if digest in self._ciphers:
                return True
            if digest not in self._unopened:
                return False
        return True

    def prepare(self, metadata: Any) -> None:
        """Open the data key of a message as ``decrypt`` would, caching the outcome; runs in a worker thread.

        The reader's ``get_private_key``, parsing the key and the RSA decryption happen here, so that
        ``decrypt`` then only runs AES-GCM. Failures are cached and reported by ``decrypt``.
        """
        for keys in metadata.encryption_keys[:MAX_KEYS_TRIED]:
            digest = hashlib.md5(keys.value, usedforsecurity=False).digest()
            if digest in self._ciphers:
                return
            if digest in self._unopened:
                continue
            try:
                cipher = self._data_key(keys)
            except CryptoError as exc:
                self._unopened.remember(digest, str(exc))
                continue
            self._ciphers.remember(digest, cipher)
            return

    def decrypt(self, metadata: Any, payload: bytes | memoryview) -> bytes:
        """The payload of a message whose MessageMetadata names encryption keys; CryptoError when it cannot.

        Only the first :data:`MAX_KEYS_TRIED` key entries are tried.
        """
        iv = bytes(metadata.encryption_param)
        data = bytes(payload)
        errors = []
        entries = metadata.encryption_keys
        for keys in entries[:MAX_KEYS_TRIED]:
            digest = hashlib.md5(keys.value, usedforsecurity=False).digest()
            cipher = self._ciphers.get(digest)
            if cipher is None:
                known = self._unopened.get(digest)
                if known is not None:
                    errors.append(known)
                    continue
                try:
                    cipher = self._data_key(keys)
                except CryptoError as exc:
                    errors.append(str(exc))
                    self._unopened.remember(digest, str(exc))
                    continue
                self._ciphers.remember(digest, cipher)
            try:
                return bytes(cipher.decrypt(iv, data, None))
            except Exception as exc:  # InvalidTag: another key, or a corrupt payload
                errors.append(f"key {keys.key!r}: {type(exc).__name__}")
        if len(entries) > MAX_KEYS_TRIED:
            errors.append(f"{len(entries) - MAX_KEYS_TRIED} more key entries not tried")
        raise CryptoError("cannot decrypt the message: " + ("; ".join(errors) or "it names no encryption key"))

    def _private_key(self, name: str, metadata: Mapping[str, str]) -> Any:
        # A reader may choose the key by the metadata too: a failure counts for that pair only.
        asked = (name, tuple(sorted(metadata.items())))
        failed = self._failed_names.get(asked)
        if failed is not None and time.monotonic() - failed[0] < FAILED_KEY_RETRY:
            raise CryptoError(failed[1])
        try:
            try:
                info = self.reader.get_private_key(name, metadata)
            except CryptoError:
                raise
            except Exception as exc:
                raise CryptoError(f"the crypto_key_reader failed on private key {name!r}: {exc}") from exc
            key = self._private.get(info.key)
            if key is None:
                key = _rsa_private(info.key, name)
                self._private.remember(info.key, key)
        except CryptoError as exc:
            self._failed_names.remember(asked, (time.monotonic(), str(exc)))
            raise
        return key

    def _data_key(self, keys: Any) -> Any:
        metadata = {kv.key: kv.value for kv in keys.metadata}
        private = self._private_key(keys.key, metadata)
        try:
            data_key = private.decrypt(bytes(keys.value), _oaep())
        except ValueError as exc:
            raise CryptoError(f"the private key {keys.key!r} does not open the data key: {exc}") from None
        return _aesgcm(data_key)
