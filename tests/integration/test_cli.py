"""The ``mqwire`` command against the real brokers: what it prints and how it exits."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys

import pytest

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker

pytestmark = pytest.mark.integration

TUBEMQ_TOPIC = "cli"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)


def mqwire(*args: str, stdin: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqwire", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def lines(count: int, label: str) -> bytes:
    return b"".join(b"%s-%d\n" % (label.encode(), i) for i in range(count))


def round_trip(url: str, topic: str, *consume_options: str) -> None:
    label = secrets.token_hex(4)
    produced = mqwire("produce", url, topic, stdin=lines(50, label))
    assert produced.returncode == 0, produced.stderr
    # Not a terminal: no progress bar, only the summary table.
    assert "acknowledged" in produced.stderr and "50" in produced.stderr
    consumed = mqwire("consume", url, topic, "--count", "50", "--format", "{value}", "--quiet", *consume_options)
    assert consumed.returncode == 0, consumed.stderr
    got = [line for line in consumed.stdout.splitlines() if line.startswith(label)]
    assert sorted(got) == sorted(f"{label}-{i}" for i in range(50))


def test_kafka_round_trip_with_keys_and_headers(kafka_broker: KafkaBroker) -> None:
    topic = f"cli-{secrets.token_hex(4)}"
    assert mqwire("topics", "create", kafka_broker.url, topic, "--partitions", "3").returncode == 0
    round_trip(kafka_broker.url, topic)
    records = b"".join(
        json.dumps({"value": f"v{i}", "key": f"k{i % 4}", "headers": {"n": str(i)}}).encode() + b"\n" for i in range(12)
    )
    assert mqwire("produce", kafka_broker.url, topic, "--input", "jsonl", "--quiet", stdin=records).returncode == 0
    out = mqwire("consume", kafka_broker.url, topic, "--count", "62", "--quiet", "--format", "{key}|{value}|{headers}")
    assert out.returncode == 0, out.stderr
    keyed = sorted(line for line in out.stdout.splitlines() if line.startswith("k"))
    assert keyed == sorted(f'k{i % 4}|v{i}|{{"n": "{i}"}}' for i in range(12))


def test_kafka_topics_and_groups(kafka_broker: KafkaBroker) -> None:
    url = kafka_broker.url
    topic = f"cli-{secrets.token_hex(4)}"
    group = f"g-{secrets.token_hex(4)}"
    assert mqwire("topics", "create", url, topic, "--partitions", "2").returncode == 0
    described = mqwire("topics", "describe", url, topic)
    assert described.returncode == 0
    assert len(json.loads(described.stdout)["partitions"]) == 2
    assert topic in mqwire("topics", "list", url).stdout.split()
    single = f"cli-{secrets.token_hex(4)}"
    assert mqwire("topics", "create", url, single).returncode == 0
    assert mqwire("produce", url, single, "--quiet", stdin=lines(10, "x")).returncode == 0
    consumed = mqwire("consume", url, single, "--group", group, "--count", "4", "--quiet")
    assert consumed.returncode == 0, consumed.stderr
    assert group in mqwire("groups", "list", url).stdout
    lag = mqwire("groups", "lag", url, group, "--topic", single)
    assert lag.returncode == 0, lag.stderr
    # group, topic, partition, committed, end, lag: 4 of the 10 were read and committed.
    rows = [line.split("\t") for line in lag.stdout.splitlines()]
    assert sum(int(row[5]) for row in rows) == 6
    assert mqwire("topics", "delete", url, topic).returncode == 0


def test_pulsar_round_trip_and_topics(pulsar_broker: PulsarBroker) -> None:
    topic = f"cli-{secrets.token_hex(4)}"
    admin = ("--admin-url", pulsar_broker.admin_url)
    assert mqwire("topics", "create", pulsar_broker.url, topic, "--partitions", "2", *admin).returncode == 0
    described = mqwire("topics", "describe", pulsar_broker.url, topic, *admin)
    assert json.loads(described.stdout)["partitions"] == 2
    round_trip(pulsar_broker.url, topic)
    assert mqwire("topics", "delete", pulsar_broker.url, topic, *admin).returncode == 0


def test_tubemq_round_trip(tubemq_broker: TubeMQBroker) -> None:
    round_trip(tubemq_broker.url, TUBEMQ_TOPIC, "--group", f"cli-{secrets.token_hex(4)}")


def test_exit_codes(kafka_broker: KafkaBroker, tubemq_broker: TubeMQBroker) -> None:
    assert mqwire("consume", "http://nowhere", "t").returncode == 2
    assert mqwire("produce", kafka_broker.url, "t", "--header", "no-equals-sign").returncode == 2
    assert mqwire("consume", kafka_broker.url, "t", "--format", "{nonsense}").returncode == 2
    unsupported = mqwire("topics", "list", tubemq_broker.url)
    assert unsupported.returncode == 3 and "TubeMQ" in unsupported.stderr
    empty = f"cli-empty-{secrets.token_hex(4)}"
    assert mqwire("topics", "create", kafka_broker.url, empty).returncode == 0
    short = mqwire("consume", kafka_broker.url, empty, "--count", "1", "--idle-timeout", "2", "--quiet")
    assert short.returncode == 4 and "only 0 of 1" in short.stderr
    assert mqwire("--help").returncode == 0


@pytest.mark.parametrize("system", ["kafka", "pulsar"])
def test_bench(system: str, kafka_broker: KafkaBroker, pulsar_broker: PulsarBroker) -> None:
    url = kafka_broker.url if system == "kafka" else pulsar_broker.url
    topic = f"cli-bench-{secrets.token_hex(4)}"
    produced = mqwire("bench", "produce", url, topic, "--count", "5000", "--size", "100")
    assert produced.returncode == 0, produced.stderr
    assert "records/s" in produced.stderr
    consumed = mqwire("bench", "consume", url, topic, "--count", "5000")
    assert consumed.returncode == 0, consumed.stderr
