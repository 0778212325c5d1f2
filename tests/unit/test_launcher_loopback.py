"""The local brokers' TLS listeners bind loopback only: read from the generated configs.

(TubeMQ 1.13's RPC server binds its plain and TLS ports on every address whatever its configuration says.)"""

from __future__ import annotations

from pathlib import Path

from mqwire.testing.kafka import Listeners, _server_properties
from mqwire.testing.net import LOOPBACK
from mqwire.testing.pulsar import PulsarKind, Security


def properties(text: str) -> dict[str, str]:
    pairs = (line.partition("=") for line in text.splitlines() if line and not line.startswith(("#", "[")))
    return {key.strip(): value.strip() for key, _, value in pairs}


def test_the_tls_listeners_of_kafka_and_pulsar_bind_loopback(tmp_path: Path) -> None:
    ports = Listeners(*range(9001, 9009))
    props = properties(_server_properties(ports, tmp_path / "k.p12", tmp_path / "t.p12", tmp_path, True))
    bound = dict(entry.split("://", 1) for entry in props["listeners"].split(","))
    assert {"SSL", "SASL_SSL", "MTLS"} <= set(bound), bound
    hosts = {name: address.rsplit(":", 1)[0] for name, address in bound.items()}
    assert hosts == dict.fromkeys(bound, LOOPBACK), hosts

    security = Security(b"k" * 32, "admin", "tok", str(tmp_path / "c.pem"), str(tmp_path / "k.pem"), "ca.pem")
    plan = PulsarKind().plan_with(tmp_path / "pulsar", "java", "cp", "t", security)
    conf = properties((tmp_path / "pulsar" / "conf" / "standalone.conf").read_text(encoding="utf-8"))
    assert conf["brokerServicePortTls"] == str(plan.ports["broker_tls"])
    # bindAddress is where every broker port listens, TLS included; no other address is added.
    assert conf["bindAddress"] == LOOPBACK
    assert "bindAddresses" not in conf and "webServicePortTls" not in conf
