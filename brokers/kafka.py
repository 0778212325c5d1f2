"""Apache Kafka in KRaft combined mode (one node is both broker and controller).

Two releases run side by side: ``kafka`` (4.x) and ``kafka3`` (3.9.x), so clients can be checked
against both ends of the version negotiation. Both format storage as a single-node dynamic quorum
(``--standalone``, KIP-853, which 3.9 was the first to ship).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import os
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mqwire.testing import kafka_wire
from mqwire.testing.endpoints import Endpoint, KafkaBroker
from mqwire.testing.errors import BrokerError, BrokerStartError
from mqwire.testing.logconf import log4j2_flags, write_log4j2
from mqwire.testing.net import LOOPBACK, free_ports
from mqwire.testing.plan import Plan, Spawner, marker
from mqwire.testing.procs import ProcSpec, tail, wait_until

MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
# Kafka's documented region size (16 MB). With the default one (1 MB at these heaps) every request of 512 KB or
# more, such as a librdkafka batch of 1 MB, is a humongous object: the broker then runs young and concurrent
# collections for it and spends up to 2x its CPU per record, a cost a production broker does not charge.
G1_REGION_FLAG = "-XX:G1HeapRegionSize=16M"
JVM_FLAGS = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    G1_REGION_FLAG,
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)


def _cluster_id() -> str:
    # KRaft expects a base64url-encoded 16-byte UUID without padding.
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


# The user of the SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512), for tests and demos
# on loopback only. OAUTHBEARER there takes the broker's unsecured JWTs (any "sub", no signature).
SASL_USER = "mqwire"
SASL_PASSWORD = "mqwire-secret"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


KEYSTORE_PASSWORD = "mqwire-keystore"
# The subject of the client certificate that the MTLS listener requires.
CLIENT_CERT_NAME = "mqwire-client"


def make_keystore(java: str, conf: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (PKCS12 for the broker, PEM for clients).

    Made with the JDK's keytool, which every machine running the brokers has; the PEM is the trust
    anchor a client passes as ``ssl_cafile``.
    """
    keytool = str(Path(java).with_name("keytool"))
    keystore, certificate = conf / "broker.p12", conf / "broker-ca.pem"
    common = ["-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", KEYSTORE_PASSWORD, "-alias", "broker"]
    subprocess.run(
        [
            keytool,
            "-genkeypair",
            *common,
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            "30",
            "-dname",
            "CN=localhost",
            "-ext",
            "SAN=dns:localhost,ip:127.0.0.1",
            "-ext",
            "bc:c",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    subprocess.run(
        [keytool, "-exportcert", "-rfc", *common, "-file", str(certificate)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return keystore, certificate


def make_client_certificate(java: str, conf: Path) -> tuple[Path, Path, Path]:
    """A client certificate and key (PEM, for ``ssl_certfile``/``ssl_keyfile``) and a broker truststore
    (PKCS12) that trusts exactly that certificate, for the listener that requires client certificates.

    The key is written in Python (keytool cannot export a private key as PEM); keytool builds the store.
    """
    # Imported here: only the launcher needs it, and only to make this one certificate.
    try:
        import cryptography  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the local Kafka broker needs the 'testing' extra (cryptography is not installed):"
            " pip install 'mqwire[testing]'",
            name="cryptography",
        ) from None
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CLIENT_CERT_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file, truststore = conf / "client-cert.pem", conf / "client-key.pem", conf / "client-trust.p12"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_file.chmod(0o600)
    subprocess.run(
        [
            str(Path(java).with_name("keytool")),
            "-importcert",
            "-noprompt",
            "-alias",
            "client",
            "-file",
            str(cert_file),
            "-keystore",
            str(truststore),
            "-storetype",
            "PKCS12",
            "-storepass",
            KEYSTORE_PASSWORD,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert_file, key_file, truststore


def _jaas(listener: str) -> dict[str, str]:
    """The SASL logins of one listener: PLAIN with the test user, SCRAM from the cluster metadata."""
    prefix = f"listener.name.{listener}"
    return {
        f"{prefix}.plain.sasl.jaas.config": (
            f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{SASL_USER}="{SASL_PASSWORD}";'
        ),
        f"{prefix}.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{prefix}.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{prefix}.oauthbearer.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }


def _keystore(listener: str, keystore: Path) -> dict[str, str]:
    prefix = f"listener.name.{listener}.ssl"
    return {
        f"{prefix}.keystore.location": str(keystore),
        f"{prefix}.keystore.type": "PKCS12",
        f"{prefix}.keystore.password": KEYSTORE_PASSWORD,
        f"{prefix}.key.password": KEYSTORE_PASSWORD,
    }


@dataclass(frozen=True)
class Listeners:
    """The ports of one Kafka node; the TLS listeners share the broker's self-signed certificate."""

    port: int
    controller: int
    sasl: int
    ssl: int
    sasl_ssl: int
    mtls: int
    # PROXIED binds ``proxied`` but advertises ``proxy``: a test puts a fault proxy on ``proxy`` and every
    # connection the client makes after the metadata goes through it.
    proxied: int
    proxy: int


def _server_properties(
    ports: Listeners, keystore: Path, client_truststore: Path, log_dir: Path, share_groups: bool
) -> str:
    here = LOOPBACK
    # Every listener, TLS ones included, binds loopback only: the test user, the keystore and the client
    # certificate are for this machine's tests, never for the network.
    bound = (
        f"PLAINTEXT://{here}:{ports.port},CONTROLLER://{here}:{ports.controller},"
        f"SASL_PLAINTEXT://{here}:{ports.sasl},SSL://{here}:{ports.ssl},"
        f"SASL_SSL://{here}:{ports.sasl_ssl},MTLS://{here}:{ports.mtls},PROXIED://{here}:{ports.proxied}"
    )
    advertised = (
        f"PLAINTEXT://{here}:{ports.port},SASL_PLAINTEXT://{here}:{ports.sasl},SSL://{here}:{ports.ssl},"
        f"SASL_SSL://{here}:{ports.sasl_ssl},MTLS://{here}:{ports.mtls},PROXIED://{here}:{ports.proxy}"
    )
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"{here}:{ports.controller}",
        "listeners": bound,
        "advertised.listeners": advertised,
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
            "SASL_SSL:SASL_SSL,MTLS:SSL,PROXIED:PLAINTEXT"
        ),
        **_keystore("ssl", keystore),
        **_keystore("sasl_ssl", keystore),
        **_keystore("mtls", keystore),
        # MTLS: a TLS listener that admits only the client certificate the launcher made.
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.location": str(client_truststore),
        "listener.name.mtls.ssl.truststore.type": "PKCS12",
        "listener.name.mtls.ssl.truststore.password": KEYSTORE_PASSWORD,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        **_jaas("sasl_plaintext"),
        **_jaas("sasl_ssl"),
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "delete.topic.enable": "true",
        # One node: every internal topic must live with a single replica.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        # Tests join groups constantly; the default 3 s delay would slow every one of them.
        "group.initial.rebalance.delay.ms": "0",
    }
    if share_groups:
        # Share groups (KIP-932) exist from 4.0; 3.9 would log these keys as unknown.
        props["share.coordinator.state.topic.replication.factor"] = "1"
        props["share.coordinator.state.topic.min.isr"] = "1"
    return "".join(f"{k}={v}\n" for k, v in props.items())


def add_broker_config(
    plan: Plan, properties: Mapping[str, str], classpath: Sequence[str] = (), jvm_flags: Sequence[str] = ()
) -> None:
    """Set ``properties`` in the planned broker's server.properties (replacing keys it has), put
    ``classpath`` entries first on its class path (plugins such as a metric reporter compiled by a test)
    and ``jvm_flags`` among its JVM's (system properties such as Kerberos's ``java.security.krb5.conf``)."""
    server_props = Path(plan.work_dir) / "conf" / "server.properties"
    kept = [
        line
        for line in server_props.read_text(encoding="utf-8").splitlines()
        if line.split("=", 1)[0] not in properties
    ]
    kept.extend(f"{key}={value}" for key, value in properties.items())
    server_props.write_text("\n".join(kept) + "\n", encoding="utf-8")
    if not classpath and not jvm_flags:
        return

    def extended(argv: Sequence[str]) -> list[str]:
        out = [argv[0], *jvm_flags, *argv[1:]]
        if classpath:
            at = out.index("-cp") + 1
            out[at] = os.pathsep.join([*classpath, out[at]])
        return out

    plan.procs = [dataclasses.replace(spec, argv=tuple(extended(spec.argv))) for spec in plan.procs]
    plan.settings["format_argv"] = extended(plan.settings["format_argv"])


class KafkaKind:
    """One Kafka release; ``name`` is also its pom folder (``brokers/maven/<name>``)."""

    def __init__(self, name: str = "kafka", share_groups: bool = True) -> None:
        self.name = name
        self.share_groups = share_groups

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan:
        ports = Listeners(*free_ports(8))
        conf = work_dir / "conf"
        logs = work_dir / "logs"
        data = work_dir / "data"
        for folder in (conf, logs, data):
            folder.mkdir(parents=True, exist_ok=True)
        server_props = conf / "server.properties"
        keystore, certificate = make_keystore(java, conf)
        client_cert, client_key, client_trust = make_client_certificate(java, conf)
        server_props.write_text(
            _server_properties(ports, keystore, client_trust, data, self.share_groups), encoding="utf-8"
        )
        log_file = logs / "kafka.log"
        log_conf = write_log4j2(conf / "log4j2.properties", log_file, quiet=("org.apache.kafka.raft",))
        mark = marker(self.name, "kafka", instance)
        base = [java, *JVM_FLAGS, *log4j2_flags(log_conf), mark, "-cp", classpath]
        spec = ProcSpec(
            "kafka",
            (*base, MAIN_CLASS, str(server_props)),
            str(work_dir),
            str(logs / "kafka.stdout.log"),
            str(log_file),
            mark,
        )
        # ``--cluster-id=...`` in one word: a base64url id may begin with "-" and be taken for an option.
        format_argv = [
            *base,
            STORAGE_TOOL,
            "format",
            f"--cluster-id={_cluster_id()}",
            "-c",
            str(server_props),
            "--standalone",
            # SCRAM credentials live in the cluster metadata: written with the first record.
            *(
                arg
                for m in SCRAM_MECHANISMS
                for arg in ("--add-scram", f"{m}=[name={SASL_USER},password={SASL_PASSWORD}]")
            ),
        ]
        return Plan(
            self.name,
            instance,
            str(work_dir),
            {
                "broker": ports.port,
                "controller": ports.controller,
                "sasl": ports.sasl,
                "ssl": ports.ssl,
                "sasl_ssl": ports.sasl_ssl,
                "mtls": ports.mtls,
                "proxied": ports.proxied,
                "proxy": ports.proxy,
            },
            [spec],
            {
                "format_argv": format_argv,
                "format_log": str(logs / "kafka-format.log"),
                "ca_file": str(certificate),
                "client_certfile": str(client_cert),
                "client_keyfile": str(client_key),
            },
        )

    def _format(self, plan: Plan) -> None:
        log = Path(plan.settings["format_log"])
        with open(log, "wb") as out:
            proc = subprocess.run(
                plan.settings["format_argv"],
                cwd=plan.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=120,
                check=False,
            )
        if proc.returncode != 0:
            raise BrokerStartError(f"{self.name} storage format failed (exit {proc.returncode})\n{tail(log)}")

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if fresh:
            self._format(plan)
        spec = plan.proc("kafka")
        pid = spawn(spec)
        port = plan.ports["broker"]
        wait_until(
            f"{self.name} ApiVersions on {LOOPBACK}:{port}",
            lambda: True if kafka_wire.is_ready(port) else None,
            max(deadline - time.monotonic(), 1.0),
            [(pid, spec)],
        )

    def endpoint(self, plan: Plan) -> KafkaBroker:
        return KafkaBroker.at(
            plan.ports["broker"],
            controller_port=plan.ports["controller"],
            sasl_port=plan.ports.get("sasl"),
            ssl_port=plan.ports.get("ssl"),
            ssl_cafile=plan.settings.get("ca_file"),
            sasl_ssl_port=plan.ports.get("sasl_ssl"),
            mtls_port=plan.ports.get("mtls"),
            proxied_port=plan.ports.get("proxied"),
            proxy_port=plan.ports.get("proxy"),
            ssl_client_certfile=plan.settings.get("client_certfile"),
            ssl_client_keyfile=plan.settings.get("client_keyfile"),
            log_files=plan.log_files,
            data_dir=plan.work_dir,
        )

    def create_topic(self, endpoint: Endpoint, topic: str, partitions: int, timeout: float = 30.0) -> str:
        """Create ``topic`` (an existing one is fine) and wait until every partition has a leader."""
        if not isinstance(endpoint, KafkaBroker):
            raise TypeError("a KafkaBroker is needed")
        host, port = endpoint.host, endpoint.port
        (result,) = kafka_wire.create_topics(port, {topic: partitions}, host=host, timeout=timeout)
        if result.error_code not in (kafka_wire.ERROR_NONE, kafka_wire.ERROR_TOPIC_ALREADY_EXISTS):
            raise BrokerError(
                f"kafka refused topic {topic!r}: error {result.error_code} {result.error_message or ''}".strip()
            )
        deadline = time.monotonic() + timeout
        while True:
            leaders = kafka_wire.partition_leaders(port, topic, host=host)
            if leaders and all(leader >= 0 for leader in leaders.values()):
                return topic
            if time.monotonic() >= deadline:
                raise BrokerError(f"kafka topic {topic!r} has no leader for every partition: {leaders}")
            time.sleep(0.2)
