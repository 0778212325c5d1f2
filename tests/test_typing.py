"""The type checker sees the options: a user's misspelled option is a mypy error that names it.

mypy runs on a user's snippet that uses the three packages, correctly and with misspelled options, and must
report exactly the misspelled lines. It also checks that code written against the contract accepts each
package's client.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''\
import json
from typing import Any

import kafkawire
import pulsarwire
import tubemqwire
import tubemqwire.sync
from mqwire.common.contract import Client


async def copy(client: Client[Any], source: str, target: str) -> None:
    async with client.producer(target) as producer, client.consumer(source, group="copier") as consumer:
        async for message in consumer:
            await producer.send(message.value, key=message.key, headers=message.headers)
            await consumer.ack(message)


async def main() -> None:
    async with kafkawire.connect("kafka://127.0.0.1:9092", client_id="app") as kafka:
        await copy(kafka, "a", "b")
        async with kafka.producer("orders", linger_ms=5, value_serializer=str.encode) as producer:
            await producer.send("text", key=b"k")
        kafka.producer("orders", lingr_ms=5)  # ERROR lingr_ms
        kafka.consumer("orders", group="g", strat="earliest")  # ERROR strat
    async with pulsarwire.connect("pulsar://127.0.0.1:6650") as pulsar:
        await copy(pulsar, "a", "b")
        async with pulsar.consumer("orders", group="g", value_deserializer=json.loads) as consumer:
            await consumer.receive(timeout=1)
        pulsar.producer("orders", batching_max_mesages=10)  # ERROR batching_max_mesages
    async with tubemqwire.connect("tubemq://127.0.0.1:8715") as tubemq:
        await copy(tubemq, "a", "b")
        tubemq.consumer("orders", group="g", stat="latest")  # ERROR stat
        tubemq.producer("orders", max_in_flight=5, checksum=True, retry_backoff_ms=10)
        tubemq.producer("orders", max_inflight=5)  # ERROR max_inflight
        tubemq.producer("orders", retries="3")  # ERROR retries
        tubemq.client_balance_consumer("orders", group="g", source_count=2, node_id=0, start="earliest")
        tubemq.client_balance_consumer("orders", group="g", node=0)  # ERROR node
    tubemqwire.connect("tubemq://127.0.0.1:8715", heartbeat_interval_ms=5000, username="u", password="p")
    tubemqwire.connect("tubemq://127.0.0.1:8715", heartbeat_ms=5000)  # ERROR heartbeat_ms
    tubemqwire.sync.connect("tubemq://127.0.0.1:8715", request_timeout=5)  # ERROR request_timeout
    pulsarwire.connect("pulsar://127.0.0.1:6650", operation_timeout_sec=3)  # ERROR operation_timeout_sec
'''


def test_mypy_names_each_misspelled_option_and_accepts_the_rest(tmp_path: Path) -> None:
    # A module name of its own per run: mypy's cache in the repository would otherwise answer for an earlier
    # run's user_app.py at another temporary path, and the errors would name that path.
    snippet = tmp_path / f"user_app_{uuid.uuid4().hex[:8]}.py"
    snippet.write_text(SNIPPET)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context", str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors: dict[int, str] = {}
    for line in done.stdout.splitlines():
        found = re.match(rf"{re.escape(str(snippet))}:(\d+): error: (.*)", line)
        if found:
            errors[int(found[1])] = errors.get(int(found[1]), "") + found[2]
    expected = {
        number: text.split("# ERROR ")[1]
        for number, text in enumerate(SNIPPET.splitlines(), start=1)
        if "# ERROR " in text
    }
    assert set(errors) == set(expected), done.stdout
    for number, option in expected.items():
        assert option in errors[number], f"line {number}: {errors[number]}"
