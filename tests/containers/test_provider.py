"""The containerized brokers' bad input: no engine, a missing image, a container that never becomes ready or
exits, leftovers of a killed session; and how a launcher plan is turned into a container's command.

The first group needs no engine; the rest need a Docker engine and the images built here
(``python -m mqwire.testing images build``), and fail (never skip) without them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import docker  # type: ignore[import-untyped]
import pytest

from mqwire.testing import containers, engine, images
from mqwire.testing.errors import BrokerError
from mqwire.testing.plan import Plan
from mqwire.testing.procs import ProcSpec
from mqwire.testing.providers import TestcontainersProvider


# ------------------------------------------------------------------------------------------ no engine needed
def _plan(tmp_path: Path, name: str, argv: tuple[str, ...]) -> Plan:
    spec = ProcSpec(name, argv, str(tmp_path), str(tmp_path / "out.log"), str(tmp_path / "x.log"), "-Dm=1")
    return Plan(name, "i", str(tmp_path), {"broker": 1, "proxy": 2}, [spec])


def test_a_launcher_command_runs_with_the_images_java_and_class_path(tmp_path: Path) -> None:
    inside = "/opt/mqwire/tubemq/lib/0000-a.jar"
    found = images.Layout("tubemq", (("/m2/a.jar", inside),), inside)
    argv = ("env", "LD_PRELOAD=/x/loopback.so", "MQWIRE_BIND_ADDRESS=127.0.0.1", "/usr/lib/jvm/bin/java", "-Xmx1g",
            "-cp", "/m2/a.jar", "Main", "-f", "/w/master.ini")
    assert containers.container_argv(argv, found) == [
        "java", "-Xmx1g", "-cp", inside, "Main", "-f", "/w/master.ini"
    ]
    registry = images.Layout("registry", (), "/opt/mqwire/registry/app/runner.jar")
    assert containers.container_argv(
        ("/j/java", "-Dquarkus.http.host=127.0.0.1", "-jar", "/cache/runner.jar"), registry
    ) == ["java", "-Dquarkus.http.host=0.0.0.0", "-jar", "/opt/mqwire/registry/app/runner.jar"]


def test_servers_listen_on_the_containers_addresses_and_advertise_loopback(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    kafka = _plan(tmp_path, "kafka", ("java",))
    (tmp_path / "conf" / "server.properties").write_text(
        "listeners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:3\n"
        "advertised.listeners=PLAINTEXT://127.0.0.1:1\ncontroller.quorum.bootstrap.servers=127.0.0.1:3\n"
    )
    containers.listen_anywhere(kafka)
    assert (tmp_path / "conf" / "server.properties").read_text().splitlines() == [
        "listeners=PLAINTEXT://0.0.0.0:1,CONTROLLER://0.0.0.0:3",
        "advertised.listeners=PLAINTEXT://127.0.0.1:1",
        "controller.quorum.bootstrap.servers=127.0.0.1:3",
    ]
    pulsar = _plan(tmp_path, "pulsar", ("java",))
    (tmp_path / "conf" / "standalone.conf").write_text(
        "bindAddress=127.0.0.1\nadvertisedAddress=127.0.0.1\nlisteningInterface=lo\n"
    )
    containers.listen_anywhere(pulsar)
    assert (tmp_path / "conf" / "standalone.conf").read_text().splitlines() == [
        "bindAddress=0.0.0.0",
        "advertisedAddress=127.0.0.1",
    ]
    # The fault proxy's port is the host's, never the container's.
    assert containers.published_ports(kafka) == [1]


def test_an_image_tag_changes_with_its_jars_and_only_then(tmp_path: Path) -> None:
    jar = tmp_path / "kafka-clients-4.3.1.jar"
    jar.write_bytes(b"x" * 10)
    tag = images.image_tag("kafka", images.layout("kafka", [str(jar)]))
    assert tag == images.image_tag("kafka", images.layout("kafka", [str(jar)]))
    assert tag.startswith("mqwire-testing/kafka:")
    newer = tmp_path / "kafka-clients-4.3.2.jar"
    newer.write_bytes(b"x" * 10)
    assert images.image_tag("kafka", images.layout("kafka", [str(newer)])) != tag
    jar.write_bytes(b"x" * 11)
    assert images.image_tag("kafka", images.layout("kafka", [str(jar)])) != tag


@pytest.fixture
def silent_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """DOCKER_HOST at a port that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    url = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    monkeypatch.setenv("DOCKER_HOST", url)
    try:
        yield url
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def test_no_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    provider = TestcontainersProvider()
    try:
        with pytest.raises(BrokerError, match="make docker-engine"):
            provider.get("tubemq")
    finally:
        provider.close()
    with pytest.raises(images.ImageError, match="no Docker engine answers"):
        images.build(["kafka"])


def test_an_engine_that_never_answers_is_given_up(silent_engine: str) -> None:
    # Bounded by the ping's timeout (pytest-timeout would end a wait that is not).
    why = engine.answers(timeout=1.0)
    assert why is not None and "timed out" in why.lower()
    provider = TestcontainersProvider()
    try:
        with pytest.raises(BrokerError, match=f"none answered \\(DOCKER_HOST={silent_engine}\\)"):
            provider.get("kafka")
    finally:
        provider.close()


def test_ensure_leaves_a_running_engine_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(engine, "answers", lambda timeout=5.0: None)

    def refuse() -> list[str]:
        raise AssertionError("nothing is installed when an engine answers")

    monkeypatch.setattr(engine, "install_missing", refuse)
    assert engine.ensure(tmp_path) == "a Docker engine answers; nothing to do"
    assert list(tmp_path.iterdir()) == []
    # And stop touches only a dockerd whose pid file it wrote.
    assert engine.stop(tmp_path) == "no dockerd was started here; nothing to stop"


# ------------------------------------------------------------------------------------------ with the engine
@pytest.fixture
def docker_engine() -> Iterator[object]:
    client = docker.from_env(timeout=60)
    try:
        client.ping()
    except Exception as err:
        pytest.fail(f"these tests need a Docker engine (make docker-engine): {err}", pytrace=False)
    try:
        yield client
    finally:
        client.close()


def _labelled(client: object, session: str) -> list[str]:
    return [c.name for c in client.containers.list(all=True, filters={"label": f"{containers.LABEL}={session}"})]  # type: ignore[attr-defined]


def test_a_missing_image_says_how_to_build_it(docker_engine: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "image_tag", lambda name, found=None: f"mqwire-testing/{name}:never-built")
    provider = TestcontainersProvider()
    try:
        with pytest.raises(BrokerError, match=r"mqwire-testing/registry:never-built .*images build --only registry"):
            provider.get("registry")
    finally:
        provider.close()


@pytest.mark.parametrize(
    ("command", "expected"),
    [("sleep 600", "timed out waiting for schema registry API"), ("echo broken-start >&2; exit 3", "exited")],
    ids=["never-ready", "exits"],
)
def test_a_container_that_does_not_become_ready_is_named_and_removed(
    docker_engine: object, monkeypatch: pytest.MonkeyPatch, command: str, expected: str
) -> None:
    monkeypatch.setenv("MQWIRE_START_TIMEOUT", "3")
    monkeypatch.setattr(containers, "script", lambda plan, found: command)
    provider = TestcontainersProvider()
    try:
        with pytest.raises(containers.ContainerError) as raised:
            provider.get("registry")
        message = str(raised.value)
        assert f"container mqwire-registry-{provider.session}" in message and expected in message, message
        if "broken-start" in command:
            assert "broken-start" in message, message  # its last log lines
        assert _labelled(docker_engine, provider.session) == []
    finally:
        provider.close()


def test_leftovers_of_a_killed_session_go_at_the_next_start(docker_engine: object, tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    made = []
    roots = {}
    for session, pid in (("killed", dead.pid), ("running", os.getpid())):
        roots[session] = tmp_path / f"{containers.ROOT_PREFIX}{session}"
        (roots[session] / "kafka-1").mkdir(parents=True)
        made.append(
            docker_engine.containers.create(  # type: ignore[attr-defined]
                images.base_tag(),
                command=["sleep", "600"],
                labels={
                    containers.LABEL: f"test-{session}",
                    containers.OWNER_LABEL: f"{host}:{pid}",
                    containers.ROOT_LABEL: str(roots[session]),
                },
            )
        )
    provider = TestcontainersProvider()
    try:
        provider._client()
        assert _labelled(docker_engine, "test-killed") == []
        assert not roots["killed"].exists()
        # Another session's, whose interpreter still runs, is left alone.
        assert _labelled(docker_engine, "test-running") == [made[1].name]
        assert roots["running"].is_dir()
    finally:
        provider.close()
        containers.remove_labelled(docker_engine, "test-running")


class _RefusingEngine:
    """An engine that has the base image, lacks every other, and refuses to create a container."""

    class images:
        @staticmethod
        def get(tag: str) -> object:
            if "/base:" in tag:
                return object()
            raise docker.errors.ImageNotFound(tag)

    class containers:
        @staticmethod
        def create(*args: object, **kwargs: object) -> object:
            raise docker.errors.APIError("no space left on device")


def test_an_image_that_fails_to_build_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / "kafka_2.13-4.3.1.jar"
    jar.write_bytes(b"jar")
    monkeypatch.setattr(images.classpath, "cached", lambda name: [str(jar)])
    lines: list[str] = []
    with pytest.raises(images.ImageError, match=r"building the kafka image mqwire-testing/kafka:\w+ failed: "
                       r"APIError: no space left on device.*images build --only kafka"):
        images.build(["kafka"], log=lines.append, engine=_RefusingEngine())


def test_ensure_starts_nothing_for_an_engine_named_elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/elsewhere.sock")
    with pytest.raises(engine.EngineError, match=r"elsewhere\.sock does not answer"):
        engine.ensure(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_without_testcontainers_installed_the_error_says_what_to_install(
    docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "testcontainers.core.config", None)
    provider = TestcontainersProvider()
    try:
        with pytest.raises(BrokerError, match=r"needs testcontainers-python: pip install"):
            provider.get("kafka")
    finally:
        provider.close()
    monkeypatch.setitem(sys.modules, "docker", None)
    assert "pip install 'testcontainers" in str(engine.answers())
