"""The broker launcher: its helpers, each real broker, and the command line."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqwire.testing import classpath, cli, kafka, kafka_wire, net, procs, pulsar_admin, tubemq_admin
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker, split_url, summary
from mqwire.testing.errors import BrokerError
from mqwire.testing.kafka import KafkaKind
from mqwire.testing.launcher import Launcher, lost_a_port
from mqwire.testing.net import LOOPBACK, free_ports, port_is_free, port_is_open
from mqwire.testing.paths import BROKER_NAMES, DEFAULT_BROKERS
from mqwire.testing.procs import ProcSpec
from mqwire.testing.providers import ExternalProvider, LocalProvider, Provider, TestcontainersProvider, parse_topics
from mqwire.testing.pulsar_admin import topic_path
from mqwire.testing.tubemq import create_topics
from tests.listening import is_loopback, listening

# --- helpers, no broker needed ---------------------------------------------------------------


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(20)
    assert len(set(ports)) == 20
    assert all(port_is_free(p) for p in ports)


def test_free_ports_stay_out_of_the_range_clients_connect_from() -> None:
    span = net.ephemeral_range()
    assert span is not None, "this Linux machine has /proc/sys/net/ipv4/ip_local_port_range"
    ports = free_ports(50)
    assert all(net.LOWEST_SERVER_PORT <= p < span[0] for p in ports), (span, ports)


def test_free_ports_ask_the_kernel_when_no_room_is_left_below_the_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(net, "ephemeral_range", lambda: (net.LOWEST_SERVER_PORT + 10, 65535))
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(port_is_free(p) for p in ports)


@pytest.fixture
def fake_kafka() -> Iterator[int]:
    """A one-shot server answering ApiVersions v0 the way a broker does."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind((LOOPBACK, 0))
    server.listen(1)
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            (size,) = struct.unpack(">i", conn.recv(4))
            request = conn.recv(size)
            seen.append(request)
            correlation = request[4:8]
            body = struct.pack(">hi", 0, 2) + struct.pack(">hhh", 18, 0, 4) + struct.pack(">hhh", 3, 0, 13)
            payload = correlation + body
            conn.sendall(struct.pack(">i", len(payload)) + payload)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    thread.join(timeout=5)
    server.close()
    (request,) = seen
    api_key, version = struct.unpack(">hh", request[:4])
    assert (api_key, version) == (18, 0)
    assert request[8:10] == struct.pack(">h", len(kafka_wire.CLIENT_ID))


def test_api_versions_probe_decodes_answer(fake_kafka: int) -> None:
    answer = kafka_wire.api_versions(fake_kafka)
    assert answer.error_code == 0
    assert kafka_wire.ApiRange(18, 0, 4) in answer.apis


def test_probe_is_false_when_nothing_listens() -> None:
    (port,) = free_ports(1)
    assert not kafka_wire.is_ready(port, timeout=0.5)
    assert not port_is_open(port, timeout=0.5)


def test_url_and_topic_helpers() -> None:
    assert split_url("kafka://127.0.0.1:9092").port == 9092
    assert split_url("127.0.0.1:1234").host == "127.0.0.1"
    assert split_url("http://h", 8080).port == 8080
    assert parse_topics("a:4, b,") == {"a": 4, "b": 1}
    assert topic_path("t") == "persistent/public/default/t"
    assert topic_path("non-persistent://x/y/t") == "non-persistent/x/y/t"
    tube = TubeMQBroker.at(1, 2, 3, 4)
    assert summary({"tubemq": tube}) == {
        "tubemq": "tubemq://127.0.0.1:1",
        "tubemq_admin": "http://127.0.0.1:2",
        "tubemq_broker": "tubemq://127.0.0.1:3",
    }


def test_external_provider_reads_environment() -> None:
    provider = ExternalProvider(
        {
            "MQWIRE_KAFKA_URL": "kafka://10.0.0.1:9092",
            "MQWIRE_PULSAR_URL": "pulsar://10.0.0.2:6650",
            "MQWIRE_PULSAR_ADMIN_URL": "http://10.0.0.2:8080/",
            "MQWIRE_KAFKA3_URL": "kafka://10.0.0.3:9093",
        }
    )
    assert provider.get("kafka") == KafkaBroker.at(9092, "10.0.0.1")
    assert provider.get("kafka3") == KafkaBroker.at(9093, "10.0.0.3")
    pulsar = provider.get("pulsar")
    assert isinstance(pulsar, PulsarBroker)
    assert pulsar.admin_url == "http://10.0.0.2:8080"
    with pytest.raises(BrokerError, match="MQWIRE_TUBEMQ_URL"):
        provider.get("tubemq")


def test_kafka3_runs_only_when_named() -> None:
    assert DEFAULT_BROKERS == ("kafka", "pulsar", "tubemq")
    # fetch (and stop, kill) cover every broker, so CI caches the kafka3 class path too.
    assert cli._names([]) == list(BROKER_NAMES)
    assert "kafka3" in BROKER_NAMES
    assert cli._names([], DEFAULT_BROKERS) == list(DEFAULT_BROKERS)
    assert cli._names(["kafka3"], DEFAULT_BROKERS) == ["kafka3"]


@pytest.fixture
def fake_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in ``mvn`` that "resolves" two jars of a scratch repository and counts its runs."""
    repo = tmp_path / "m2"
    repo.mkdir()
    script = tmp_path / "mvn"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import sys, pathlib
            repo = pathlib.Path({str(repo)!r})
            with open(repo / "runs", "a") as runs:
                runs.write("x")
            jars = [repo / "a.jar", repo / "b.jar"]
            for jar in jars:
                jar.write_bytes(b"PK")
            out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("-Dmdep.outputFile="))
            pathlib.Path(out).write_text(":".join(map(str, jars)))
            """
        )
    )
    script.chmod(0o755)
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    monkeypatch.setenv("MQWIRE_MVN", str(script))
    monkeypatch.setenv("MQWIRE_CLASSPATH_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(classpath, "pom_path", lambda name: pom)
    return repo


def test_classpath_cache_follows_pom_and_missing_jars(fake_maven: Path) -> None:
    def runs() -> int:
        return len((fake_maven / "runs").read_text())

    entries = classpath.classpath("fake").split(os.pathsep)
    assert entries == [str(fake_maven / "a.jar"), str(fake_maven / "b.jar")]
    assert classpath.classpath("fake").split(os.pathsep) == entries
    assert runs() == 1
    # A jar removed from the local repository after caching is fetched again, not handed to the JVM.
    (fake_maven / "b.jar").unlink()
    assert classpath.cached("fake") is None
    assert classpath.classpath("fake").split(os.pathsep) == entries
    assert runs() == 2
    # A pom edit (a version bump) gets a new cache key and a new resolution.
    key = classpath.pom_key("fake")
    (fake_maven.parent / "pom.xml").write_text("<project><!-- bumped --></project>")
    assert classpath.pom_key("fake") != key
    assert classpath.cached("fake") is None
    classpath.classpath("fake")
    assert runs() == 3


def test_restart_restores_missing_jars(fake_maven: Path) -> None:
    stored = classpath.classpath("fake")
    (fake_maven / "a.jar").unlink()
    classpath.restore("fake", stored)
    assert (fake_maven / "a.jar").is_file()
    with pytest.raises(classpath.ClasspathError, match="gone"):
        classpath.restore("fake", f"{stored}{os.pathsep}{fake_maven / 'old.jar'}")


def test_testcontainers_without_docker_fails_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(BrokerError, match="needs a Docker engine"):
        TestcontainersProvider().get("kafka")


def test_stop_ends_the_process_group(tmp_path: Path) -> None:
    mark = "-Dmqwire.instance=test/sleeper/1"
    spec = ProcSpec(
        "sleeper",
        (sys.executable, "-c", "import time; time.sleep(120)", mark),
        str(tmp_path),
        str(tmp_path / "out.log"),
        str(tmp_path / "out.log"),
        mark,
    )
    pid = procs.spawn(spec, owned=True)
    assert procs.alive(pid, mark)
    assert not procs.alive(pid, "-Dmqwire.instance=someone/else/2")
    procs.stop(pid, mark, timeout=5)
    assert not procs.alive(pid, mark)


def test_unavailable_broker_fails_instead_of_skipping(tmp_path: Path) -> None:
    test_file = tmp_path / "test_needs_kafka.py"
    test_file.write_text(
        textwrap.dedent(
            """
            def test_needs_kafka(kafka_broker):
                pass
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQWIRE_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "mqwire.testing.pytest_plugin", "--brokers=external", "-q",
         str(test_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0, proc.stdout
    assert "MQWIRE_KAFKA_URL" in proc.stdout
    assert "skipped" not in proc.stdout


def test_only_a_log_that_says_a_port_was_taken_counts_as_a_lost_port(tmp_path: Path) -> None:
    bound = tmp_path / "bind.log"
    bound.write_text("Caused by: java.net.BindException: Address already in use\n", encoding="utf-8")
    other = tmp_path / "other.log"
    other.write_text("java.lang.OutOfMemoryError: Java heap space\n", encoding="utf-8")
    assert lost_a_port([str(tmp_path / "missing.log"), str(bound)])
    assert not lost_a_port([str(other), str(tmp_path / "missing.log")])


# --- the real brokers ------------------------------------------------------------------------


@pytest.mark.integration
def test_classpath_cache_needs_no_maven(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = classpath.cached("kafka") or classpath.resolve("kafka")
    monkeypatch.setenv("MQWIRE_MVN", "/bin/false")
    assert classpath.classpath("kafka").split(os.pathsep) == entries


@pytest.mark.integration
def test_kafka_answers_api_versions_and_creates_topics(kafka_broker: KafkaBroker) -> None:
    assert kafka_broker.url == f"kafka://{kafka_broker.host}:{kafka_broker.port}"
    answer = kafka_wire.api_versions(kafka_broker.port, kafka_broker.host)
    assert answer.error_code == 0
    offered = {api.api_key: api for api in answer.apis}
    assert offered[kafka_wire.API_VERSIONS].max_version >= 3
    KafkaKind().create_topic(kafka_broker, "brokers-test-topic", 3)
    leaders = kafka_wire.partition_leaders(kafka_broker.port, "brokers-test-topic", kafka_broker.host)
    assert leaders is not None and sorted(leaders) == [0, 1, 2]


@pytest.mark.integration
def test_every_launched_server_listens_on_loopback_only(
    mqwire_brokers: Provider, kafka_broker: KafkaBroker, pulsar_broker: PulsarBroker, tubemq_broker: TubeMQBroker
) -> None:
    # TubeMQ's servers bind the wildcard address whatever they are told: the launcher preloads a shim
    # (mqwire.testing.loopback), and this fails without it.
    assert isinstance(mqwire_brokers, LocalProvider), "the launcher's own brokers are checked here"
    for name in ("kafka", "pulsar", "tubemq"):
        record = mqwire_brokers.launcher.state.load(name)
        assert record is not None and record.pids, f"no running {name}"
        sockets = listening(record.pids.values())
        assert sockets, f"{name}: no listening socket found"
        exposed = [(address, port) for address, port in sockets if not is_loopback(address)]
        assert not exposed, f"{name} listens beyond loopback: {exposed}"


@pytest.mark.integration
def test_kafka3_answers_api_versions(kafka3_broker: KafkaBroker) -> None:
    assert kafka3_broker.url == f"kafka://{kafka3_broker.host}:{kafka3_broker.port}"
    answer = kafka_wire.api_versions(kafka3_broker.port, kafka3_broker.host)
    assert answer.error_code == 0
    offered = {api.api_key: api for api in answer.apis}
    assert offered[kafka_wire.API_VERSIONS].max_version >= 3
    # 3.9's ranges: Fetch from v0 (Kafka 4.x starts at v4, KIP-896), Produce up to v11 (4.3.1: v13).
    assert (offered[1].min_version, offered[1].max_version) == (0, 17)
    assert (offered[0].min_version, offered[0].max_version) == (0, 11)
    KafkaKind("kafka3").create_topic(kafka3_broker, "brokers-test-topic-3", 2)
    assert kafka_wire.partition_leaders(kafka3_broker.port, "brokers-test-topic-3", kafka3_broker.host) == {0: 1, 1: 1}


@pytest.mark.integration
def test_pulsar_has_default_namespace_and_creates_topics(pulsar_broker: PulsarBroker) -> None:
    admin = pulsar_broker.admin_url
    assert "public/default" in pulsar_admin.namespaces(admin, "public")
    name = pulsar_admin.create_partitioned_topic(admin, "brokers-test-partitioned", 3)
    assert name == "persistent://public/default/brokers-test-partitioned"
    assert pulsar_admin.partitions(admin, name) == 3
    pulsar_admin.create_namespace(admin, "mqwire/brokers-test")
    single = pulsar_admin.create_topic(admin, "mqwire/brokers-test/single")
    assert single in pulsar_admin.list_topics(admin, "mqwire/brokers-test")


@pytest.mark.integration
def test_tubemq_topic_created_through_master_is_publishable(tubemq_broker: TubeMQBroker) -> None:
    admin = tubemq_broker.admin_url
    status = tubemq_admin.broker_status(admin, tubemq_broker.broker_id)
    assert status is not None and status["isBrokerOnline"] == "true"
    started = time.monotonic()
    create_topics(tubemq_broker, {"brokers_test_a": 2, "brokers_test_b": 1})
    assert {"brokers_test_a", "brokers_test_b"} <= set(tubemq_admin.topic_names(admin))
    info = tubemq_admin.topic_info(admin, "brokers_test_a")
    assert info is not None and info["totalRunNumPartCount"] == 2
    # Liveness only: the master creates topics in a few seconds; a stuck creation must not pass unnoticed.
    assert time.monotonic() - started < 120


def _running(pid: int) -> bool:
    # A detached JVM is reaped by init, which may leave it a zombie for a moment.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _cli(state_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MQWIRE_STATE_DIR": str(state_dir)}
    proc = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", *args], env=env, capture_output=True, text=True, timeout=300
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.integration
def test_cli_start_status_topic_kill_restart_stop(tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        started = json.loads(_cli(state, "start", "kafka").stdout)
        url = started["kafka"]
        port = split_url(url).port
        assert kafka_wire.is_ready(port)
        assert json.loads(_cli(state, "status").stdout)["kafka"] == url

        again = _cli(state, "start", "kafka")
        assert "already running" in again.stderr
        assert json.loads(again.stdout)["brokers"]["kafka"]["already_running"] is True

        topic = json.loads(_cli(state, "create-topic", "kafka", "cli-topic", "--partitions", "2").stdout)
        assert topic == {"broker": "kafka", "topic": "cli-topic", "partitions": 2}

        _cli(state, "kill", "kafka")
        assert "kafka" not in json.loads(_cli(state, "status").stdout)
        assert not kafka_wire.is_ready(port, timeout=0.5)

        revived = json.loads(_cli(state, "start", "kafka").stdout)
        assert revived["kafka"] == url
        assert kafka_wire.partition_leaders(port, "cli-topic") == {0: 1, 1: 1}
        pid = revived["brokers"]["kafka"]["pids"]["kafka"]
        work_dir = Path(revived["brokers"]["kafka"]["data_dir"])
    finally:
        _cli(state, "stop", check=False)
    assert json.loads(_cli(state, "status").stdout)["brokers"] == {}
    assert not _running(pid)
    assert not work_dir.exists()


@pytest.mark.integration
def test_failed_integration_test_shows_broker_log_tail(tmp_path: Path) -> None:
    test_file = tmp_path / "test_fails.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.integration
            def test_fails(kafka_broker):
                assert False, "on purpose"
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "mqwire.testing.pytest_plugin", "--brokers=local", "-q", str(test_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "1 failed" in proc.stdout
    assert "kafka broker log tail" in proc.stdout
    assert "kafka.log" in proc.stdout


@pytest.mark.integration
def test_a_fresh_broker_that_loses_a_port_starts_again_on_new_ports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Another process listens on the port chosen for the first start, as a client's ephemeral port can.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        held = taken.getsockname()[1]
        chosen: list[list[int]] = []

        def ports_the_first_of_them_taken(count: int) -> list[int]:
            ports = [p for p in free_ports(count + 1) if p != held][:count]
            if not chosen:
                ports[0] = held
            chosen.append(ports)
            return ports

        monkeypatch.setattr(kafka, "free_ports", ports_the_first_of_them_taken)
        launcher = Launcher(state_dir=tmp_path / "state", work_root=tmp_path / "work", owned=True)
        try:
            status = launcher.start("kafka")
            endpoint = status.endpoint
            assert isinstance(endpoint, KafkaBroker)
            assert len(chosen) == 2 and chosen[0][0] == held
            assert endpoint.port == chosen[1][0] != held
            assert kafka_wire.is_ready(endpoint.port)
            (first,) = [d for d in (tmp_path / "work").glob("mqwire-kafka-*") if str(d) != status.work_dir]
            assert lost_a_port(str(log) for log in (first / "logs").iterdir())
        finally:
            launcher.stop("kafka")
