"""A Kafka cluster of three KRaft nodes (broker and controller each), replication 3, min.insync.replicas 2."""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqwire.testing import kafka_wire
from mqwire.testing.errors import BrokerStartError
from mqwire.testing.kafka import G1_REGION_FLAG, MAIN_CLASS, STORAGE_TOOL
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.net import LOOPBACK, free_ports
from mqwire.testing.parallel import each_in_parallel
from mqwire.testing.plan import Plan, Spawner, marker
from mqwire.testing.procs import ProcSpec, tail, wait_until

NODES = 3
# Three JVMs share two cores with everything else: small heaps, and the JIT's quick tier is enough.
JVM_FLAGS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    G1_REGION_FLAG,
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)


@dataclass(frozen=True)
class KafkaCluster:
    """How to reach the cluster: ``url`` names every node; ``node_ids`` maps node names to broker ids."""

    url: str
    bootstrap_servers: str
    node_ids: dict[str, int] = field(default_factory=dict)
    node_ports: dict[str, int] = field(default_factory=dict)
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    def node_of(self, broker_id: int) -> str:
        """The node name of a broker id (as metadata names leaders and coordinators)."""
        for node, ident in self.node_ids.items():
            if ident == broker_id:
                return node
        raise KeyError(broker_id)


def _properties(node_id: int, port: int, controller: int, voters: str, data: Path) -> str:
    here = LOOPBACK
    props = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{here}:{port},CONTROLLER://{here}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{here}:{port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": data,
        "num.partitions": 3,
        "default.replication.factor": NODES,
        "min.insync.replicas": 2,
        "unclean.leader.election.enable": "false",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": NODES,
        # Fewer internal partitions than the default 50: quicker to create on a small machine.
        "offsets.topic.num.partitions": 6,
        "transaction.state.log.replication.factor": NODES,
        "transaction.state.log.min.isr": 2,
        "transaction.state.log.num.partitions": 6,
        "share.coordinator.state.topic.replication.factor": NODES,
        "share.coordinator.state.topic.min.isr": 2,
        "group.initial.rebalance.delay.ms": 0,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaClusterKind:
    """``kafka-cluster``: nodes ``kafka-1``..``kafka-3`` with broker ids 1..3."""

    name = "kafka-cluster"
    base = "kafka"

    def build_plan(
        self, work_dir: Path, java: str, classpath: str, instance: str, options: Mapping[str, Any]
    ) -> Plan:
        ports = free_ports(2 * NODES)
        brokers, controllers = ports[:NODES], ports[NODES:]
        voters = ",".join(f"{i + 1}@{LOOPBACK}:{controllers[i]}" for i in range(NODES))
        cluster_id = _cluster_id()
        specs: list[ProcSpec] = []
        formats: dict[str, list[str]] = {}
        plan_ports: dict[str, int] = {}
        node_ports: dict[str, list[int]] = {}
        for i in range(NODES):
            node = f"kafka-{i + 1}"
            conf, logs, data = (work_dir / node / sub for sub in ("conf", "logs", "data"))
            for folder in (conf, logs, data):
                folder.mkdir(parents=True, exist_ok=True)
            props = conf / "server.properties"
            props.write_text(_properties(i + 1, brokers[i], controllers[i], voters, data), encoding="utf-8")
            log_file = logs / "kafka.log"
            log_conf = write_log4j2(conf / "log4j2.properties", log_file, quiet=("org.apache.kafka.raft",))
            mark = marker(self.name, node, instance)
            base = [java, *JVM_FLAGS, *log4j2_flags(log_conf), mark, "-cp", classpath]
            argv = (*base, MAIN_CLASS, str(props))
            specs.append(ProcSpec(node, argv, str(work_dir), str(logs / "stdout.log"), str(log_file), mark))
            formats[node] = [*base, STORAGE_TOOL, "format", f"--cluster-id={cluster_id}", "-c", str(props)]
            plan_ports[node] = brokers[i]
            plan_ports[f"{node}-controller"] = controllers[i]
            node_ports[node] = [brokers[i], controllers[i]]
        return Plan(
            self.name,
            instance,
            str(work_dir),
            plan_ports,
            specs,
            {"format_argv": formats, "node_ports": node_ports},
        )

    def _format(self, plan: Plan, node: str) -> None:
        log = plan.path(node, "logs", "format.log")
        with open(log, "wb") as out:
            done = subprocess.run(
                plan.settings["format_argv"][node],
                cwd=plan.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=180,
                check=False,
            )
        if done.returncode != 0:
            raise BrokerStartError(f"{node} storage format failed (exit {done.returncode})\n{tail(log)}")

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        nodes = [spec.role for spec in plan.procs]
        if fresh:
            each_in_parallel(lambda node: self._format(plan, node), nodes)
        # All at once: a controller quorum needs two of the three voters before any broker is ready.
        each_in_parallel(lambda node: self.start_node(plan, node, spawn, timeout), nodes)

    def start_node(self, plan: Plan, node: str, spawn: Spawner, timeout: float) -> None:
        spec = plan.proc(node)
        pid = spawn(spec)
        port = plan.ports[node]
        deadline = time.monotonic() + timeout
        wait_until(
            f"{node} ApiVersions on {LOOPBACK}:{port}",
            lambda: True if kafka_wire.is_ready(port) else None,
            max(deadline - time.monotonic(), 1.0),
            [(pid, spec)],
        )

    def endpoint(self, plan: Plan) -> KafkaCluster:
        nodes = [spec.role for spec in plan.procs]
        servers = ",".join(f"{LOOPBACK}:{plan.ports[n]}" for n in nodes)
        return KafkaCluster(
            f"kafka://{servers}",
            servers,
            {n: int(n.rsplit("-", 1)[1]) for n in nodes},
            {n: plan.ports[n] for n in nodes},
            plan.log_files,
            plan.work_dir,
        )
