"""What a test or a program needs to reach a running broker: frozen, JSON-friendly records."""

from __future__ import annotations

import dataclasses
import urllib.parse
from dataclasses import dataclass
from typing import Any

from mqwire.testing.net import LOOPBACK


@dataclass(frozen=True)
class KafkaBroker:
    host: str
    port: int
    url: str
    bootstrap_servers: str
    controller_port: int | None = None
    # A SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512, unsecured OAUTHBEARER) when the launcher made one.
    sasl_port: int | None = None
    # A TLS listener (on loopback) and the PEM certificate that signs it.
    ssl_port: int | None = None
    ssl_cafile: str | None = None
    # SASL (the same users and mechanisms) over TLS with the same certificate.
    sasl_ssl_port: int | None = None
    # A TLS listener that requires a client certificate: the PEM certificate and key it accepts.
    mtls_port: int | None = None
    ssl_client_certfile: str | None = None
    ssl_client_keyfile: str | None = None
    # A plaintext listener on ``proxied_port`` that advertises ``proxy_port``, where nothing listens until a
    # test puts a proxy there (forwarding to ``proxied_port``): the way to put faults between client and broker.
    proxied_port: int | None = None
    proxy_port: int | None = None
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    @classmethod
    def at(cls, port: int, host: str = LOOPBACK, **extra: Any) -> KafkaBroker:
        return cls(host, port, f"kafka://{host}:{port}", f"{host}:{port}", **extra)


@dataclass(frozen=True)
class PulsarBroker:
    host: str
    port: int
    web_port: int
    url: str
    admin_url: str
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    @classmethod
    def at(cls, port: int, web_port: int, host: str = LOOPBACK, **extra: Any) -> PulsarBroker:
        return cls(host, port, web_port, f"pulsar://{host}:{port}", f"http://{host}:{web_port}", **extra)


@dataclass(frozen=True)
class TubeMQBroker:
    """A TubeMQ master (``url``, ``admin_url``) and the one broker it manages (``broker_url``)."""

    host: str
    master_port: int
    master_web_port: int
    url: str
    admin_url: str
    broker_port: int | None = None
    broker_web_port: int | None = None
    broker_url: str | None = None
    broker_id: int = 1
    auth_token: str = ""
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None
    # Set when started with TLS: the master's TLS URL, the certificate clients should trust, and the
    # client certificate and key the servers require.
    tls_url: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    @classmethod
    def at(
        cls,
        master_port: int,
        master_web_port: int,
        broker_port: int | None = None,
        broker_web_port: int | None = None,
        host: str = LOOPBACK,
        **extra: Any,
    ) -> TubeMQBroker:
        broker_url = f"tubemq://{host}:{broker_port}" if broker_port else None
        return cls(
            host,
            master_port,
            master_web_port,
            f"tubemq://{host}:{master_port}",
            f"http://{host}:{master_web_port}",
            broker_port,
            broker_web_port,
            broker_url,
            **extra,
        )


@dataclass(frozen=True)
class SchemaRegistry:
    """A schema registry: ``url`` is the base of its registry REST API (``/subjects``, ``/schemas/ids/...``)."""

    host: str
    port: int
    url: str
    log_files: tuple[str, ...] = ()
    data_dir: str | None = None

    @classmethod
    def at(cls, port: int, host: str = LOOPBACK, path: str = "/apis/ccompat/v7", **extra: Any) -> SchemaRegistry:
        return cls(host, port, f"http://{host}:{port}{path}", **extra)


Endpoint = KafkaBroker | PulsarBroker | TubeMQBroker | SchemaRegistry

_KINDS: dict[str, type[KafkaBroker] | type[PulsarBroker] | type[TubeMQBroker] | type[SchemaRegistry]] = {
    "kafka": KafkaBroker,
    "pulsar": PulsarBroker,
    "tubemq": TubeMQBroker,
    "kafka3": KafkaBroker,
    "registry": SchemaRegistry,
}


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int


def split_url(url: str, default_port: int | None = None) -> HostPort:
    """``scheme://host:port[/...]`` (or bare ``host:port``) into host and port."""
    parsed = urllib.parse.urlsplit(url if "://" in url else f"x://{url}")
    port = parsed.port or default_port
    if not parsed.hostname or port is None:
        raise ValueError(f"no host and port in {url!r}")
    return HostPort(parsed.hostname, port)


def to_json(endpoint: Endpoint) -> dict[str, Any]:
    data = dataclasses.asdict(endpoint)
    data["log_files"] = list(endpoint.log_files)
    return data


def from_json(name: str, data: dict[str, Any]) -> Endpoint:
    kind = _KINDS[name]
    names = {f.name for f in dataclasses.fields(kind)}
    values = {k: v for k, v in data.items() if k in names}
    values["log_files"] = tuple(values.get("log_files", ()))
    return kind(**values)


def summary(endpoints: dict[str, Endpoint]) -> dict[str, Any]:
    """The flat URL map printed by the command line (``kafka``, ``pulsar_admin``, ...)."""
    out: dict[str, Any] = {}
    for name, ep in endpoints.items():
        out[name] = ep.url
        if isinstance(ep, PulsarBroker):
            out["pulsar_admin"] = ep.admin_url
        elif isinstance(ep, TubeMQBroker):
            out["tubemq_admin"] = ep.admin_url
            if ep.broker_url:
                out["tubemq_broker"] = ep.broker_url
    return out


__all__ = [
    "Endpoint",
    "HostPort",
    "KafkaBroker",
    "PulsarBroker",
    "SchemaRegistry",
    "TubeMQBroker",
    "from_json",
    "split_url",
    "summary",
    "to_json",
]
