"""An entry's payload as the consumer hands it to the decoder, without I/O: decrypted, then decompressed.

A payload whose metadata names encryption keys is decrypted with the consumer's
:class:`pulsarwire.crypto.MessageDecryptor`. When that fails, its ``crypto_failure_action`` decides, as in
the Java client: "CONSUME" delivers it still encrypted (and compressed: the keys travel with the message),
"FAIL" and "DISCARD" raise :class:`pulsarwire.errors.Undecryptable` and leave the entry to the consumer, which keeps it
unacknowledged or acknowledges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulsarwire.crypto import MessageDecryptor
from pulsarwire.errors import CryptoError, Undecryptable
from pulsarwire.protocol.batch import decompress_payload

__all__ = ["OpenedPayload", "open_payload"]


@dataclass(slots=True)
class OpenedPayload:
    """The entry's data for :func:`pulsarwire.entry_decoder.decode_entry`; ``encrypted`` when it was
    delivered still encrypted ("CONSUME")."""

    data: bytes
    encrypted: bool = False


def open_payload(
    metadata: Any,
    payload: bytes | memoryview,
    *,
    decryptor: MessageDecryptor | None,
    crypto_failure_action: str,
    max_uncompressed: int,
) -> OpenedPayload:
    """Decrypt (when the metadata names encryption keys) and decompress one entry's payload.

    ``metadata`` is its MessageMetadata; ``max_uncompressed`` bounds what a lying ``uncompressed_size``
    can make us allocate. Raises :class:`pulsarwire.errors.Undecryptable` (see the module) or ProtocolError (a corrupt
    compressed payload).
    """
    if len(metadata.encryption_keys):
        try:
            if decryptor is None:
                raise CryptoError("the message is encrypted and the consumer has no crypto_key_reader")
            payload = decryptor.decrypt(metadata, payload)
        except CryptoError as exc:
            if crypto_failure_action != "CONSUME":
                raise Undecryptable(str(exc)) from None
            return OpenedPayload(bytes(payload), encrypted=True)
    data = decompress_payload(metadata.compression, payload, metadata.uncompressed_size, max_uncompressed)
    return OpenedPayload(data)
