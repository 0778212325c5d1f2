"""Apache Pulsar standalone: broker, one bookie and RocksDB metadata in one JVM."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mqwire.testing import classpath, procs, pulsar_admin, rest
from mqwire.testing.endpoints import Endpoint, PulsarBroker
from mqwire.testing.java import find_java
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.net import LOOPBACK, free_ports, loopback_interface
from mqwire.testing.plan import Plan, Spawner, Wait, marker
from mqwire.testing.procs import ProcSpec, wait_until

MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
CLUSTER = "standalone"
JVM_FLAGS = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:MaxDirectMemorySize=512m",
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djute.maxbuffer=10485760",
    "-Dlog4j2.is.webapp=false",
    # BookKeeper: posix_fadvise and direct-memory CRC32; Netty: DirectByteBuffer access;
    # sun.net / sun.management: DNS resolver and GC metrics.
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens=java.base/sun.net=ALL-UNNAMED",
    "--add-opens=java.management/sun.management=ALL-UNNAMED",
    # The bookie and the broker find each other through Pulsar's metadata store, not ZooKeeper.
    "-Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
    "-Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
)
# Grace period for the standalone starter to create public/default itself before we do it.
NAMESPACE_GRACE_SECONDS = 20.0


def _standalone_conf(port: int, web_port: int, extra: dict[str, str | int] | None = None) -> str:
    # Broker keys and bookie keys share this file: the standalone starter loads it for both.
    props: dict[str, str | int] = {
        "clusterName": CLUSTER,
        "bindAddress": LOOPBACK,
        "advertisedAddress": LOOPBACK,
        "brokerServicePort": port,
        "webServicePort": web_port,
        "managedLedgerDefaultEnsembleSize": 1,
        "managedLedgerDefaultWriteQuorum": 1,
        "managedLedgerDefaultAckQuorum": 1,
        "managedLedgerCacheSizeMB": 64,
        "allowAutoTopicCreation": "true",
        "allowAutoTopicCreationType": "non-partitioned",
        # Tests leave topics idle between steps; deleting them behind the tests' back would confuse.
        "brokerDeleteInactiveTopicsEnabled": "false",
        "functionsWorkerEnabled": "false",
        "webSocketServiceEnabled": "false",
        "brokerShutdownTimeoutMs": 5000,
        # Acks of single messages of a batch (ack_set) are kept instead of ignored.
        "acknowledgmentAtBatchIndexLevelEnabled": "true",
        # Transactions: the standalone creates the coordinator's system topic itself.
        "transactionCoordinatorEnabled": "true",
        # Bookie: loopback only, the requested port, small caches, no fsync per entry.
        "allowEphemeralPorts": "true",
        "allowLoopback": "true",
        "httpServerEnabled": "false",
        "journalSyncData": "false",
        "dbStorage_writeCacheMaxSizeMb": 32,
        "dbStorage_readAheadCacheMaxSizeMb": 32,
        # As in Pulsar's own bookkeeper.conf: a full 5 MiB message plus framing must fit in one bookie frame
        # (the bookie's built-in default is exactly 5 MiB, so a chunk of the maximum size would be refused).
        "nettyMaxFrameSizeBytes": 5253120,
    }
    interface = loopback_interface()
    if interface:
        props["listeningInterface"] = interface
    props.update(extra or {})
    return "".join(f"{k}={v}\n" for k, v in props.items())


class PulsarKind:
    name = "pulsar"

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan:
        return self.plan_with(work_dir, java, classpath, instance)

    def plan_with(
        self, work_dir: Path, java: str, classpath: str, instance: str, security: Security | None = None
    ) -> Plan:
        """The plan, with token authentication and a TLS port when ``security`` is given."""
        port, web_port, bookie_port, tls_port = free_ports(4)
        extra = {} if security is None else security.conf(tls_port)
        conf = work_dir / "conf"
        logs = work_dir / "logs"
        data = work_dir / "data"
        for folder in (conf, logs, data):
            folder.mkdir(parents=True, exist_ok=True)
        conf_file = conf / "standalone.conf"
        conf_file.write_text(_standalone_conf(port, web_port, extra), encoding="utf-8")
        log_file = logs / "pulsar.log"
        log_conf = write_log4j2(conf / "log4j2.properties", log_file)
        mark = marker(self.name, "pulsar", instance)
        argv = (
            java,
            *JVM_FLAGS,
            *log4j2_flags(log_conf),
            mark,
            "-cp",
            classpath,
            MAIN_CLASS,
            "--config",
            str(conf_file),
            "--no-functions-worker",
            "--no-stream-storage",
            "--metadata-dir",
            str(data / "metadata"),
            "--bookkeeper-dir",
            str(data / "bookkeeper"),
            # Must not exist: its presence would switch the starter to ZooKeeper metadata.
            "--zookeeper-dir",
            str(data / "zookeeper"),
            "--bookkeeper-port",
            str(bookie_port),
        )
        spec = ProcSpec("pulsar", argv, str(work_dir), str(logs / "pulsar.stdout.log"), str(log_file), mark)
        ports = {"broker": port, "web": web_port, "bookie": bookie_port}
        if security is not None:
            ports["broker_tls"] = tls_port
        return Plan(self.name, instance, str(work_dir), ports, [spec])

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        spec = plan.proc("pulsar")
        pid = spawn(spec)
        admin = f"http://{LOOPBACK}:{plan.ports['web']}"
        watched = [(pid, spec)]

        def left() -> float:
            return max(deadline - time.monotonic(), 1.0)

        def wait(what: str, check: Callable[[], bool]) -> None:
            wait_until(what, lambda: True if check() else None, left(), watched)

        wait_ready(admin, wait)

    def endpoint(self, plan: Plan) -> PulsarBroker:
        return PulsarBroker.at(
            plan.ports["broker"], plan.ports["web"], log_files=plan.log_files, data_dir=plan.work_dir
        )

    def create_topic(self, endpoint: Endpoint, topic: str, partitions: int, timeout: float = 30.0) -> str:
        """``partitions`` > 0 makes a partitioned topic, 0 a non-partitioned one."""
        if not isinstance(endpoint, PulsarBroker):
            raise TypeError("a PulsarBroker is needed")
        if partitions > 0:
            return pulsar_admin.create_partitioned_topic(endpoint.admin_url, topic, partitions)
        return pulsar_admin.create_topic(endpoint.admin_url, topic)


# ------------------------------------------------------------------------------- a secured standalone
@dataclass(frozen=True)
class Security:
    """Token authentication (HS256 secret key) and TLS (PEM files) for a standalone of its own.

    ``superuser_token`` is a token whose subject is in ``superUserRoles``: the broker uses it for its own
    admin client, and the launcher for its readiness checks.
    """

    token_secret: bytes
    superuser_role: str
    superuser_token: str
    cert_file: str
    key_file: str
    ca_file: str
    # Also the TLS provider: a client certificate signed by ``ca_file`` authenticates as its common name.
    tls_authentication: bool = False

    def conf(self, tls_port: int) -> dict[str, str | int]:
        providers = ["org.apache.pulsar.broker.authentication.AuthenticationProviderToken"]
        if self.tls_authentication:
            providers.append("org.apache.pulsar.broker.authentication.AuthenticationProviderTls")
        return {
            "authenticationEnabled": "true",
            "authenticationProviders": ",".join(providers),
            "tokenSecretKey": "data:;base64," + base64.b64encode(self.token_secret).decode(),
            "superUserRoles": self.superuser_role,
            "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "brokerClientAuthenticationParameters": json.dumps({"token": self.superuser_token}),
            # Expired tokens are found (and refreshed by a challenge) within a second, not a minute.
            "authenticationRefreshCheckSeconds": 1,
            "brokerServicePortTls": tls_port,
            "tlsCertificateFilePath": self.cert_file,
            "tlsKeyFilePath": self.key_file,
            "tlsTrustCertsFilePath": self.ca_file,
        }


@dataclass
class SecuredPulsar:
    """A running secured standalone: ``url`` (token only) and ``tls_url`` (``pulsar+ssl://``, token too)."""

    url: str
    tls_url: str
    admin_url: str
    pid: int
    spec: ProcSpec

    def stop(self) -> None:
        procs.stop(self.pid, self.spec.marker, 20.0)


def _authorized_get(url: str, token: str) -> int | None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5.0) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return None


def start_secured(work_dir: Path, security: Security, timeout: float = 180.0) -> SecuredPulsar:
    """Start a standalone with token authentication and a TLS port in ``work_dir``; stop it with ``.stop()``."""
    java = find_java("pulsar").executable
    plan = PulsarKind().plan_with(work_dir, java, classpath.classpath("pulsar"), uuid.uuid4().hex[:12], security)
    spec = plan.proc("pulsar")
    pid = procs.spawn(spec, owned=True)
    admin = f"http://{LOOPBACK}:{plan.ports['web']}"
    token = security.superuser_token
    try:
        # The standalone creates public/default itself, with its own (authenticated) admin client.
        wait_until(
            "secured pulsar namespace public/default",
            lambda: True if _authorized_get(f"{admin}/admin/v2/namespaces/public/default/topics", token) == 200
            else None,
            timeout,
            [(pid, spec)],
        )
        wait_until(
            "secured pulsar health check",
            lambda: True if _authorized_get(f"{admin}/admin/v2/brokers/health", token) == 200 else None,
            timeout,
            [(pid, spec)],
        )
    except BaseException:
        procs.kill(pid, spec.marker)
        raise
    return SecuredPulsar(
        f"pulsar://{LOOPBACK}:{plan.ports['broker']}",
        f"pulsar+ssl://{LOOPBACK}:{plan.ports['broker_tls']}",
        admin,
        pid,
        spec,
    )


def wait_ready(admin: str, wait: Wait) -> None:
    """A standalone's readiness, through its admin API at ``admin``: the cluster listed, the default namespace
    there (made after a grace period when the starter did not make it), the health check passing."""

    def cluster_listed() -> bool:
        reply = rest.answers(f"{admin}/admin/v2/clusters")
        return reply is not None and reply.ok and CLUSTER in (reply.json() or [])

    wait(f"pulsar admin API on {admin}", cluster_listed)
    grace_end = time.monotonic() + NAMESPACE_GRACE_SECONDS

    def default_namespace() -> bool:
        if pulsar_admin.DEFAULT_TENANT in pulsar_admin.tenants(admin) and (
            pulsar_admin.DEFAULT_NAMESPACE in pulsar_admin.namespaces(admin)
        ):
            return True
        if time.monotonic() > grace_end:
            pulsar_admin.create_namespace(admin, pulsar_admin.DEFAULT_NAMESPACE)
        return False

    wait("pulsar namespace public/default", default_namespace)
    wait("pulsar broker health check", lambda: pulsar_admin.healthy(admin))
