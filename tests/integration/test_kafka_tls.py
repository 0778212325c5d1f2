"""kafkawire over TLS (``kafka+ssl://``) on the broker's SSL listener: certificates and host names checked."""

from __future__ import annotations

import asyncio
import ssl
import uuid

import pytest

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from tests.integration.relay import Relay

pytestmark = pytest.mark.integration


def tls_url(broker: KafkaBroker, host: str = "127.0.0.1") -> str:
    assert broker.ssl_port is not None and broker.ssl_cafile is not None, "the launcher opened no TLS listener"
    return f"kafka+ssl://{host}:{broker.ssl_port}"


async def test_round_trip_over_tls_with_the_brokers_ca(kafka_broker: KafkaBroker) -> None:
    topic = f"kw-tls-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(tls_url(kafka_broker), ssl_cafile=kafka_broker.ssl_cafile) as client:
        async with client.producer(topic) as producer:
            await producer.send(b"sealed")
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(30):
                assert (await consumer.getone()).value == b"sealed"


async def test_an_unknown_ca_is_refused(kafka_broker: KafkaBroker) -> None:
    # Without the broker's CA the system trust store is used, which does not know this certificate.
    with pytest.raises(kafkawire.MqwireError, match=r"(?i)certificate"):
        async with kafkawire.connect(tls_url(kafka_broker), connect_timeout_ms=5_000) as client:
            await client.refresh_metadata([])


async def test_a_host_name_the_certificate_lacks_is_refused_unless_checking_is_off(kafka_broker: KafkaBroker) -> None:
    # 127.0.0.2 reaches the broker through a relay (the broker listens on 127.0.0.1 only), but its certificate
    # names 127.0.0.1.
    assert kafka_broker.ssl_port is not None
    async with Relay(kafka_broker.host, kafka_broker.ssl_port, listen_host="127.0.0.2") as relay:
        url = f"kafka+ssl://127.0.0.2:{relay.port}"
        with pytest.raises(kafkawire.MqwireError, match=r"(?i)certificate|hostname|match"):
            async with kafkawire.connect(url, ssl_cafile=kafka_broker.ssl_cafile, connect_timeout_ms=5_000) as client:
                await client.refresh_metadata([])
        async with kafkawire.connect(url, ssl_cafile=kafka_broker.ssl_cafile, ssl_check_hostname=False) as client:
            await client.refresh_metadata([])


def mtls_url(broker: KafkaBroker) -> str:
    assert broker.mtls_port is not None and broker.ssl_client_certfile, "no client-certificate listener"
    return f"kafka+ssl://{broker.host}:{broker.mtls_port}"


async def test_round_trip_with_a_client_certificate(kafka_broker: KafkaBroker) -> None:
    topic = f"kw-mtls-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(
        mtls_url(kafka_broker),
        ssl_cafile=kafka_broker.ssl_cafile,
        ssl_certfile=kafka_broker.ssl_client_certfile,
        ssl_keyfile=kafka_broker.ssl_client_keyfile,
    ) as client:
        async with client.producer(topic) as producer:
            await producer.send(b"both sides known")
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(30):
                assert (await consumer.getone()).value == b"both sides known"


async def test_without_a_client_certificate_the_listener_refuses_quickly(kafka_broker: KafkaBroker) -> None:
    started = asyncio.get_running_loop().time()
    with pytest.raises(kafkawire.MqwireError, match=r"(?i)certificate"):
        async with kafkawire.connect(
            mtls_url(kafka_broker), ssl_cafile=kafka_broker.ssl_cafile, connect_timeout_ms=120_000
        ) as client:
            await client.refresh_metadata([])
    # Refused during the handshake, not given up on at the connect timeout (120 s): a liveness bound far
    # under it.
    assert asyncio.get_running_loop().time() - started < 30


def test_tls_options_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="kafka\\+ssl"):
        kafkawire.connect("kafka://127.0.0.1:1", ssl_cafile="/nowhere.pem")
    with pytest.raises(ValueError, match="ssl_context"):
        kafkawire.connect("kafka+ssl://127.0.0.1:1", ssl_cafile="/x.pem", ssl_context=ssl.create_default_context())
