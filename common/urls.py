"""Service URLs of the form ``scheme://host:port[,host:port...][/path][?k=v]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from mqwire.common.errors import ConfigurationError


@dataclass(frozen=True)
class ServiceUrl:
    scheme: str
    addresses: tuple[tuple[str, int], ...]
    path: str = ""
    params: dict[str, str] = field(default_factory=dict)

    @property
    def tls(self) -> bool:
        """Whether the scheme asks for TLS (``+ssl``)."""
        return self.scheme.endswith("+ssl")


def parse_service_url(url: str, *, schemes: dict[str, int]) -> ServiceUrl:
    """Parse ``url``; ``schemes`` maps each accepted scheme to its default port."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in schemes:
        raise ConfigurationError(f"url {url!r} must start with one of {', '.join(s + '://' for s in schemes)}")
    rest, _, query = rest.partition("?")
    hosts, slash, path = rest.partition("/")
    addresses = []
    for item in hosts.split(","):
        item = item.strip()
        if not item:
            continue
        addresses.append(_parse_host_port(item, schemes[scheme], url))
    if not addresses:
        raise ConfigurationError(f"url {url!r} names no host")
    return ServiceUrl(scheme, tuple(addresses), slash + path, dict(parse_qsl(query)))


def _parse_host_port(item: str, default_port: int, url: str) -> tuple[str, int]:
    if item.startswith("["):  # [IPv6]:port
        host, _, tail = item[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port_text = item.rpartition(":") if ":" in item else (item, "", "")
    if not host:
        raise ConfigurationError(f"url {url!r} has an empty host")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigurationError(f"url {url!r} has an invalid port {port_text!r}")
    return host, int(port_text)
