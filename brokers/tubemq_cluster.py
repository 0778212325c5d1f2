"""A TubeMQ cluster: three masters in one BDB replication group (one active, two standbys) and two brokers.

Three masters, not two: the replication group elects a new active master only with a majority of its
nodes, so with two masters the survivor of a crash stays in state UNKNOWN until the other one is back.

The brokers' memory store (``enableMemStore``, on by default in the server and here) is a launcher option:
with it on, an acknowledged message can sit in the broker's memory for a while before it reaches the file,
and a crash of the broker process loses it; with it off, it is in the file (the operating system's page cache)
when acknowledged.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqwire.testing import tubemq_admin
from mqwire.testing.errors import BrokerStartError
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.loopback import loopback_only, loopback_preload
from mqwire.testing.net import LOOPBACK, free_ports
from mqwire.testing.parallel import each_in_parallel
from mqwire.testing.plan import Plan, Spawner, marker
from mqwire.testing.procs import ProcSpec, wait_until
from mqwire.testing.tubemq import _TEMPLATES, BROKER_CLASS, COMMON_FLAGS, MASTER_CLASS, MASTER_FLAGS, _ini

MASTERS = 3
BROKERS = 2
BROKER_FLAGS = ("-Xms128m", "-Xmx384m", "-XX:MaxDirectMemorySize=384m")
GROUP = "mqwire-cluster"


@dataclass(frozen=True)
class TubeMQCluster:
    """How to reach the cluster: ``url`` names every master; the web API of each master and each broker's id."""

    url: str
    admin_urls: dict[str, str] = field(default_factory=dict)
    broker_ids: dict[str, int] = field(default_factory=dict)
    broker_urls: dict[str, str] = field(default_factory=dict)
    auth_token: str = ""
    mem_store: bool = True
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    def active_master(self) -> str | None:
        """The master whose metadata store is writable right now (None while there is none)."""
        for node, admin in self.admin_urls.items():
            if tubemq_admin.master_ready(admin):
                return node
        return None

    def wait_active_master(self, timeout: float = 60.0) -> str:
        """The active master, waiting up to ``timeout`` seconds for an election to finish."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.active_master()
            if node is not None:
                return node
            if time.monotonic() >= deadline:
                raise BrokerStartError(f"no active tubemq master after {timeout:.0f}s")
            time.sleep(0.5)


def _broker_host(ident: int) -> str:
    # The master keeps one broker per address: each broker gets a loopback address of its own.
    return f"127.0.0.{ident}"


def _rep_name(node: str) -> str:
    return f"mqwire-{node}"


def _joined(endpoint: TubeMQCluster, node: str) -> bool:
    """``node`` is the active master, or the active master lists it as a replica (a standby answers its web
    API only with a redirect to the active one)."""
    active = endpoint.active_master()
    if active is None:
        return False
    if active == node:
        return True
    try:
        answer = tubemq_admin.webapi(endpoint.admin_urls[active], "admin_query_master_group_info", timeout=3.0)
    except (OSError, ValueError, tubemq_admin.TubeMQAdminError):
        return False
    return any(
        item.get("name") == _rep_name(node) and (item.get("statusInfo") or {}).get("nodeStatus") == "REPLICA"
        for item in answer.get("data") or []
    )


class TubeMQClusterKind:
    """``tubemq-cluster``: nodes ``master-1``..``master-3`` and ``broker-1``, ``broker-2`` (broker ids 1, 2).

    Options: ``mem_store`` (bool, default True: the brokers' ``enableMemStore``), ``topics`` (name ->
    partitions per broker, deployed on both brokers while they start).
    """

    name = "tubemq-cluster"
    base = "tubemq"

    def build_plan(
        self, work_dir: Path, java: str, classpath: str, instance: str, options: Mapping[str, Any]
    ) -> Plan:
        mem_store = bool(options.get("mem_store", True))
        topics = {str(k): int(v) for k, v in dict(options.get("topics") or {}).items()}
        token = secrets.token_hex(8)
        ports = free_ports(4 * MASTERS + 3 * BROKERS)
        masters = [ports[4 * i : 4 * i + 4] for i in range(MASTERS)]
        brokers = [ports[4 * MASTERS + 3 * i : 4 * MASTERS + 3 * i + 3] for i in range(BROKERS)]
        master_list = ",".join(f"{LOOPBACK}:{m[0]}" for m in masters)
        specs: list[ProcSpec] = []
        plan_ports: dict[str, int] = {}
        node_ports: dict[str, list[int]] = {}
        preload = loopback_preload()  # the servers bind the wildcard address: see mqwire.testing.loopback

        def spec(node: str, main: str, flags: tuple[str, ...], sections: dict[str, dict[str, object]]) -> None:
            conf, logs = work_dir / node / "conf", work_dir / node / "logs"
            for folder in (conf, logs):
                folder.mkdir(parents=True, exist_ok=True)
            ini = conf / f"{node}.ini"
            ini.write_text(_ini(sections), encoding="utf-8")
            log_file = logs / f"{node}.log"
            log_conf = write_log4j2(conf / "log4j2.properties", log_file)
            mark = marker(self.name, node, instance)
            argv = (java, *flags, *COMMON_FLAGS, *log4j2_flags(log_conf), mark, "-cp", classpath, main, "-f", str(ini))
            # Each broker has an address of its own (TubeMQ tells brokers apart by address): its wildcard
            # binds go there.
            host = str(next(iter(sections.values())).get("hostName", LOOPBACK))
            argv = loopback_only(argv, preload, host)
            specs.append(ProcSpec(node, argv, str(work_dir), str(logs / "stdout.log"), str(log_file), mark))

        for i, (port, web_port, rep_port, prom_port) in enumerate(masters):
            node = f"master-{i + 1}"
            web = work_dir / node / "web"
            for rel, text in _TEMPLATES.items():
                (web / rel).parent.mkdir(parents=True, exist_ok=True)
                (web / rel).write_text(text, encoding="utf-8")
            # The first master founds the replication group; the others join it through the first one.
            helper = f"{LOOPBACK}:{masters[0][2]}"
            spec(
                node,
                MASTER_CLASS,
                MASTER_FLAGS,
                {
                    "master": {
                        "hostName": LOOPBACK,
                        "port": port,
                        "webPort": web_port,
                        "confModAuthToken": token,
                        "webResourcePath": web,
                        "firstBalanceDelayAfterStartMs": 2000,
                        "consumerBalancePeriodMs": 2000,
                    },
                    "meta_bdb": {
                        "repGroupName": GROUP,
                        "repNodeName": _rep_name(node),
                        "repNodePort": rep_port,
                        "repHelperHost": helper,
                        "metaDataPath": work_dir / node / "meta",
                    },
                    "prometheus": {"promEnable": "true", "promHttpPort": prom_port},
                },
            )
            plan_ports[node] = port
            plan_ports[f"{node}-web"] = web_port
            node_ports[node] = [port, web_port, rep_port, prom_port]
        for i, (port, web_port, prom_port) in enumerate(brokers):
            node = f"broker-{i + 1}"
            host = _broker_host(i + 1)
            spec(
                node,
                BROKER_CLASS,
                BROKER_FLAGS,
                {
                    "broker": {
                        "brokerId": i + 1,
                        "hostName": host,
                        "port": port,
                        "webPort": web_port,
                        "masterAddressList": master_list,
                        "primaryPath": work_dir / node / "data",
                        "maxSegmentSize": 1073741824,
                        "maxIndexSegmentSize": 22020096,
                        "transferSize": 524288,
                        "loadMessageStoresInParallel": "true",
                        "consumerRegTimeoutMs": 35000,
                        "heartbeatPeriodMs": 1000,
                        "enableMemStore": "true" if mem_store else "false",
                    },
                    "audit": {"auditEnable": "false"},
                    "prometheus": {"promEnable": "true", "promHttpPort": prom_port},
                },
            )
            plan_ports[node] = port
            plan_ports[f"{node}-web"] = web_port
            node_ports[node] = [port, web_port, prom_port]
        return Plan(
            self.name,
            instance,
            str(work_dir),
            plan_ports,
            specs,
            {
                "auth_token": token,
                "mem_store": mem_store,
                "topics": topics,
                "master_list": master_list,
                "node_ports": node_ports,
            },
        )

    def _masters(self, plan: Plan) -> list[str]:
        return [s.role for s in plan.procs if s.role.startswith("master-")]

    def _brokers(self, plan: Plan) -> list[str]:
        return [s.role for s in plan.procs if s.role.startswith("broker-")]

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        masters = self._masters(plan)
        if fresh:
            # The founder first: the others need it to join the replication group.
            self.start_node(plan, masters[0], spawn, timeout)
            each_in_parallel(
                lambda node: self.start_node(plan, node, spawn, max(deadline - time.monotonic(), 1.0)), masters[1:]
            )
            endpoint = self.endpoint(plan)
            admin = endpoint.admin_urls[endpoint.wait_active_master(max(deadline - time.monotonic(), 1.0))]
            token = str(plan.settings["auth_token"])
            # Registered before the brokers' first heartbeats, the topics go live with their first
            # configuration push instead of waiting out the master's state machine for each one.
            for node in self._brokers(plan):
                ident = int(node.rsplit("-", 1)[1])
                host = _broker_host(ident)
                tubemq_admin.add_broker(admin, token, ident, host, plan.ports[node], plan.ports[f"{node}-web"])
                tubemq_admin.online_broker(admin, token, ident)
                for topic, partitions in plan.settings.get("topics", {}).items():
                    tubemq_admin.add_topic(admin, token, ident, topic, int(partitions))
        else:
            each_in_parallel(
                lambda node: self.start_node(plan, node, spawn, max(deadline - time.monotonic(), 1.0)), masters
            )
        each_in_parallel(
            lambda node: self.start_node(plan, node, spawn, max(deadline - time.monotonic(), 1.0)),
            self._brokers(plan),
        )

    def start_node(self, plan: Plan, node: str, spawn: Spawner, timeout: float) -> None:
        deadline = time.monotonic() + timeout

        def left() -> float:
            return max(deadline - time.monotonic(), 1.0)

        spec = plan.proc(node)
        pid = spawn(spec)
        watched = [(pid, spec)]
        endpoint = self.endpoint(plan)
        if node.startswith("master-"):
            joined = f"tubemq {node} in the replication group"
            wait_until(joined, lambda: True if _joined(endpoint, node) else None, left(), watched)
            return
        ident = int(node.rsplit("-", 1)[1])

        def online() -> bool | None:
            active = endpoint.active_master()
            return True if active and tubemq_admin.broker_online(endpoint.admin_urls[active], ident) else None

        wait_until(f"tubemq {node} online at the active master", online, left(), watched)

        def publishable() -> bool | None:
            active = endpoint.active_master()
            if active is None:
                return None
            admin = endpoint.admin_urls[active]
            ready = all(tubemq_admin.topic_publishable(admin, t) for t in tubemq_admin.topic_names(admin))
            return True if ready and tubemq_admin.broker_settled(admin, ident) else None

        wait_until(f"tubemq {node} topics publishable", publishable, left(), watched)

    def endpoint(self, plan: Plan) -> TubeMQCluster:
        masters, brokers = self._masters(plan), self._brokers(plan)
        return TubeMQCluster(
            f"tubemq://{plan.settings['master_list']}",
            {m: f"http://{LOOPBACK}:{plan.ports[f'{m}-web']}" for m in masters},
            {b: int(b.rsplit("-", 1)[1]) for b in brokers},
            {b: f"{_broker_host(int(b.rsplit('-', 1)[1]))}:{plan.ports[b]}" for b in brokers},
            str(plan.settings["auth_token"]),
            bool(plan.settings.get("mem_store", True)),
            plan.log_files,
            plan.work_dir,
        )
