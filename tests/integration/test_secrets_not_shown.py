"""A secured run writes its secrets nowhere: the mqwire command against the SASL listener (password from the
environment, then a wrong one) and kafkawire with SASL_SSL options, with every log record at DEBUG, everything
printed, the exception texts and the reprs of the clients gathered and searched for the passwords used."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

import pytest

import kafkawire
from mqwire import cli
from mqwire.common.errors import AuthenticationError
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER
from sparkwire.options import kafka_url
from sparkwire.security import kafka_connect
from tests.secret_scan import remember_secret

pytestmark = pytest.mark.integration


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{record.getMessage()} {record.args!r} {record.exc_text or ''} {record.exc_info!r}"
        for record in caplog.records
    )


def test_a_secured_run_shows_no_password(
    kafka_broker: KafkaBroker,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert kafka_broker.sasl_port is not None and kafka_broker.sasl_ssl_port is not None and kafka_broker.ssl_cafile
    caplog.set_level(logging.DEBUG)
    wrong = str(remember_secret(f"wrong-{uuid.uuid4().hex}"))
    url = f"kafka://{kafka_broker.host}:{kafka_broker.sasl_port}"
    topic = f"no-secrets-{uuid.uuid4().hex[:8]}"
    lines = tmp_path / "lines.txt"
    lines.write_text("one\ntwo\n")
    secured = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256"]
    monkeypatch.setenv("MQWIRE_SASL_USERNAME", SASL_USER)
    monkeypatch.setenv("MQWIRE_SASL_PASSWORD", SASL_PASSWORD)

    assert cli.main([*secured, "produce", url, topic, "--file", str(lines)]) == 0
    assert cli.main([*secured, "consume", url, topic, "--count", "2", "--stats"]) == 0
    monkeypatch.setenv("MQWIRE_SASL_PASSWORD", wrong)
    assert cli.main([*secured, "topics", "list", url]) != 0
    printed = capsys.readouterr()
    assert "one" in printed.out and "Authentication failed" in printed.err

    shown: list[str] = []
    options = {
        "url": f"kafka://{kafka_broker.host}:{kafka_broker.sasl_ssl_port}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": f'PlainLoginModule required username="{SASL_USER}" password="{wrong}";',
        "kafka.ssl.ca.location": kafka_broker.ssl_cafile,
    }

    async def refused() -> None:
        client = kafkawire.connect(kafka_url(options), **kafka_connect(options))
        shown.append(repr(client))
        with pytest.raises(AuthenticationError) as caught:
            async with client:
                await client.refresh_metadata([])
        shown.extend([str(caught.value), repr(caught.value)])

    asyncio.run(refused())

    logged = everything_logged(caplog)
    assert logged, "nothing was logged at DEBUG: the search would be empty"
    for secret in (SASL_PASSWORD, wrong):
        assert secret not in logged
        assert secret not in printed.out and secret not in printed.err
        assert not any(secret in text for text in shown)
