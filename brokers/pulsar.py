"""Apache Pulsar standalone: broker, one bookie and RocksDB metadata in one JVM."""

from __future__ import annotations

import time
from pathlib import Path

from brokers import pulsar_admin, rest
from brokers.endpoints import Endpoint, PulsarBroker
from brokers.logconf import log4j2_flags, write_log4j2
from brokers.net import LOOPBACK, free_ports, loopback_interface
from brokers.plan import Plan, Spawner, marker
from brokers.procs import ProcSpec, wait_until

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


def _standalone_conf(port: int, web_port: int) -> str:
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
        # Bookie: loopback only, the requested port, small caches, no fsync per entry.
        "allowEphemeralPorts": "true",
        "allowLoopback": "true",
        "httpServerEnabled": "false",
        "journalSyncData": "false",
        "dbStorage_writeCacheMaxSizeMb": 32,
        "dbStorage_readAheadCacheMaxSizeMb": 32,
    }
    interface = loopback_interface()
    if interface:
        props["listeningInterface"] = interface
    return "".join(f"{k}={v}\n" for k, v in props.items())


class PulsarKind:
    name = "pulsar"

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan:
        port, web_port, bookie_port = free_ports(3)
        conf = work_dir / "conf"
        logs = work_dir / "logs"
        data = work_dir / "data"
        for folder in (conf, logs, data):
            folder.mkdir(parents=True, exist_ok=True)
        conf_file = conf / "standalone.conf"
        conf_file.write_text(_standalone_conf(port, web_port), encoding="utf-8")
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
        return Plan(
            self.name, instance, str(work_dir), {"broker": port, "web": web_port, "bookie": bookie_port}, [spec]
        )

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        spec = plan.proc("pulsar")
        pid = spawn(spec)
        admin = f"http://{LOOPBACK}:{plan.ports['web']}"
        watched = [(pid, spec)]

        def left() -> float:
            return max(deadline - time.monotonic(), 1.0)

        def cluster_listed() -> bool | None:
            reply = rest.answers(f"{admin}/admin/v2/clusters")
            return True if reply is not None and reply.ok and CLUSTER in (reply.json() or []) else None

        wait_until(f"pulsar admin API on {admin}", cluster_listed, left(), watched)
        grace_end = time.monotonic() + NAMESPACE_GRACE_SECONDS

        def default_namespace() -> bool | None:
            if pulsar_admin.DEFAULT_TENANT in pulsar_admin.tenants(admin) and (
                pulsar_admin.DEFAULT_NAMESPACE in pulsar_admin.namespaces(admin)
            ):
                return True
            if time.monotonic() > grace_end:
                pulsar_admin.create_namespace(admin, pulsar_admin.DEFAULT_NAMESPACE)
            return None

        wait_until("pulsar namespace public/default", default_namespace, left(), watched)
        wait_until(
            "pulsar broker health check", lambda: True if pulsar_admin.healthy(admin) else None, left(), watched
        )

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
