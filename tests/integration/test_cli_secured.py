"""The mqwire command against the broker's SASL listener with client options given as kcat takes them:
``-F`` a file of name=value lines and repeated ``-X name=value``; a wrong password or option is reported
without the secret."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER

pytestmark = pytest.mark.integration


def mqwire(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mqwire", *args]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)


def test_produce_and_consume_over_sasl_with_a_config_file_and_x_options(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    assert kafka_broker.sasl_port is not None, "the launcher did not open a SASL listener"
    url = f"kafka://{kafka_broker.host}:{kafka_broker.sasl_port}"
    config = tmp_path / "client.conf"
    config.write_text(f"# as kcat -F reads it\nsecurity.protocol=SASL_PLAINTEXT\nsasl.username={SASL_USER}\n")
    secured = ["-F", str(config), "-X", "sasl.mechanism=SCRAM-SHA-256", "-X", f"sasl.password={SASL_PASSWORD}"]
    topic = f"cli-sasl-{uuid.uuid4().hex[:8]}"

    created = mqwire(*secured, "topics", "create", url, topic, "--partitions", "1")
    assert created.returncode == 0, created.stderr
    produced = mqwire(*secured, "produce", url, topic, "--quiet", stdin="one\ntwo\nthree\n")
    assert produced.returncode == 0, produced.stderr
    consumed = mqwire(*secured, "consume", url, topic, "--from", "earliest", "--count", "3", "--quiet")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]

    wrong = f"wrong-{uuid.uuid4().hex[:6]}"
    refused = mqwire(
        "-F", str(config), "-X", "sasl.mechanism=PLAIN", "-X", f"sasl.password={wrong}", "topics", "list", url
    )
    assert refused.returncode != 0 and "Authentication failed" in refused.stderr
    assert wrong not in refused.stderr and wrong not in refused.stdout
    unknown = mqwire("-X", f"sasl.pasword={wrong}", "topics", "list", url)
    assert unknown.returncode != 0 and "sasl.pasword" in unknown.stderr and wrong not in unknown.stderr
