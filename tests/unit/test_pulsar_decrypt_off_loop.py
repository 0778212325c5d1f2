"""Opening a message's data key (the reader, parsing the private key, RSA) runs in a worker thread, in order.

An RSA-2048 decryption takes about a millisecond and parsing a key more; on the event loop they stall
every connection of the process. The entries after one whose key is being opened wait behind it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path

import pulsarwire
from pulsarwire.crypto import EncryptionKeyInfo, MessageEncryptor
from tests.unit.test_pulsar_client_flow import FakeBroker, metadata, started_consumer
from tests.unit.test_pulsar_crypto import key_files, sealed


class ThreadReader(pulsarwire.CryptoKeyReader):
    """The default reader, noting the thread each private key is asked in."""

    def __init__(self, private_key_path: str) -> None:
        super().__init__(private_key_path=private_key_path)
        self.threads: list[int] = []

    def get_private_key(self, key_name: str, metadata: Mapping[str, str]) -> EncryptionKeyInfo:
        self.threads.append(threading.get_ident())
        return super().get_private_key(key_name, metadata)


async def test_the_data_key_is_opened_off_the_event_loop_and_order_is_kept(tmp_path: Path) -> None:
    public, private = key_files(tmp_path)
    encryptor = MessageEncryptor(["app-key"], pulsarwire.CryptoKeyReader(public))
    reader = ThreadReader(private)
    broker = FakeBroker()
    consumer, queue, failures = await started_consumer(broker, crypto_key_reader=reader)
    first, second = sealed(encryptor, b"secret-0"), sealed(encryptor, b"secret-1")
    broker.current.message(consumer.consumer_id, 1, 1, *first)
    broker.current.message(consumer.consumer_id, 1, 2, metadata(), b"plain")
    broker.current.message(consumer.consumer_id, 1, 3, *second)
    # Nothing yet: the first entry waits for its key and the others wait behind it.
    assert queue.get_nowait() is None
    values = []
    for _ in range(3):
        message = await queue.get(timeout=5)
        values.append(message.value)
    assert values == [b"secret-0", b"plain", b"secret-1"]
    assert reader.threads and threading.get_ident() not in reader.threads
    assert len(reader.threads) == 1  # the second message's data key was cached
    # With the key known, the next message is decrypted at once, on the loop (AES only).
    broker.current.message(consumer.consumer_id, 1, 4, *sealed(encryptor, b"secret-2"))
    now = queue.get_nowait()
    assert now is not None and now.value == b"secret-2"
    assert failures == []
    await consumer.close()


async def test_a_reconnection_drops_what_waited_for_a_key(tmp_path: Path) -> None:
    public, private = key_files(tmp_path)
    encryptor = MessageEncryptor(["app-key"], pulsarwire.CryptoKeyReader(public))
    broker = FakeBroker()
    consumer, queue, _ = await started_consumer(broker, crypto_key_reader=ThreadReader(private))
    broker.current.message(consumer.consumer_id, 1, 1, *sealed(encryptor, b"old"))
    broker.current.drop()
    for _ in range(200):
        if len(broker.connections) > 1 and consumer.connection is not None and not broker.current.closed:
            break
        await asyncio.sleep(0.01)
    broker.current.message(consumer.consumer_id, 1, 1, *sealed(encryptor, b"again"))
    message = await queue.get(timeout=5)
    assert message.value == b"again"
    await asyncio.sleep(0.05)
    assert queue.get_nowait() is None  # the copy from the old session was not delivered
    await consumer.close()
