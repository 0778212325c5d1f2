"""Apache InLong TubeMQ: one master (BDB metadata, no ZooKeeper) and one broker, two JVMs."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from mqwire.testing import tubemq_admin
from mqwire.testing.endpoints import Endpoint, TubeMQBroker
from mqwire.testing.kafka import KEYSTORE_PASSWORD, make_client_certificate, make_keystore
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.loopback import loopback_only, loopback_preload
from mqwire.testing.net import LOOPBACK, free_ports
from mqwire.testing.plan import Plan, Spawner, Wait, marker
from mqwire.testing.procs import ProcSpec, wait_until

MEMORY_CACHE_FLUSH_MS = 4000
MASTER_CLASS = "org.apache.inlong.tubemq.server.tools.MasterStartup"
BROKER_CLASS = "org.apache.inlong.tubemq.server.tools.BrokerStartup"
BROKER_ID = 1
COMMON_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
    # The server is built for Java 8 and reaches into sun.nio.ch for its direct buffers.
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
)
MASTER_FLAGS = ("-Xms64m", "-Xmx256m")
BROKER_FLAGS = ("-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m")

# The master's web API renders its JSON answers through these two one-line Velocity templates;
# the rest of the web console is not needed.
_TEMPLATES = {
    "templates/screen/webapi.vm": "$sb",
    "templates/layout/webapi.vm": "$screen_placeholder",
}


def _ini(sections: dict[str, dict[str, object]]) -> str:
    return "".join(
        f"[{name}]\n" + "".join(f"{k}={v}\n" for k, v in values.items()) for name, values in sections.items()
    )


def _publishable(admin_url: str, topic: str) -> Callable[[], bool]:
    return lambda: tubemq_admin.topic_publishable(admin_url, topic)


class TubeMQKind:
    name = "tubemq"

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan:
        (master_port, master_web, rep_port, master_prom, broker_port, broker_web, broker_prom) = free_ports(7)
        token = secrets.token_hex(8)
        conf = work_dir / "conf"
        logs = work_dir / "logs"
        web = work_dir / "master" / "web"
        meta = work_dir / "master" / "meta"
        store = work_dir / "broker" / "data"
        for folder in (conf, logs, web, meta, store):
            folder.mkdir(parents=True, exist_ok=True)
        for rel, text in _TEMPLATES.items():
            (web / rel).parent.mkdir(parents=True, exist_ok=True)
            (web / rel).write_text(text, encoding="utf-8")
        # Prometheus is switched on with a free port on purpose: when "off", both servers still try
        # to open the default port 9081 on all interfaces.
        master_ini = conf / "master.ini"
        master_ini.write_text(
            _ini(
                {
                    "master": {
                        "hostName": LOOPBACK,
                        "port": master_port,
                        "webPort": master_web,
                        "confModAuthToken": token,
                        "webResourcePath": web,
                        # Defaults are 60 s before the first rebalance and 30 s between them.
                        "firstBalanceDelayAfterStartMs": 2000,
                        "consumerBalancePeriodMs": 2000,
                    },
                    "meta_bdb": {
                        "repGroupName": "mqwire",
                        "repNodeName": "mqwire-master-1",
                        "repNodePort": rep_port,
                        "repHelperHost": f"{LOOPBACK}:{rep_port}",
                        "metaDataPath": meta,
                    },
                    "prometheus": {"promEnable": "true", "promHttpPort": master_prom},
                }
            ),
            encoding="utf-8",
        )
        broker_ini = conf / "broker.ini"
        broker_ini.write_text(
            _ini(
                {
                    "broker": {
                        "brokerId": BROKER_ID,
                        "hostName": LOOPBACK,
                        "port": broker_port,
                        "webPort": broker_web,
                        "masterAddressList": f"{LOOPBACK}:{master_port}",
                        "primaryPath": store,
                        "maxSegmentSize": 1073741824,
                        "maxIndexSegmentSize": 22020096,
                        "transferSize": 524288,
                        "loadMessageStoresInParallel": "true",
                        "consumerRegTimeoutMs": 35000,
                        # Default 8 s; each step of the master's broker state machine waits for one.
                        "heartbeatPeriodMs": 1000,
                    },
                    "audit": {"auditEnable": "false"},
                    "prometheus": {"promEnable": "true", "promHttpPort": broker_prom},
                }
            ),
            encoding="utf-8",
        )
        procs = []
        preload = loopback_preload()  # the servers bind the wildcard address: see mqwire.testing.loopback
        for role, main, flags, ini in (
            ("tubemq-master", MASTER_CLASS, MASTER_FLAGS, master_ini),
            ("tubemq-broker", BROKER_CLASS, BROKER_FLAGS, broker_ini),
        ):
            short = role.split("-")[1]
            log_file = logs / f"{short}.log"
            log_conf = write_log4j2(conf / f"log4j2-{short}.properties", log_file)
            mark = marker(self.name, role, instance)
            argv = (java, *flags, *COMMON_FLAGS, *log4j2_flags(log_conf), mark, "-cp", classpath, main, "-f", str(ini))
            argv = loopback_only(argv, preload)
            procs.append(ProcSpec(role, argv, str(work_dir), str(logs / f"{short}.stdout.log"), str(log_file), mark))
        ports = {
            "master": master_port,
            "master_web": master_web,
            "master_replication": rep_port,
            "master_prometheus": master_prom,
            "broker": broker_port,
            "broker_web": broker_web,
            "broker_prometheus": broker_prom,
        }
        return Plan(self.name, instance, str(work_dir), ports, procs, {"auth_token": token, "topics": {}})

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        admin = f"http://{LOOPBACK}:{plan.ports['master_web']}"
        token = str(plan.settings["auth_token"])

        def left() -> float:
            return max(deadline - time.monotonic(), 1.0)

        master = plan.proc("tubemq-master")
        master_pid = spawn(master)
        watched = [(master_pid, master)]
        wait_until(
            f"tubemq master web API on {admin}",
            lambda: True if tubemq_admin.master_ready(admin) else None,
            left(),
            watched,
        )
        topics: dict[str, int] = {str(k): int(v) for k, v in plan.settings.get("topics", {}).items()}
        if fresh:
            register_broker(admin, token, plan, topics)
        broker = plan.proc("tubemq-broker")
        watched.append((spawn(broker), broker))

        def wait(what: str, check: Callable[[], bool]) -> None:
            wait_until(what, lambda: True if check() else None, left(), watched)

        # After a restart every topic the master knows must accept producers again.
        wait_broker_live(admin, list(topics) if fresh else tubemq_admin.topic_names(admin), wait)

    def endpoint(self, plan: Plan) -> TubeMQBroker:
        tls_port = plan.ports.get("master_tls")
        ca_file = plan.settings.get("ca_file")
        return TubeMQBroker.at(
            plan.ports["master"],
            plan.ports["master_web"],
            plan.ports["broker"],
            plan.ports["broker_web"],
            broker_id=BROKER_ID,
            auth_token=str(plan.settings["auth_token"]),
            log_files=plan.log_files,
            data_dir=plan.work_dir,
            tls_url=f"tubemq+ssl://{LOOPBACK}:{tls_port}" if tls_port else None,
            ssl_cafile=str(ca_file) if ca_file else None,
            ssl_certfile=plan.settings.get("client_certfile"),
            ssl_keyfile=plan.settings.get("client_keyfile"),
        )

    def create_topic(self, endpoint: Endpoint, topic: str, partitions: int, timeout: float = 180.0) -> str:
        """Deploy ``topic`` on the broker and wait until the master routes producers to it."""
        if not isinstance(endpoint, TubeMQBroker):
            raise TypeError("a TubeMQBroker is needed")
        create_topics(endpoint, {topic: partitions}, timeout)
        return topic


def require_authentication(plan: Plan) -> None:
    """Make the planned master require signed consumer registrations, and the broker check the visit
    tokens the master hands out to producers and consumers.

    The master checks the user name, that a signature is there and that its timestamp is fresh; it has no
    password store. Produce authentication stays off: with it the broker demands an authorized token that
    this master never issues (it hands out a blank one), so no client of any kind could produce.
    """
    master_ini = Path(plan.work_dir) / "conf" / "master.ini"
    text = master_ini.read_text(encoding="utf-8")
    extra = "startConsumeAuthenticate=true\nstartVisitTokenCheck=true\n"
    master_ini.write_text(text.replace("[master]\n", "[master]\n" + extra, 1), encoding="utf-8")
    plan.settings["authentication"] = True


def enable_tls(plan: Plan, java: str) -> None:
    """Make the planned master and broker also listen with TLS, each on a port of its own next to the
    plain one: a self-signed server certificate for 127.0.0.1 and localhost (its PEM is what clients
    trust), and client certificates required. (One-way TLS cannot be had from this server: with
    ``tlsTwoWayAuthEnable=false`` it ignores the trust store setting and then fails every handshake
    opening a trust store at an empty path.)

    The servers bind these TLS ports, like the plain RPC ports, to the wildcard address: the RPC listener
    (``NettyRpcServer.start(int listenPort)`` in tubemq-core) binds ``new InetSocketAddress(listenPort)`` and
    takes no host, ``hostName`` in master.ini and broker.ini is only the address announced to clients and
    peers, and neither a ``[tlsSetting]`` key nor a JVM system property changes the bind. The launcher starts
    both servers with a shim preloaded that makes such binds loopback ones (:mod:`mqwire.testing.loopback`);
    without a C compiler to build it, the ports listen on every address."""
    conf = Path(plan.work_dir) / "conf"
    keystore, certificate = make_keystore(java, conf)
    client_cert, client_key, truststore = make_client_certificate(java, conf)
    master_tls, broker_tls = free_ports(2)
    for name, port in (("master.ini", master_tls), ("broker.ini", broker_tls)):
        settings = {
            "tlsEnable": "true",
            "tlsPort": port,
            "tlsKeyStorePath": keystore,
            "tlsKeyStorePassword": KEYSTORE_PASSWORD,
            "tlsTwoWayAuthEnable": "true",
            "tlsTrustStorePath": truststore,
            "tlsTrustStorePassword": KEYSTORE_PASSWORD,
        }
        ini = conf / name
        ini.write_text(ini.read_text(encoding="utf-8") + _ini({"tlsSetting": settings}), encoding="utf-8")
    plan.ports["master_tls"] = master_tls
    plan.ports["broker_tls"] = broker_tls
    plan.settings["ca_file"] = str(certificate)
    plan.settings["client_certfile"] = str(client_cert)
    plan.settings["client_keyfile"] = str(client_key)


def create_topics(endpoint: TubeMQBroker, topics: dict[str, int], timeout: float = 180.0) -> None:
    """Deploy several topics at once: they share one pass of the master's ~30 s publish delay."""
    for topic, partitions in topics.items():
        tubemq_admin.add_topic(endpoint.admin_url, endpoint.auth_token, endpoint.broker_id, topic, partitions)
    deadline = time.monotonic() + timeout
    for topic in topics:
        tubemq_admin.wait_topic_publishable(endpoint.admin_url, topic, max(deadline - time.monotonic(), 1.0))


def register_broker(admin: str, token: str, plan: Plan, topics: dict[str, int]) -> None:
    """Register the plan's broker and its topics with the master before the broker's first heartbeat: so the
    topics go live with its first configuration push instead of waiting out the state machine for each one."""
    tubemq_admin.add_broker(
        admin,
        token,
        BROKER_ID,
        LOOPBACK,
        plan.ports["broker"],
        plan.ports["broker_web"],
        plan.ports.get("broker_tls"),
        # A consumer that filters by message type reads from the broker's files, which its memory
        # cache reaches every 20 s by default: the server's minimum brings that down to 4 s.
        memory_cache_flush_ms=MEMORY_CACHE_FLUSH_MS,
    )
    tubemq_admin.online_broker(admin, token, BROKER_ID)
    for topic, partitions in topics.items():
        tubemq_admin.add_topic(admin, token, BROKER_ID, topic, partitions)


def wait_broker_live(admin: str, topics: Sequence[str], wait: Wait) -> None:
    """Wait until the broker is online at the master at ``admin``, each of ``topics`` takes producers, and the
    broker's configuration has settled."""
    wait(f"tubemq broker {BROKER_ID} online at the master", lambda: tubemq_admin.broker_online(admin, BROKER_ID))
    for topic in topics:
        wait(f"tubemq topic {topic} publishable", _publishable(admin, topic))
    wait(
        f"tubemq broker {BROKER_ID} configuration settled", lambda: tubemq_admin.broker_settled(admin, BROKER_ID)
    )
