"""Clusters of several nodes (Kafka, Pulsar, TubeMQ) from the same jars as the single brokers.

A cluster is one plan whose processes are its nodes (``kafka-1``, ``master-2``, ``broker-1``...). The whole
cluster starts, stops and is killed like a single broker; one node at a time is killed (SIGKILL), stopped
(SIGTERM: Kafka's controlled shutdown) or started again by name, on its own ports and data.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mqwire.testing import classpath, procs
from mqwire.testing.errors import BrokerError, BrokerStartError
from mqwire.testing.java import find_java
from mqwire.testing.kafka_cluster import KafkaClusterKind
from mqwire.testing.launcher import STOP_TIMEOUT, on_new_ports_when_one_is_lost, start_failure, start_timeout
from mqwire.testing.net import wait_ports_free
from mqwire.testing.parallel import each_in_parallel
from mqwire.testing.paths import default_state_dir
from mqwire.testing.plan import Plan, Spawner
from mqwire.testing.procs import ProcSpec
from mqwire.testing.pulsar_cluster import PulsarClusterKind
from mqwire.testing.state import Record, StateDir, end
from mqwire.testing.tubemq_cluster import TubeMQClusterKind


class ClusterKind(Protocol):
    """What each cluster module provides: its plan, how it starts as a whole and node by node."""

    name: str
    # The single broker whose class path (``brokers/maven/<base>``) and JDK choice the cluster uses.
    base: str

    def build_plan(
        self, work_dir: Path, java: str, classpath: str, instance: str, options: Mapping[str, Any]
    ) -> Plan: ...

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None: ...

    def start_node(self, plan: Plan, node: str, spawn: Spawner, timeout: float) -> None: ...

    def endpoint(self, plan: Plan) -> Any: ...


def node_ports(plan: Plan, node: str) -> list[int]:
    """The ports one node listens on (kept in the plan's settings by each cluster kind)."""
    return [int(p) for p in plan.settings.get("node_ports", {}).get(node, [])]


def _kinds() -> dict[str, ClusterKind]:
    return {
        "kafka-cluster": KafkaClusterKind(),
        "pulsar-cluster": PulsarClusterKind(),
        "tubemq-cluster": TubeMQClusterKind(),
    }


CLUSTER_NAMES = ("kafka-cluster", "pulsar-cluster", "tubemq-cluster")


@dataclass(frozen=True)
class ClusterStatus:
    """One cluster: its endpoint, a pid and an alive flag per node."""

    name: str
    endpoint: Any
    pids: dict[str, int]
    nodes: dict[str, bool]
    work_dir: str
    java: str = ""
    already_running: bool = False
    start_seconds: float | None = None

    @property
    def alive(self) -> bool:
        """Every node is up."""
        return bool(self.nodes) and all(self.nodes.values())

    @property
    def url(self) -> str:
        """The URL a client is given: every node that serves clients, comma-separated."""
        return str(self.endpoint.url)

    def to_json(self) -> dict[str, Any]:
        """The endpoint's fields with pids and node states, as ``start`` and ``status`` print them."""
        return {
            **dataclasses.asdict(self.endpoint),
            "pids": dict(self.pids),
            "nodes": dict(self.nodes),
            "alive": self.alive,
            "java": self.java,
            **({"start_seconds": self.start_seconds} if self.start_seconds is not None else {}),
            **({"already_running": True} if self.already_running else {}),
        }


def _check_name(name: str) -> ClusterKind:
    kinds = _kinds()
    if name not in kinds:
        raise BrokerError(f"unknown cluster {name!r}; choose from {', '.join(CLUSTER_NAMES)}")
    return kinds[name]


class ClusterLauncher:
    """Clusters of one state folder (the same folder and JSON records as the single brokers').

    ``owned=True`` ties every JVM to this interpreter (tests); otherwise they outlive it (the command line).
    ``options`` go to a fresh cluster's plan (e.g. ``{"mem_store": False}`` for TubeMQ).
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        work_root: Path | None = None,
        owned: bool = False,
        timeout: float | None = None,
    ) -> None:
        self.state = StateDir(state_dir or default_state_dir())
        self.work_root = work_root
        self.owned = owned
        self.timeout = timeout or start_timeout()
        self._save_lock = threading.Lock()

    # ------------------------------------------------------------------------------------ status
    def _status(
        self, name: str, record: Record, already_running: bool = False, start_seconds: float | None = None
    ) -> ClusterStatus:
        kind = _check_name(name)
        nodes = {spec.role: procs.alive(record.pids.get(spec.role, -1), spec.marker) for spec in record.plan.procs}
        return ClusterStatus(
            name,
            kind.endpoint(record.plan),
            dict(record.pids),
            nodes,
            record.plan.work_dir,
            f"{record.java.get('executable', '')} (JDK {record.java.get('major', '?')})",
            already_running,
            start_seconds,
        )

    def status(self) -> list[ClusterStatus]:
        """Every cluster known in the state folder."""
        out = []
        for name in self.state.names():
            if name in CLUSTER_NAMES:
                record = self.state.load(name)
                if record is not None:
                    out.append(self._status(name, record))
        return out

    def get(self, name: str) -> ClusterStatus:
        """The status of a known cluster (raises ``BrokerError`` when it is not known)."""
        _check_name(name)
        record = self.state.load(name)
        if record is None:
            raise BrokerError(f"{name} is not running (no state in {self.state.root})")
        return self._status(name, record)

    # ------------------------------------------------------------------------- whole cluster
    def start(self, name: str, options: Mapping[str, Any] | None = None) -> ClusterStatus:
        """Start ``name``; a running cluster is left alone, a killed one comes back on its ports and data.
        Nodes that are down in a running cluster are started again."""
        kind = _check_name(name)
        with self.state.locked(name):
            record = self.state.load(name)
            if record is not None:
                status = self._status(name, record)
                if status.alive:
                    return self._status(name, record, already_running=True)
                if record.ready_once and Path(record.plan.work_dir).is_dir():
                    return self._relaunch(name, record)
                self._terminate(record, graceful=False)
                self.state.remove(name)
                if record.owns_work_dir:
                    shutil.rmtree(record.plan.work_dir, ignore_errors=True)
            return on_new_ports_when_one_is_lost(name, lambda: self._fresh(kind, name, options))

    def _fresh(self, kind: ClusterKind, name: str, options: Mapping[str, Any] | None) -> ClusterStatus:
        java = find_java(kind.base)
        cp = classpath.classpath(kind.base)
        if self.work_root is not None:
            self.work_root.mkdir(parents=True, exist_ok=True)
        work_dir = Path(tempfile.mkdtemp(prefix=f"mqwire-{name}-", dir=self.work_root))
        plan = kind.build_plan(work_dir, java.executable, cp, uuid.uuid4().hex[:12], dict(options or {}))
        record = Record(plan, java=java.to_json(), started_at=time.time())
        self.state.save(name, record)
        return self._run(name, record, fresh=True)

    def _relaunch(self, name: str, record: Record) -> ClusterStatus:
        for spec in record.plan.procs:
            if "-cp" in spec.argv:
                classpath.restore(_check_name(name).base, spec.argv[spec.argv.index("-cp") + 1])
        # Whatever is still up stays up; the nodes that are down come back.
        down = [s for s in record.plan.procs if not procs.alive(record.pids.get(s.role, -1), s.marker)]
        busy = wait_ports_free([p for s in down for p in node_ports(record.plan, s.role)])
        if busy:
            raise BrokerStartError(f"cannot restart {name}: ports {busy} are taken by another process")
        began = time.monotonic()
        kind = _check_name(name)
        self._start_nodes(kind, name, record, [s.role for s in down])
        return self._status(name, record, start_seconds=round(time.monotonic() - began, 1))

    def _spawner(self, name: str, record: Record) -> Spawner:
        def spawn(spec: ProcSpec) -> int:
            pid = procs.spawn(spec, owned=self.owned)
            # Nodes start from several threads at once; the record is saved whole each time.
            with self._save_lock:
                record.pids[spec.role] = pid
                self.state.save(name, record)
            return pid

        return spawn

    def _run(self, name: str, record: Record, fresh: bool) -> ClusterStatus:
        began = time.monotonic()
        try:
            _check_name(name).launch(record.plan, self._spawner(name, record), fresh, self.timeout)
        except BaseException as err:
            self._terminate(record, graceful=False)
            if fresh:
                self.state.remove(name)
            if isinstance(err, BrokerError | OSError | ValueError):
                raise start_failure(name, record.plan, fresh, err) from err
            raise
        record.ready_once = True
        self.state.save(name, record)
        return self._status(name, record, start_seconds=round(time.monotonic() - began, 1))

    def _terminate(self, record: Record, graceful: bool) -> None:
        # Every node at once: a cluster stopped node by node would move its leaders around first.
        def end(spec: ProcSpec) -> None:
            pid = record.pids.get(spec.role)
            if pid is None:
                return
            if graceful:
                procs.stop(pid, spec.marker, STOP_TIMEOUT)
            else:
                procs.kill(pid, spec.marker)

        each_in_parallel(end, reversed(record.plan.procs))

    def stop(self, name: str, keep_data: bool = False) -> bool:
        """Stop every node and forget the cluster; False when it was not known."""
        _check_name(name)
        return end(self.state, name, self._terminate, graceful=True, keep_data=keep_data)

    def kill(self, name: str) -> bool:
        """SIGKILL every node, keeping state and data for a later ``start``."""
        _check_name(name)
        return end(self.state, name, self._terminate, graceful=False)

    # ------------------------------------------------------------------------------ one node
    def _node(self, name: str, node: str) -> tuple[Record, ProcSpec]:
        record = self.state.load(name)
        if record is None:
            raise BrokerError(f"{name} is not running (no state in {self.state.root})")
        try:
            return record, record.plan.proc(node)
        except KeyError:
            nodes = ", ".join(s.role for s in record.plan.procs)
            raise BrokerError(f"{name} has no node {node!r}; its nodes: {nodes}") from None

    def kill_node(self, name: str, node: str) -> None:
        """SIGKILL one node, as a crash would."""
        _check_name(name)
        with self.state.locked(name):
            record, spec = self._node(name, node)
            procs.kill(record.pids.get(node, -1), spec.marker)

    def stop_node(self, name: str, node: str) -> None:
        """SIGTERM one node and wait until it is gone (its own clean shutdown)."""
        _check_name(name)
        with self.state.locked(name):
            record, spec = self._node(name, node)
            procs.stop(record.pids.get(node, -1), spec.marker, STOP_TIMEOUT * 3)

    def start_node(self, name: str, node: str) -> float:
        """Start one node that is down again and wait until it serves; returns the seconds it took."""
        kind = _check_name(name)
        with self.state.locked(name):
            record, spec = self._node(name, node)
            if procs.alive(record.pids.get(node, -1), spec.marker):
                return 0.0
            busy = wait_ports_free(node_ports(record.plan, node))
            if busy:
                raise BrokerStartError(f"cannot start {name} {node}: ports {busy} are taken by another process")
            began = time.monotonic()
            self._start_nodes(kind, name, record, [node])
            return round(time.monotonic() - began, 1)

    def restart_node(self, name: str, node: str) -> float:
        """Stop one node cleanly and start it again; returns the seconds the start took."""
        self.stop_node(name, node)
        return self.start_node(name, node)

    def _start_nodes(self, kind: ClusterKind, name: str, record: Record, nodes: list[str]) -> None:
        spawn = self._spawner(name, record)
        each_in_parallel(lambda node: kind.start_node(record.plan, node, spawn, self.timeout), nodes)
        self.state.save(name, record)


class RunningCluster:
    """A started cluster and the means to hurt it one node at a time (what the test fixtures hand out).

    The node operations block until done; from a coroutine call them through ``asyncio.to_thread``.
    """

    def __init__(self, launcher: ClusterLauncher, name: str) -> None:
        self.launcher = launcher
        self.name = name
        self.status = launcher.get(name)

    @property
    def endpoint(self) -> Any:
        """The cluster's endpoint record (``KafkaCluster``, ``TubeMQCluster``, ``PulsarCluster``)."""
        return self.status.endpoint

    @property
    def url(self) -> str:
        """The client URL naming every node that serves clients."""
        return self.status.url

    @property
    def nodes(self) -> list[str]:
        """The node names, in start order."""
        return list(self.status.nodes)

    def alive(self, node: str) -> bool:
        """Whether ``node`` runs right now."""
        return self.launcher.get(self.name).nodes[node]

    def kill(self, node: str) -> None:
        """SIGKILL ``node``."""
        self.launcher.kill_node(self.name, node)

    def stop(self, node: str) -> None:
        """Stop ``node`` cleanly (SIGTERM, waiting until it is gone)."""
        self.launcher.stop_node(self.name, node)

    def start(self, node: str) -> float:
        """Start ``node`` again and wait until it serves; the seconds it took."""
        return self.launcher.start_node(self.name, node)

    def restart(self, node: str) -> float:
        """Stop ``node`` cleanly and start it again; the seconds the start took."""
        return self.launcher.restart_node(self.name, node)

    def ensure_all_up(self) -> None:
        """Start every node that is down (a test that failed half-way leaves the next one a whole cluster)."""
        for node, up in self.launcher.get(self.name).nodes.items():
            if not up:
                self.start(node)

    def close(self) -> None:
        """Stop the whole cluster and delete its data."""
        self.launcher.stop(self.name)
