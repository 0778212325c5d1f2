"""Where test brokers come from: started here (local), in containers, or already running (external)."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from mqwire.testing import containers, engine, images, kafka_wire, pulsar_admin
from mqwire.testing.endpoints import Endpoint, KafkaBroker, PulsarBroker, TubeMQBroker, split_url
from mqwire.testing.errors import BrokerError
from mqwire.testing.java import JavaNotFound, find_java
from mqwire.testing.launcher import KINDS, Launcher, start_timeout
from mqwire.testing.net import LOOPBACK, free_ports

PROVIDERS = ("local", "testcontainers", "external")
log = logging.getLogger(__name__)


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


# Official images, selectable where a registry is reachable (not tested on machines without one).
OFFICIAL_IMAGE_ENV = {"kafka": "MQWIRE_KAFKA_IMAGE", "kafka3": "MQWIRE_KAFKA3_IMAGE", "pulsar": "MQWIRE_PULSAR_IMAGE"}


class TestcontainersProvider:
    """The brokers in Docker containers of the images built here (``python -m mqwire.testing images build``).

    Each container runs the local launcher's plan for its broker (see :mod:`mqwire.testing.containers`),
    its ports published on 127.0.0.1 only. ``MQWIRE_KAFKA_IMAGE``, ``MQWIRE_KAFKA3_IMAGE`` and
    ``MQWIRE_PULSAR_IMAGE`` select an official image instead. testcontainers' reaper (Ryuk) is not used, its
    image coming from a registry: every container is labelled and removed by label at :meth:`close`, at
    interpreter exit, and, when its interpreter was killed, by the next session on the same host.
    """

    name = "testcontainers"
    __test__ = False  # not a test class, whatever pytest's name patterns say

    def __init__(self, tubemq_topics: Mapping[str, int] | None = None, env: Mapping[str, str] | None = None) -> None:
        self._topics = dict(tubemq_topics or {})
        self._env = dict(os.environ if env is None else env)
        self.session = containers.session_id()
        self._root = Path(tempfile.mkdtemp(prefix=containers.ROOT_PREFIX))
        self._lock = threading.Lock()
        self._running: dict[str, containers.Running] = {}
        self._official: list[Any] = []
        self._memo = _Memo()
        self._engine: Any = None
        self._closed = False
        atexit.register(self.close)

    @property
    def work_root(self) -> Path:
        """The folder of the brokers' work folders (mounted into their containers), removed by :meth:`close`."""
        return self._root

    def _client(self) -> Any:
        with self._lock:
            if self._engine is not None:
                return self._engine
            why = engine.answers()
            if why is not None:
                raise BrokerError(
                    "--brokers=testcontainers needs a Docker engine, and none answered "
                    f"(DOCKER_HOST={self._env.get('DOCKER_HOST', 'unset')}): {why}. Start one (as root on Debian: "
                    "`make docker-engine`), or use --brokers=local to run the brokers as local JVMs."
                )
            # Ryuk's image would come from a registry: cleanup is by label instead.
            os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
            try:
                from testcontainers.core.config import testcontainers_config
            except ModuleNotFoundError as err:
                raise BrokerError(
                    "--brokers=testcontainers needs testcontainers-python: pip install 'testcontainers>=4.7,<5'"
                ) from err

            testcontainers_config.ryuk_disabled = True
            import docker  # type: ignore[import-untyped]

            client = docker.from_env(timeout=60)
            left = containers.remove_labelled(client, dead_owners_only=True)
            if left:
                log.warning("removed containers left by a killed session: %s", ", ".join(left))
            self._engine = client
            return client

    def _start(self, broker: str) -> Endpoint:
        engine_client = self._client()
        official = self._env.get(OFFICIAL_IMAGE_ENV.get(broker, ""))
        if official:
            return self._start_official(broker, official)
        if broker not in images.IMAGE_NAMES:
            raise BrokerError(f"--brokers=testcontainers has no image for {broker!r}")
        found = images.layout(broker)
        tag = images.image_tag(broker, found)
        if not images.present(engine_client, tag):
            raise BrokerError(
                f"the {broker} image {tag} is not in the Docker engine: build it with "
                f"`python -m mqwire.testing images build --only {broker}` (or `make images`)"
            )
        java = "java"
        if broker in ("kafka", "kafka3"):
            # Kafka's certificates are made by the plan with the keytool of a local JDK.
            try:
                java = find_java(broker).executable
            except JavaNotFound as err:
                raise BrokerError(f"{broker} in a container still needs a local JDK's keytool: {err}") from err
        work_dir = Path(tempfile.mkdtemp(prefix=f"{broker}-", dir=self._root))
        plan = KINDS[broker].build_plan(work_dir, java, found.classpath, uuid.uuid4().hex[:12])
        if broker == "tubemq":
            plan.settings["topics"] = dict(self._topics)
        running = containers.run(broker, tag, plan, found, self.session)
        with self._lock:
            self._running[broker] = running
        try:
            containers.wait_ready(running, self._topics, start_timeout())
        except BaseException:
            running.remove()
            raise
        return containers.endpoint(running)

    def _start_official(self, broker: str, image: str) -> Endpoint:
        if broker == "pulsar":
            port, web = free_ports(2)
            self._run_official(
                image,
                {"advertisedAddress": LOOPBACK, "brokerServicePort": str(port), "webServicePort": str(web)},
                [port, web],
                "sh -c 'bin/apply-config-from-env.py conf/standalone.conf && "
                "exec bin/pulsar standalone --no-functions-worker --no-stream-storage'",
            )
            endpoint = PulsarBroker.at(port, web)
            _poll(f"{image} container on port {web}", lambda: pulsar_admin.healthy(endpoint.admin_url))
            return endpoint
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
        if broker == "kafka":
            # Share groups exist from Kafka 4.0 only.
            env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR"] = "1"
            env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR"] = "1"
        self._run_official(image, env, [port])
        _poll(f"{image} container on port {port}", lambda: kafka_wire.is_ready(port))
        return KafkaBroker.at(port)

    def _run_official(self, image: str, env: dict[str, str], ports: list[int], command: str | None = None) -> None:
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(image, command=command, env=env, labels=containers.labels(self.session, self._root))
        published = cast(dict[str, Any], container.ports)
        for port in ports:
            # Same port inside and outside: the brokers advertise it to their clients.
            published[f"{port}/tcp"] = (LOOPBACK, port)
        with self._lock:
            self._official.append(container)
        container.start()

    def get(self, broker: str) -> Endpoint:
        return self._memo.get(broker, lambda: self._start(broker))

    def get_many(self, brokers: list[str]) -> dict[str, Endpoint]:
        return self._memo.get_many(brokers, self._start)

    def log_files(self, broker: str) -> tuple[str, ...]:
        running = self._running.get(broker)
        return running.plan.log_files if running else ()

    def close(self) -> None:
        """Remove this session's containers (by label, whatever state they are in) and their work folders."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = list(self._running.values())
            official = list(self._official)
        try:
            for running in started:
                running.remove()
            for container in official:
                with contextlib.suppress(Exception):
                    container.stop()
            if self._engine is not None:
                containers.remove_labelled(self._engine, self.session)
                self._engine.close()
        finally:
            shutil.rmtree(self._root, ignore_errors=True)
            atexit.unregister(self.close)


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
        return TestcontainersProvider(tubemq_topics)
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
