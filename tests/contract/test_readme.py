"""The code blocks of README and of the guides in docs/ run as written against the real brokers: the client
example with each system (only the package name, URL, topic and group change), the Spark guide's blocks."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from tests.contract.systems import tubemq_topic

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# The pages that show the client example: the front door and the guide that walks through it.
EXAMPLE_PAGES = ("README.md", "docs/getting-started.md")


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of a page of the repository, in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), flags=re.DOTALL)


def client_example(page: str) -> str:
    """The page's one block written for all three systems."""
    (block,) = [b for b in python_blocks(page) if "import kafkawire  # or pulsarwire, tubemqwire" in b]
    return block


@pytest.mark.parametrize("page", EXAMPLE_PAGES)
@pytest.mark.parametrize("name", ["kafka", "pulsar", "tubemq"])
def test_the_example_runs_with_each_system(page: str, name: str, request: pytest.FixtureRequest) -> None:
    broker: KafkaBroker | PulsarBroker | TubeMQBroker = request.getfixturevalue(f"{name}_broker")
    topic = tubemq_topic("readme") if name == "tubemq" else f"readme-{secrets.token_hex(4)}"
    code = client_example(page)
    for old, new in (
        ("kafkawire", f"{name}wire"),
        ('"kafka://127.0.0.1:9092"', repr(broker.url)),
        ('"orders"', repr(topic)),
        ('"billing"', repr(f"billing_{secrets.token_hex(4)}")),
    ):
        assert old in code, f"{page}'s example no longer has {old}"
        code = code.replace(old, new)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "stored in" in done.stdout
    assert "received b'k' {'id': 1} {'h': b'v'}" in done.stdout, done.stdout


def test_the_spark_guide_blocks_run(kafka_broker: KafkaBroker, pulsar_broker: PulsarBroker, tmp_path: Path) -> None:
    """docs/spark.md's runnable blocks, one after the other as a reader would paste them, on topics holding 50
    records (the secured-broker block names a broker that is not there, so it is left out)."""
    import asyncio

    import kafkawire
    import pulsarwire

    events, copy = f"events-{secrets.token_hex(4)}", f"copy-{secrets.token_hex(4)}"
    pulsar_events = f"persistent://public/default/events-{secrets.token_hex(4)}"

    async def fill() -> None:
        async with kafkawire.connect(kafka_broker.url) as kafka, kafka.producer(events) as producer:
            for index in range(50):
                await producer.enqueue(b"event %d" % index)
        async with pulsarwire.connect(pulsar_broker.url) as pulsar, pulsar.producer(pulsar_events) as producer:
            for index in range(50):
                await producer.enqueue(b"event %d" % index)

    asyncio.run(fill())
    spark_blocks = [b for b in python_blocks("docs/spark.md") if "sparkwire" in b or 'format("pulsarwire")' in b]
    assert len(spark_blocks) == 2, "docs/spark.md's blocks changed: update this test"
    code = "\n".join(spark_blocks)
    for old, new in (
        ('"kafka://localhost:9092"', repr(kafka_broker.url)),
        ('"pulsar://localhost:6650"', repr(pulsar_broker.url)),
        ('"persistent://public/default/events"', repr(pulsar_events)),
        ('"events"', repr(events)),
        ('"copy"', repr(copy)),
        ('"out"', repr(str(tmp_path / "out"))),
        ('"chk"', repr(str(tmp_path / "chk"))),
    ):
        assert old in code, f"docs/spark.md's blocks no longer have {old}"
        code = code.replace(old, new)
    # Spark's Python workers are this interpreter, as they are for a reader in an activated virtual environment.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "50 rows copied; 50 rows streamed to parquet" in done.stdout, done.stdout
    assert "50 rows read from Pulsar" in done.stdout, done.stdout
