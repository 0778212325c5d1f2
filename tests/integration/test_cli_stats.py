"""``mqwire produce/consume --stats`` against the real brokers: the statistics printed agree with the run."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys

import pytest

from mqwire.testing import pulsar_admin
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker

pytestmark = pytest.mark.integration

COUNT = 40


def mqwire(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqwire", *args], input=stdin.decode(), capture_output=True, text=True, timeout=120
    )


def field(output: str, name: str) -> str:
    match = re.search(rf"^  {name} +(.+)$", output, re.MULTILINE)
    assert match is not None, output
    return match.group(1)


def run(url: str, topic: str) -> tuple[str, str]:
    produced = mqwire("produce", url, topic, "--quiet", "--stats", stdin=b"".join(b"m%d\n" % i for i in range(COUNT)))
    assert produced.returncode == 0, produced.stderr
    consumed = mqwire(
        "consume", url, topic, "--group", f"g{secrets.token_hex(3)}", "--from", "earliest", "--count", str(COUNT),
        "--quiet", "--stats",
    )
    assert consumed.returncode == 0, consumed.stderr
    assert len(consumed.stdout.splitlines()) == COUNT
    return produced.stderr, consumed.stderr


def test_kafka_stats_flag(kafka_broker: KafkaBroker) -> None:
    produced, consumed = run(kafka_broker.url, f"cli_stats_{secrets.token_hex(4)}")
    assert "producer statistics (kafka)" in produced
    assert field(produced, "records_sent") == str(COUNT) and field(produced, "records_failed") == "0"
    assert field(produced, "send_latency").startswith("mean ")
    assert "consumer statistics (kafka)" in consumed
    assert field(consumed, "records_received") == str(COUNT) and field(consumed, "lag") == "0"


def test_pulsar_stats_flag(pulsar_broker: PulsarBroker) -> None:
    topic = pulsar_admin.create_partitioned_topic(pulsar_broker.admin_url, f"cli-stats-{secrets.token_hex(4)}", 1)
    produced, consumed = run(pulsar_broker.url, topic)
    assert field(produced, "records_sent") == str(COUNT)
    # The subscription's backlog after the command acknowledged everything (asked of the broker at the end).
    assert field(consumed, "records_received") == str(COUNT) and field(consumed, "lag") == "0"
