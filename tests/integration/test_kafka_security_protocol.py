"""``security.protocol=SASL_SSL`` with a plain ``kafka://`` URL speaks TLS: the bytes the client sends to the
broker's SASL_SSL listener, recorded by a relay in between, open with a TLS record (0x16 0x03, a handshake),
where a plaintext Kafka request would open with its length, and the password never crosses in clear."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER
from sparkwire.options import kafka_url
from sparkwire.security import kafka_connect
from tests.integration.relay import Relay
from tests.secret_scan import secret_input

pytestmark = pytest.mark.integration

TLS_HANDSHAKE = b"\x16\x03"


def sasl_ssl_port(broker: KafkaBroker) -> int:
    assert broker.sasl_ssl_port is not None and broker.ssl_cafile, "the launcher did not open a SASL_SSL listener"
    return broker.sasl_ssl_port


def assert_tls_only(relay: Relay) -> None:
    assert relay.first_bytes, "nothing went through the relay"
    assert all(first[:2] == TLS_HANDSHAKE for first in relay.first_bytes), [f[:8] for f in relay.first_bytes]
    assert SASL_PASSWORD.encode() not in relay.from_clients


async def test_the_command_with_sasl_ssl_and_a_kafka_url_speaks_tls(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    config = secret_input(tmp_path / "client.conf")  # where the password is meant to be
    config.write_text(f"sasl.username={SASL_USER}\nsasl.password={SASL_PASSWORD}\n")
    config.chmod(0o600)
    async with Relay(kafka_broker.host, sasl_ssl_port(kafka_broker)) as relay:
        command = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mqwire",
            "-F",
            str(config),
            "-X",
            "security.protocol=SASL_SSL",
            "-X",
            "sasl.mechanism=PLAIN",
            "-X",
            f"ssl.ca.location={kafka_broker.ssl_cafile}",
            "topics",
            "list",
            f"kafka://127.0.0.1:{relay.port}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(command.communicate(), 120)
    assert command.returncode == 0, err.decode()
    assert_tls_only(relay)


async def test_spark_options_with_sasl_ssl_and_a_kafka_url_speak_tls(kafka_broker: KafkaBroker) -> None:
    async with Relay(kafka_broker.host, sasl_ssl_port(kafka_broker)) as relay:
        options = {
            "url": f"kafka://127.0.0.1:{relay.port}",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.username": SASL_USER,
            "kafka.sasl.password": SASL_PASSWORD,
            "kafka.ssl.ca.location": str(kafka_broker.ssl_cafile),
        }
        async with kafkawire.connect(kafka_url(options), **kafka_connect(options)) as client:
            await client.refresh_metadata([])
    assert_tls_only(relay)


async def test_a_tls_url_with_sasl_plaintext_is_refused_before_any_connection(kafka_broker: KafkaBroker) -> None:
    async with Relay(kafka_broker.host, sasl_ssl_port(kafka_broker)) as relay:
        command = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mqwire",
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanism=PLAIN",
            "topics",
            "list",
            f"kafka+ssl://127.0.0.1:{relay.port}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "MQWIRE_SASL_USERNAME": SASL_USER, "MQWIRE_SASL_PASSWORD": SASL_PASSWORD},
        )
        _, err = await asyncio.wait_for(command.communicate(), 120)
    assert command.returncode != 0
    assert "security.protocol=SASL_PLAINTEXT" in err.decode() and "kafka+ssl://" in err.decode()
    assert relay.first_bytes == []
