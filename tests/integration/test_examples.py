"""Every script in examples/ runs against the real brokers and says what it should (so none of them rots)."""

from __future__ import annotations

import ast
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TUBEMQ_TOPIC = "examples"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)


def run(script: str, *args: str, timeout: float = 150) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def keys_received(output: str, member: int) -> list[str]:
    """The keys that the Key_Shared example reports for consumer ``member``."""
    prefix = f"consumer {member} got keys "
    line = next((line for line in output.splitlines() if line.startswith(prefix)), None)
    assert line is not None, f"no keys reported for consumer {member}:\n{output}"
    keys = ast.literal_eval(line.removeprefix(prefix))
    assert isinstance(keys, list)
    return [str(key) for key in keys]


def test_kafka_examples(kafka_broker: KafkaBroker) -> None:
    topic = f"ex-{secrets.token_hex(4)}"
    produced = run("kafka_producer.py", kafka_broker.url, topic)
    assert produced.count("stored at") == 10
    consumed = run("kafka_consumer.py", kafka_broker.url, topic)
    assert consumed.count("value=b'order") == 10
    group = f"g-{secrets.token_hex(4)}"
    assert "processed 10 records" in run("kafka_group_consumer.py", kafka_broker.url, topic, group)
    # The group committed: a second run finds nothing new.
    assert "processed 0 records" in run("kafka_group_consumer.py", kafka_broker.url, topic, group)
    destination = f"{topic}-upper"
    moved = run("kafka_transactional.py", kafka_broker.url, topic, destination)
    assert "moved 10 records" in moved
    assert run("kafka_consumer.py", kafka_broker.url, destination).count("value=b'ORDER") == 10


def test_pulsar_examples(pulsar_broker: PulsarBroker) -> None:
    topic = f"ex-{secrets.token_hex(4)}"
    assert run("pulsar_producer.py", pulsar_broker.url, topic).count("stored as") == 10
    consumed = run("pulsar_consumer.py", pulsar_broker.url, topic)
    assert consumed.count("value=b'event") == 10
    shared = run("pulsar_key_shared.py", pulsar_broker.url, f"ex-ks-{secrets.token_hex(4)}")
    assert "no key at both consumers" in shared
    # Every key arrived, each at one consumer only (an empty run would also print "no key at both").
    first, second = (set(keys_received(shared, member)) for member in (1, 2))
    assert first | second == {f"key-{i}" for i in range(6)} and not first & second, shared
    dead = run("pulsar_dead_letter.py", pulsar_broker.url, f"ex-dlq-{secrets.token_hex(4)}")
    assert "processed good" in dead and "dead letter: b'poison'" in dead


def test_tubemq_examples(tubemq_broker: TubeMQBroker) -> None:
    assert run("tubemq_producer.py", tubemq_broker.url, TUBEMQ_TOPIC).count("stored in partition") == 10
    consumed = run("tubemq_consumer.py", tubemq_broker.url, TUBEMQ_TOPIC, f"g-{secrets.token_hex(4)}")
    assert consumed.count("temperature b'reading") >= 10
    assert "only alarms arrived" in run("tubemq_msg_type_filter.py", tubemq_broker.url, TUBEMQ_TOPIC)


@pytest.mark.parametrize("system", ["kafka", "pulsar"])
def test_copy_topic_runs_on_any_system(system: str, request: pytest.FixtureRequest) -> None:
    broker: KafkaBroker | PulsarBroker = request.getfixturevalue(f"{system}_broker")
    topic = f"ex-{secrets.token_hex(4)}"
    assert run(f"{system}_producer.py", broker.url, topic).count("stored") == 10
    assert "copied 10 messages" in run("copy_topic.py", broker.url, topic, f"{topic}-copy")

