"""A program from aiokafka's documentation, ported with docs/porting.md's aiokafka table only, runs."""

from __future__ import annotations

import asyncio
import secrets
import sys
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[1] / "porting" / "aiokafka_getting_started.py"


async def test_aiokafkas_getting_started_runs_after_porting(kafka_broker: KafkaBroker) -> None:
    topic, other = f"my_topic_{secrets.token_hex(3)}", f"my_other_topic_{secrets.token_hex(3)}"
    consumer = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), "consume", kafka_broker.url, topic, other, f"my-group-{secrets.token_hex(3)}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert consumer.stdout is not None
    try:
        # The consumer starts at the latest offset (aiokafka's default too): produce until it has joined and reads.
        line = b""
        for _ in range(30):
            producer = await asyncio.create_subprocess_exec(
                sys.executable, str(SCRIPT), "produce", kafka_broker.url, topic, stderr=asyncio.subprocess.PIPE
            )
            _, errors = await asyncio.wait_for(producer.communicate(), 120)
            assert producer.returncode == 0, errors.decode()
            try:
                line = await asyncio.wait_for(consumer.stdout.readline(), 2)
            except TimeoutError:
                continue
            break
        assert line.startswith(b"consumed:  " + topic.encode() + b" 0 "), line
        assert b"None b'Super message'" in line
    finally:
        consumer.terminate()
        _, errors = await consumer.communicate()
    assert b"Traceback" not in errors, errors.decode()
