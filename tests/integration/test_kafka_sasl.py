"""kafkawire with SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) on the broker's SASL_PLAINTEXT listener."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from typing import Any

import pytest

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER
from tests.integration.faultproxy import FaultProxy

pytestmark = pytest.mark.integration


def sasl_url(broker: KafkaBroker) -> str:
    assert broker.sasl_port is not None, "the launcher did not open a SASL listener"
    return f"kafka://{broker.host}:{broker.sasl_port}"


def unsecured_jwt() -> str:
    """A token the broker's default (unsecured) OAUTHBEARER validator accepts: no signature, a subject."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': SASL_USER, 'iat': now, 'exp': now + 3600})}."


# A refused login is answered in well under a second; a client that kept retrying it until its request
# timeout would take REFUSAL_TIMEOUT_MS. The bound between them is a liveness bound, generous for a loaded
# machine, not a speed requirement.
REFUSAL_TIMEOUT_MS = 120_000
REFUSAL_BOUND = 30.0


def options(mechanism: str, password: str = SASL_PASSWORD) -> dict[str, Any]:
    if mechanism == "OAUTHBEARER":
        return {"sasl_mechanism": mechanism, "sasl_oauth_token_provider": unsecured_jwt}
    return {"sasl_mechanism": mechanism, "sasl_plain_username": SASL_USER, "sasl_plain_password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
async def test_round_trip_with_each_mechanism(kafka_broker: KafkaBroker, mechanism: str) -> None:
    topic = f"kw-sasl-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(sasl_url(kafka_broker), **options(mechanism)) as client:
        async with client.producer(topic) as producer:
            await producer.send(b"hello over " + mechanism.encode())
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(30):
                message = await consumer.getone()
    assert message.value == b"hello over " + mechanism.encode()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
async def test_round_trip_with_sasl_over_tls(kafka_broker: KafkaBroker, mechanism: str) -> None:
    assert kafka_broker.sasl_ssl_port is not None, "the launcher did not open a SASL_SSL listener"
    url = f"kafka+ssl://{kafka_broker.host}:{kafka_broker.sasl_ssl_port}"
    topic = f"kw-sasl-ssl-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(url, ssl_cafile=kafka_broker.ssl_cafile, **options(mechanism)) as client:
        async with client.producer(topic) as producer:
            await producer.send(b"sealed and signed in")
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(30):
                message = await consumer.getone()
    assert message.value == b"sealed and signed in"


async def test_a_wrong_password_over_tls_is_an_authentication_error(kafka_broker: KafkaBroker) -> None:
    assert kafka_broker.sasl_ssl_port is not None
    url = f"kafka+ssl://{kafka_broker.host}:{kafka_broker.sasl_ssl_port}"
    started = time.monotonic()
    with pytest.raises(kafkawire.AuthenticationError):
        async with kafkawire.connect(
            url,
            ssl_cafile=kafka_broker.ssl_cafile,
            request_timeout_ms=REFUSAL_TIMEOUT_MS,
            **options("SCRAM-SHA-512", password="wrong"),
        ) as client:
            await client.refresh_metadata([])
    assert time.monotonic() - started < REFUSAL_BOUND, "an authentication failure must not be retried until a timeout"


async def test_async_token_provider(kafka_broker: KafkaBroker) -> None:
    async def provider() -> str:
        return unsecured_jwt()

    async with kafkawire.connect(
        sasl_url(kafka_broker), sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider
    ) as client:
        await client.refresh_metadata([])


async def test_a_wrong_password_fails_fast_without_a_reconnect_storm(kafka_broker: KafkaBroker) -> None:
    async with FaultProxy(kafka_broker.host, kafka_broker.sasl_port or 0) as proxy:
        started = time.monotonic()
        with pytest.raises(kafkawire.AuthenticationError) as caught:
            async with kafkawire.connect(
                f"kafka://127.0.0.1:{proxy.port}",
                request_timeout_ms=REFUSAL_TIMEOUT_MS,
                **options("SCRAM-SHA-512", password="not-the-password"),
            ) as client:
                await client.refresh_metadata([])
        elapsed = time.monotonic() - started
        await asyncio.sleep(1)  # anything still retrying in the background would show up here
    assert elapsed < REFUSAL_BOUND, "an authentication failure must not be retried until a timeout"
    assert proxy.accepted <= 2, f"{proxy.accepted} connections for one refused login"
    assert "not-the-password" not in str(caught.value)


async def test_no_secret_in_logs_or_reprs(kafka_broker: KafkaBroker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        kafkawire.connect(sasl_url(kafka_broker), **options("PLAIN")) as client,
        client.producer(f"kw-sasl-{uuid.uuid4().hex[:8]}") as producer,
    ):
        await producer.send(b"x")
        shown = repr(client) + repr(producer) + repr(client._session._sasl)
    assert caplog.records, "the run logged nothing at DEBUG: the check would prove nothing"
    assert SASL_PASSWORD not in caplog.text
    assert SASL_PASSWORD not in shown


def test_kafka_python_uses_the_same_listener(kafka_broker: KafkaBroker) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=f"{kafka_broker.host}:{kafka_broker.sasl_port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username=SASL_USER,
        sasl_plain_password=SASL_PASSWORD,
    )
    try:
        producer.send(f"kw-sasl-peer-{uuid.uuid4().hex[:8]}", b"x").get(timeout=30)
    finally:
        producer.close()
