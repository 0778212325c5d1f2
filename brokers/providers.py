"""Where test brokers come from: started here (local), in containers, or already running (external)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from mqwire.testing import kafka_wire, pulsar_admin
from mqwire.testing.endpoints import Endpoint, KafkaBroker, PulsarBroker, TubeMQBroker, split_url
from mqwire.testing.errors import BrokerError
from mqwire.testing.launcher import Launcher
from mqwire.testing.net import LOOPBACK, free_ports

PROVIDERS = ("local", "testcontainers", "external")
KAFKA_IMAGE = "apache/kafka:4.3.1"
KAFKA3_IMAGE = "apache/kafka:3.9.2"
PULSAR_IMAGE = "apachepulsar/pulsar:4.2.4"


class Provider(Protocol):
    name: str

    def get(self, broker: str) -> Endpoint: ...

    def get_many(self, brokers: list[str]) -> dict[str, Endpoint]: ...

    def log_files(self, broker: str) -> tuple[str, ...]: ...

    def close(self) -> None: ...


class _Memo:
    """Start each broker once per session, and remember a failure instead of retrying it per test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self.ready: dict[str, Endpoint] = {}
        self.failed: dict[str, BaseException] = {}

    def get(self, broker: str, make: Callable[[], Endpoint]) -> Endpoint:
        with self._lock:
            lock = self._locks.setdefault(broker, threading.Lock())
        with lock:
            if broker in self.ready:
                return self.ready[broker]
            if broker in self.failed:
                raise BrokerError(f"{broker} failed to start earlier in this session: {self.failed[broker]}")
            try:
                endpoint = make()
            except BaseException as err:
                self.failed[broker] = err
                raise
            self.ready[broker] = endpoint
            return endpoint

    def get_many(self, brokers: list[str], make: Callable[[str], Endpoint]) -> dict[str, Endpoint]:
        results: dict[str, Endpoint] = {}
        errors: dict[str, BaseException] = {}

        def run(name: str) -> None:
            try:
                results[name] = self.get(name, lambda: make(name))
            except BaseException as err:
                errors[name] = err

        threads = [threading.Thread(target=run, args=(b,)) for b in brokers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise BrokerError("\n".join(f"{name}: {err}" for name, err in errors.items()))
        return {b: results[b] for b in brokers}


class LocalProvider:
    """JVMs started by this process from the Maven class paths, stopped when the session ends."""

    name = "local"

    def __init__(self, tubemq_topics: Mapping[str, int] | None = None) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="mqwire-test-brokers-"))
        self.launcher = Launcher(state_dir=self._root / "state", work_root=self._root, owned=True)
        self._topics = dict(tubemq_topics or {})
        self._memo = _Memo()

    @property
    def work_root(self) -> Path:
        """The folder of the brokers' work folders (data, logs), removed by :meth:`close`."""
        return self._root

    def _start(self, broker: str) -> Endpoint:
        return self.launcher.start(broker, self._topics).endpoint

    def get(self, broker: str) -> Endpoint:
        return self._memo.get(broker, lambda: self._start(broker))

    def get_many(self, brokers: list[str]) -> dict[str, Endpoint]:
        return self._memo.get_many(brokers, self._start)

    def log_files(self, broker: str) -> tuple[str, ...]:
        record = self.launcher.state.load(broker)
        return record.plan.log_files if record else ()

    def close(self) -> None:
        try:
            self.launcher.stop_all()
        finally:
            shutil.rmtree(self._root, ignore_errors=True)


_ENV = {
    "kafka": ("MQWIRE_KAFKA_URL",),
    "kafka3": ("MQWIRE_KAFKA3_URL",),
    "pulsar": ("MQWIRE_PULSAR_URL", "MQWIRE_PULSAR_ADMIN_URL"),
    "tubemq": ("MQWIRE_TUBEMQ_URL", "MQWIRE_TUBEMQ_ADMIN_URL"),
}


def external_endpoint(broker: str, env: Mapping[str, str]) -> Endpoint:
    """Build an endpoint from ``MQWIRE_*_URL`` variables (brokers someone else runs)."""
    missing = [var for var in _ENV[broker] if not env.get(var)]
    if missing:
        raise BrokerError(f"--brokers=external needs {', '.join(missing)} for {broker}")
    if broker in ("kafka", "kafka3"):
        (var,) = _ENV[broker]
        at = split_url(env[var], 9092)
        return KafkaBroker.at(at.port, at.host)
    if broker == "pulsar":
        at = split_url(env["MQWIRE_PULSAR_URL"], 6650)
        web = split_url(env["MQWIRE_PULSAR_ADMIN_URL"], 8080)
        admin_url = env["MQWIRE_PULSAR_ADMIN_URL"].rstrip("/")
        return PulsarBroker(at.host, at.port, web.port, f"pulsar://{at.host}:{at.port}", admin_url)
    master = split_url(env["MQWIRE_TUBEMQ_URL"], 8715)
    web = split_url(env["MQWIRE_TUBEMQ_ADMIN_URL"], 8080)
    broker_url = env.get("MQWIRE_TUBEMQ_BROKER_URL")
    broker_at = split_url(broker_url, 8123) if broker_url else None
    return TubeMQBroker(
        master.host,
        master.port,
        web.port,
        f"tubemq://{master.host}:{master.port}",
        env["MQWIRE_TUBEMQ_ADMIN_URL"].rstrip("/"),
        broker_at.port if broker_at else None,
        None,
        f"tubemq://{broker_at.host}:{broker_at.port}" if broker_at else None,
        int(env.get("MQWIRE_TUBEMQ_BROKER_ID") or 1),
        env.get("MQWIRE_TUBEMQ_AUTH_TOKEN", ""),
    )


class ExternalProvider:
    """Brokers that already run; their addresses come from environment variables."""

    name = "external"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)

    def get(self, broker: str) -> Endpoint:
        return external_endpoint(broker, self._env)

    def get_many(self, brokers: list[str]) -> dict[str, Endpoint]:
        return {b: self.get(b) for b in brokers}

    def log_files(self, broker: str) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        pass


class TestcontainersProvider:
    """Official images in Docker; needs a Docker engine that answers."""

    name = "testcontainers"
    __test__ = False  # not a test class, whatever pytest's name patterns say

    def __init__(self) -> None:
        self._containers: list[Any] = []
        self._memo = _Memo()
        self._engine_checked = False

    def _check_engine(self) -> None:
        if self._engine_checked:
            return
        try:
            import docker  # type: ignore[import-untyped]

            docker.from_env(timeout=5).ping()
        except Exception as err:
            raise BrokerError(
                "--brokers=testcontainers needs a Docker engine, and none answered "
                f"(DOCKER_HOST={os.environ.get('DOCKER_HOST', 'unset')}): {err}. "
                "Use --brokers=local to run the brokers as local JVMs."
            ) from err
        self._engine_checked = True

    def _run(self, image: str, env: dict[str, str], ports: list[int], command: str | None = None) -> None:
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(image)
        for key, value in env.items():
            container = container.with_env(key, value)
        for port in ports:
            # Same port inside and outside: the brokers advertise it to their clients.
            container = container.with_bind_ports(port, port)
        if command:
            container = container.with_command(command)
        container.start()
        self._containers.append(container)

    def _kafka(self, image: str, share_groups: bool) -> KafkaBroker:
        port, controller = free_ports(2)
        env = {
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://0.0.0.0:{controller}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{LOOPBACK}:{port}",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@localhost:{controller}",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        }
        if share_groups:
            # Share groups exist from Kafka 4.0 only.
            env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR"] = "1"
            env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR"] = "1"
        self._run(image, env, [port])
        _poll(f"{image} container on port {port}", lambda: kafka_wire.is_ready(port))
        return KafkaBroker.at(port)

    def _start(self, broker: str) -> Endpoint:
        self._check_engine()
        if broker == "kafka":
            return self._kafka(KAFKA_IMAGE, share_groups=True)
        if broker == "kafka3":
            return self._kafka(KAFKA3_IMAGE, share_groups=False)
        if broker == "pulsar":
            port, web = free_ports(2)
            self._run(
                PULSAR_IMAGE,
                {"advertisedAddress": LOOPBACK, "brokerServicePort": str(port), "webServicePort": str(web)},
                [port, web],
                "sh -c 'bin/apply-config-from-env.py conf/standalone.conf && "
                "exec bin/pulsar standalone --no-functions-worker --no-stream-storage'",
            )
            endpoint = PulsarBroker.at(port, web)
            _poll(f"pulsar container on port {web}", lambda: pulsar_admin.healthy(endpoint.admin_url))
            return endpoint
        raise BrokerError(
            "--brokers=testcontainers: there is no official Apache InLong TubeMQ image to run, so TubeMQ "
            "is not supported by this provider; use --brokers=local or --brokers=external"
        )

    def get(self, broker: str) -> Endpoint:
        return self._memo.get(broker, lambda: self._start(broker))

    def get_many(self, brokers: list[str]) -> dict[str, Endpoint]:
        return {b: self.get(b) for b in brokers}

    def log_files(self, broker: str) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        for container in reversed(self._containers):
            container.stop()
        self._containers.clear()


def _poll(what: str, check: Callable[[], bool], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            raise BrokerError(f"timed out waiting for {what}")
        time.sleep(0.5)


def make_provider(name: str, tubemq_topics: Mapping[str, int] | None = None) -> Provider:
    if name == "local":
        return LocalProvider(tubemq_topics)
    if name == "external":
        return ExternalProvider()
    if name == "testcontainers":
        return TestcontainersProvider()
    raise BrokerError(f"unknown broker provider {name!r}; choose from {', '.join(PROVIDERS)}")


def parse_topics(text: str | None) -> dict[str, int]:
    """``"a:4,b"`` into ``{"a": 4, "b": 1}``."""
    topics: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if item:
            name, _, count = item.partition(":")
            topics[name] = int(count or 1)
    return topics


__all__ = [
    "PROVIDERS",
    "ExternalProvider",
    "LocalProvider",
    "Provider",
    "TestcontainersProvider",
    "external_endpoint",
    "make_provider",
    "parse_topics",
]
