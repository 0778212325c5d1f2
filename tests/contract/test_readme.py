"""README's example runs as written against each system: only the package name, URL, topic and group change."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def client_example() -> str:
    (block,) = [b for b in python_blocks() if "import kafkawire  # or pulsarwire, tubemqwire" in b]
    return block


@pytest.mark.parametrize("name", ["kafka", "pulsar", "tubemq"])
def test_readme_example_runs_with_each_system(name: str, request: pytest.FixtureRequest) -> None:
    broker: KafkaBroker | PulsarBroker | TubeMQBroker = request.getfixturevalue(f"{name}_broker")
    topic = "contract_readme" if name == "tubemq" else f"readme-{secrets.token_hex(4)}"
    code = client_example()
    for old, new in (
        ("kafkawire", f"{name}wire"),
        ('"kafka://127.0.0.1:9092"', repr(broker.url)),
        ('"orders"', repr(topic)),
        ('"billing"', repr(f"billing_{secrets.token_hex(4)}")),
    ):
        assert old in code, f"README's example no longer has {old}"
        code = code.replace(old, new)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "stored in" in done.stdout
    assert "received b'k' {'id': 1} {'h': b'v'}" in done.stdout, done.stdout
