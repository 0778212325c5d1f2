"""A tubemqwire run with a username and password: neither the password nor the signature made from it
appears in any log line, repr or error. (The local master does not check signatures; the client still
signs its registrations, so the secrets are in play on every path that could leak them.)"""

from __future__ import annotations

import asyncio
import logging
import secrets

import pytest

import tubemqwire
from mqwire.testing.endpoints import TubeMQBroker
from tests.secret_scan import remember_secret
from tubemqwire import auth

pytestmark = pytest.mark.integration

TOPIC = "handshake"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)
PASSWORD = str(remember_secret("tube-" + secrets.token_hex(8)))


async def test_no_password_or_signature_in_logs_or_reprs(
    tubemq_broker: TubeMQBroker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    signatures: list[str] = []
    real_signature = auth.signature

    def recording_signature(user: str, password: str, timestamp_ms: int, nonce: int) -> str:
        signatures.append(real_signature(user, password, timestamp_ms, nonce))
        return signatures[-1]

    monkeypatch.setattr(auth, "signature", recording_signature)
    prefix = f"secret-run-{secrets.token_hex(4)}-".encode()
    shown: list[str] = []
    async with (
        tubemqwire.connect(tubemq_broker.url, username="mqwire", password=PASSWORD) as client,
        client.producer(TOPIC) as producer,
        client.consumer(TOPIC, group=f"secrets_{secrets.token_hex(3)}", start="latest") as consumer,
    ):
        async with asyncio.timeout(90):
            while True:
                await producer.send(prefix + b"x")
                try:
                    message = await consumer.getone(timeout=3)
                except TimeoutError:
                    continue
                await consumer.ack(message)
                if message.value.startswith(prefix):
                    break
        shown += [repr(client), str(client), repr(producer), repr(consumer), repr(message)]
    with pytest.raises(ValueError) as caught:
        tubemqwire.connect(tubemq_broker.url, password=PASSWORD)  # a password without a user is refused
    shown += [str(caught.value), repr(caught.value)]
    assert signatures, "the client never signed a request: the check would be empty"
    logged = "\n".join(f"{record.getMessage()} {record.args!r}" for record in caplog.records)
    assert logged, "the run logged nothing at DEBUG: the check would be empty"
    for secret in [PASSWORD, *signatures]:
        assert secret not in logged
        assert not any(secret in text for text in shown)
