"""A Pulsar cluster: ZooKeeper as the metadata store, one bookie and two brokers, each its own JVM.

Ensemble, write and ack quorum are 1 (one bookie): a broker's crash moves its topics to the other broker,
and their data stays readable through the bookie.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqwire.testing import pulsar_admin, rest
from mqwire.testing.errors import BrokerStartError
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.net import LOOPBACK, free_ports, loopback_interface, port_is_open
from mqwire.testing.parallel import each_in_parallel
from mqwire.testing.plan import Plan, Spawner, marker
from mqwire.testing.procs import ProcSpec, tail, wait_until
from mqwire.testing.pulsar import JVM_FLAGS

CLUSTER = "mqwire-cluster"
BROKERS = 2
ZOOKEEPER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
BOOKIE_CLASS = "org.apache.bookkeeper.server.Main"
BROKER_CLASS = "org.apache.pulsar.PulsarBrokerStarter"
SETUP_CLASS = "org.apache.pulsar.PulsarClusterMetadataSetup"
# pulsar.JVM_FLAGS without its heap sizes (its first two flags): four JVMs share the machine here.
COMMON_FLAGS = tuple(f for f in JVM_FLAGS if not f.startswith(("-Xms", "-Xmx", "-XX:MaxDirectMemorySize")))
NODE_FLAGS = {
    # ZooKeeper's admin server would take port 8080.
    "zookeeper": ("-Xms32m", "-Xmx128m", "-Dzookeeper.admin.enableServer=false"),
    "bookie": ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"),
    "broker": ("-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m"),
}


@dataclass(frozen=True)
class PulsarCluster:
    """How to reach the cluster: ``url`` names both brokers; each broker's admin URL and service URL."""

    url: str
    admin_url: str
    admin_urls: dict[str, str] = field(default_factory=dict)
    broker_urls: dict[str, str] = field(default_factory=dict)
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    def owner(self, topic: str) -> str | None:
        """The broker node that owns ``topic`` (a topic name, or a partition's), asked of any live broker."""
        for admin in self.admin_urls.values():
            reply = rest.answers(f"{admin}/lookup/v2/topic/{pulsar_admin.topic_path(topic)}", timeout=5.0)
            if reply is not None and reply.ok:
                url = str((reply.json() or {}).get("brokerUrl", ""))
                for node, broker_url in self.broker_urls.items():
                    if broker_url == url:
                        return node
        return None

    def unload(self, topic: str) -> None:
        """Unload ``topic`` from its broker (the next lookup may place it on the other one)."""
        for admin in self.admin_urls.values():
            reply = rest.request("PUT", f"{admin}/admin/v2/{pulsar_admin.topic_path(topic)}/unload", timeout=30.0)
            if reply.ok:
                return
        raise BrokerStartError(f"no broker unloaded {topic}")


def _props(values: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


class PulsarClusterKind:
    """``pulsar-cluster``: nodes ``zookeeper``, ``bookie``, ``broker-1`` and ``broker-2``."""

    name = "pulsar-cluster"
    base = "pulsar"

    def build_plan(
        self, work_dir: Path, java: str, classpath: str, instance: str, options: Mapping[str, Any]
    ) -> Plan:
        zk_port, bookie_port, *broker_ports = free_ports(2 + 2 * BROKERS)
        zk = f"zk:{LOOPBACK}:{zk_port}"
        specs: list[ProcSpec] = []
        node_ports: dict[str, list[int]] = {}
        plan_ports: dict[str, int] = {"zookeeper": zk_port, "bookie": bookie_port}

        def spec(node: str, heap: str, main: str, args: list[str]) -> list[str]:
            conf, logs = work_dir / node / "conf", work_dir / node / "logs"
            for folder in (conf, logs):
                folder.mkdir(parents=True, exist_ok=True)
            log_file = logs / f"{node}.log"
            log_conf = write_log4j2(conf / "log4j2.properties", log_file)
            mark = marker(self.name, node, instance)
            base = [java, *NODE_FLAGS[heap], *COMMON_FLAGS, *log4j2_flags(log_conf), mark, "-cp", classpath]
            argv = (*base, main, *args)
            specs.append(ProcSpec(node, argv, str(work_dir), str(logs / "stdout.log"), str(log_file), mark))
            return base

        zk_data = work_dir / "zookeeper" / "data"
        zk_data.mkdir(parents=True, exist_ok=True)
        base = spec("zookeeper", "zookeeper", ZOOKEEPER_CLASS, [str(zk_port), str(zk_data)])
        node_ports["zookeeper"] = [zk_port]

        bookie_conf = work_dir / "bookie" / "bookkeeper.conf"
        bookie: dict[str, object] = {
            "bookiePort": bookie_port,
            "advertisedAddress": LOOPBACK,
            "allowLoopback": "true",
            "metadataServiceUri": f"zk+hierarchical://{LOOPBACK}:{zk_port}/ledgers",
            "journalDirectories": work_dir / "bookie" / "journal",
            "ledgerDirectories": work_dir / "bookie" / "ledgers",
            "httpServerEnabled": "false",
            "journalSyncData": "false",
            "dbStorage_writeCacheMaxSizeMb": 32,
            "dbStorage_readAheadCacheMaxSizeMb": 32,
            "nettyMaxFrameSizeBytes": 5253120,
        }
        interface = loopback_interface()
        if interface:
            bookie["listeningInterface"] = interface
        spec("bookie", "bookie", BOOKIE_CLASS, ["--conf", str(bookie_conf)])
        bookie_conf.write_text(_props(bookie), encoding="utf-8")
        node_ports["bookie"] = [bookie_port]

        for i in range(BROKERS):
            node = f"broker-{i + 1}"
            port, web_port = broker_ports[2 * i], broker_ports[2 * i + 1]
            broker_conf = work_dir / node / "broker.conf"
            spec(node, "broker", BROKER_CLASS, ["--broker-conf", str(broker_conf)])
            broker_conf.write_text(
                _props(
                    {
                        "clusterName": CLUSTER,
                        "metadataStoreUrl": zk,
                        "configurationMetadataStoreUrl": zk,
                        "bindAddress": LOOPBACK,
                        "advertisedAddress": LOOPBACK,
                        "brokerServicePort": port,
                        "webServicePort": web_port,
                        "managedLedgerDefaultEnsembleSize": 1,
                        "managedLedgerDefaultWriteQuorum": 1,
                        "managedLedgerDefaultAckQuorum": 1,
                        "managedLedgerCacheSizeMB": 32,
                        "allowAutoTopicCreationType": "non-partitioned",
                        "brokerDeleteInactiveTopicsEnabled": "false",
                        "functionsWorkerEnabled": "false",
                        "webSocketServiceEnabled": "false",
                        "brokerShutdownTimeoutMs": 5000,
                        "acknowledgmentAtBatchIndexLevelEnabled": "true",
                        "topicLevelPoliciesEnabled": "true",
                    }
                ),
                encoding="utf-8",
            )
            plan_ports[node] = port
            plan_ports[f"{node}-web"] = web_port
            node_ports[node] = [port, web_port]
        first_web, first_port = plan_ports["broker-1-web"], plan_ports["broker-1"]
        setup = [
            *base,
            SETUP_CLASS,
            "--cluster",
            CLUSTER,
            "--metadata-store",
            zk,
            "--configuration-metadata-store",
            zk,
            "--web-service-url",
            f"http://{LOOPBACK}:{first_web}",
            "--broker-service-url",
            f"pulsar://{LOOPBACK}:{first_port}",
        ]
        settings = {"setup_argv": setup, "node_ports": node_ports}
        return Plan(self.name, instance, str(work_dir), plan_ports, specs, settings)

    def _setup(self, plan: Plan) -> None:
        log = plan.path("zookeeper", "logs", "cluster-setup.log")
        with open(log, "wb") as out:
            done = subprocess.run(
                plan.settings["setup_argv"],
                cwd=plan.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=180,
                check=False,
            )
        if done.returncode != 0:
            raise BrokerStartError(f"pulsar cluster metadata setup failed (exit {done.returncode})\n{tail(log)}")

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout

        def left() -> float:
            return max(deadline - time.monotonic(), 1.0)

        self.start_node(plan, "zookeeper", spawn, left())
        if fresh:
            self._setup(plan)
        self.start_node(plan, "bookie", spawn, left())
        brokers = [s.role for s in plan.procs if s.role.startswith("broker-")]
        each_in_parallel(lambda node: self.start_node(plan, node, spawn, left()), brokers)

    def start_node(self, plan: Plan, node: str, spawn: Spawner, timeout: float) -> None:
        spec = plan.proc(node)
        pid = spawn(spec)
        watched = [(pid, spec)]
        if node in ("zookeeper", "bookie"):
            port = plan.ports[node]
            wait_until(f"pulsar {node} on port {port}", lambda: True if port_is_open(port) else None, timeout, watched)
            return
        admin = f"http://{LOOPBACK}:{plan.ports[f'{node}-web']}"
        healthy = f"pulsar {node} health check"
        wait_until(healthy, lambda: True if pulsar_admin.healthy(admin) else None, timeout, watched)

    def endpoint(self, plan: Plan) -> PulsarCluster:
        brokers = [s.role for s in plan.procs if s.role.startswith("broker-")]
        urls = {b: f"pulsar://{LOOPBACK}:{plan.ports[b]}" for b in brokers}
        admins = {b: f"http://{LOOPBACK}:{plan.ports[f'{b}-web']}" for b in brokers}
        return PulsarCluster(
            "pulsar://" + ",".join(f"{LOOPBACK}:{plan.ports[b]}" for b in brokers),
            admins[brokers[0]],
            admins,
            urls,
            plan.log_files,
            plan.work_dir,
        )
