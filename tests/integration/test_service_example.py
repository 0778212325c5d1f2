"""examples/service.py, the FastAPI service, run as its users run it: uvicorn on uvloop, stopped with SIGTERM.

Messages sent through its HTTP endpoints are checked on the brokers with separate clients (value, key and
headers as sent), and in what the service's own consumers received; a burst accepted by ``/enqueue`` just
before SIGTERM must all be on the brokers once the service has exited.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.contract import Client
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.net import free_port

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TUBEMQ_TOPIC = "service"  # deployed when the session's TubeMQ starts (see mqwire_tubemq_topics)
SYSTEMS = ("kafka", "pulsar", "tubemq")
SENT = 3  # messages per system through POST /{system}/messages
BURST = 300  # messages per system through POST /{system}/enqueue, just before SIGTERM
# Generous limits, never speed checks: a TubeMQ consumer waits up to ~60 s for the master's first balancing.
STARTUP_DEADLINE = 180.0
CONSUMED_DEADLINE = 180.0
SHUTDOWN_DEADLINE = 120.0

Expected = dict[str, tuple[str | None, dict[str, str]]]  # value -> (key, headers)


def request(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One HTTP exchange with the service: its status and JSON answer (an error status is returned too)."""
    data = None if body is None else json.dumps(body).encode()
    exchange = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(exchange, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as failed:
        return failed.code, failed.read().decode(errors="replace")


class Service:
    """The example running under uvicorn in a subprocess, its output in a file."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [sys.executable, "-m", "uvicorn", "service:app", "--app-dir", str(EXAMPLES)]
        command += ["--loop", "uvloop", "--host", "127.0.0.1", "--port", str(self.port)]
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> dict[str, Any]:
        """Poll ``/health`` until it answers; the service exiting first fails the test with its output."""
        deadline = time.monotonic() + STARTUP_DEADLINE
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the service exited:\n{self.output()}"
            try:
                status, health = request(self.base, "GET", "/health")
            except OSError:  # not listening yet
                time.sleep(0.5)
                continue
            assert status == 200, health
            return dict(health)
        raise AssertionError(f"the service did not answer within {STARTUP_DEADLINE} s:\n{self.output()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def service_env(kafka_broker: KafkaBroker, pulsar_broker: PulsarBroker, tubemq_broker: TubeMQBroker) -> dict[str, str]:
    run = secrets.token_hex(4)
    return {
        **os.environ,
        "MQWIRE_KAFKA_URL": kafka_broker.url,
        "MQWIRE_PULSAR_URL": pulsar_broker.url,
        "MQWIRE_TUBEMQ_URL": tubemq_broker.url,
        "MQWIRE_SERVICE_KAFKA_TOPIC": f"service-{run}",
        "MQWIRE_SERVICE_PULSAR_TOPIC": f"service-{run}",
        "MQWIRE_SERVICE_TUBEMQ_TOPIC": TUBEMQ_TOPIC,
        "MQWIRE_SERVICE_GROUP": f"service-{run}",
        "SERVICE_TEST_RUN": run,
    }


@pytest.fixture
def service(service_env: dict[str, str], tmp_path: Path) -> Iterator[Service]:
    started = Service(service_env, tmp_path / "service.log")
    try:
        yield started
    finally:
        started.kill()


def message(run: str, kind: str, system: str, n: int) -> dict[str, Any]:
    """A message of this run: its value is unique, its key and headers vary with ``n``."""
    return {"value": f"{run} {kind} {system} {n}", "key": f"key-{n % 5}", "headers": {"run": run, "n": str(n)}}


def expected(messages: list[dict[str, Any]]) -> Expected:
    return {m["value"]: (m["key"], m["headers"]) for m in messages}


def consumed_by_service(service: Service, system: str, run: str) -> Expected:
    status, consumed = request(service.base, "GET", f"/{system}/consumed")
    assert status == 200, consumed
    return {m["value"]: (m["key"], m["headers"]) for m in consumed if m["headers"].get("run") == run}


async def read_back(client: Client[Any], topic: str, run: str, wanted: Expected) -> Expected:
    """What a separate consumer finds of this run in ``topic``, until it has every wanted value (or gives up)."""
    found: Expected = {}
    deadline = asyncio.get_running_loop().time() + CONSUMED_DEADLINE
    async with client, client.consumer(topic, group=f"check-{run}", start="earliest") as consumer:
        while not wanted.keys() <= found.keys() and asyncio.get_running_loop().time() < deadline:
            for received in await consumer.getmany(timeout=1, max_records=1000):
                headers = {name: value.decode() for name, value in received.headers.items()}
                if headers.get("run") == run:
                    key = None if received.key is None else received.key.decode()
                    found[received.value.decode()] = (key, headers)
                await consumer.ack(received)
    return found


async def test_service_sends_consumes_and_loses_nothing_at_sigterm(
    service: Service,
    service_env: dict[str, str],
    kafka_broker: KafkaBroker,
    pulsar_broker: PulsarBroker,
    tubemq_broker: TubeMQBroker,
) -> None:
    run = service_env["SERVICE_TEST_RUN"]
    topics = {system: service_env[f"MQWIRE_SERVICE_{system.upper()}_TOPIC"] for system in SYSTEMS}
    health = await asyncio.to_thread(service.wait_ready)
    assert health["loop"] == "uvloop.Loop", health
    assert health["consuming"] == dict.fromkeys(SYSTEMS, True), health

    sent = {system: [message(run, "sent", system, n) for n in range(SENT)] for system in SYSTEMS}
    for system in SYSTEMS:
        for outgoing in sent[system]:
            status, receipt = await asyncio.to_thread(request, service.base, "POST", f"/{system}/messages", outgoing)
            assert status == 200, receipt
            assert receipt["topic"].endswith(topics[system]) and isinstance(receipt["partition"], int), receipt
            if system == "kafka":
                assert receipt["offset"] >= 0, receipt
            else:
                assert receipt["message_id"], receipt

    # What cannot be sent is the caller's to fix: a 422 naming why, not a server error.
    unknown = await asyncio.to_thread(request, service.base, "POST", "/nats/messages", {"value": "x"})
    assert unknown[0] == 422, unknown
    bad_header = {"value": "x", "headers": {"a=b": "c"}}  # TubeMQ attributes hold no '=' in their names
    status, answer = await asyncio.to_thread(request, service.base, "POST", "/tubemq/messages", bad_header)
    assert status == 422 and "a=b" in answer, answer

    # The service's own consumers received them, as sent.
    deadline = time.monotonic() + CONSUMED_DEADLINE
    for system in SYSTEMS:
        while (consumed := consumed_by_service(service, system, run)).keys() < expected(sent[system]).keys():
            assert time.monotonic() < deadline, f"{system}: the service consumed only {consumed}"
            await asyncio.sleep(1)
        assert consumed == expected(sent[system]), system

    burst = {system: [message(run, "burst", system, n) for n in range(BURST)] for system in SYSTEMS}
    for system in SYSTEMS:
        status, answer = await asyncio.to_thread(request, service.base, "POST", f"/{system}/enqueue", burst[system])
        assert (status, answer) == (202, {"enqueued": BURST})

    # As uvicorn's users stop it: the lifespan's exit flushes and closes every producer and client.
    service.process.send_signal(signal.SIGTERM)
    returncode = await asyncio.to_thread(service.process.wait, SHUTDOWN_DEADLINE)
    output = service.output()
    # Once shut down, uvicorn raises the signal it caught again, so its exit status says SIGTERM ended it.
    assert returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete" in output, output
    assert "Traceback" not in output and "not stored" not in output, output

    clients: dict[str, Client[Any]] = {
        "kafka": kafkawire.connect(kafka_broker.url),
        "pulsar": pulsarwire.connect(pulsar_broker.url),
        "tubemq": tubemqwire.connect(tubemq_broker.url),
    }
    wanted = {system: expected(sent[system] + burst[system]) for system in SYSTEMS}
    found = await asyncio.gather(*(read_back(clients[s], topics[s], run, wanted[s]) for s in SYSTEMS))
    for system, on_broker in zip(SYSTEMS, found, strict=True):
        missing = wanted[system].keys() - on_broker.keys()
        assert not missing, (
            f"{system}: {len(missing)} of {len(wanted[system])} never arrived, e.g. {sorted(missing)[:3]}"
        )
        assert on_broker == wanted[system], system
