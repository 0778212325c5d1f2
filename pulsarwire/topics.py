"""Topic names: the short forms users write, and the complete names the broker expects."""

from __future__ import annotations

from mqwire.common.errors import ConfigurationError

DEFAULT_NAMESPACE = "public/default"
DOMAINS = ("persistent", "non-persistent")
PARTITION_SUFFIX = "-partition-"


def complete_name(topic: str) -> str:
    """``orders`` -> ``persistent://public/default/orders``; ``tenant/ns/orders`` gets the domain only."""
    if not isinstance(topic, str):
        raise TypeError(f"a topic name must be a str, not {type(topic).__name__}")
    name = topic.strip()
    domain = "persistent"
    if "://" in name:
        domain, name = name.split("://", 1)
        if domain not in DOMAINS:
            raise ConfigurationError(f"topic {topic!r}: domain must be one of {', '.join(DOMAINS)}")
    parts = name.split("/")
    if len(parts) == 1:
        parts = [*DEFAULT_NAMESPACE.split("/"), parts[0]]
    # Four parts are the legacy tenant/cluster/namespace/topic form, still accepted by brokers.
    if len(parts) not in (3, 4) or not all(parts):
        raise ConfigurationError(f"not a valid Pulsar topic name: {topic!r}")
    return f"{domain}://{'/'.join(parts)}"


def partition_name(topic: str, partition: int) -> str:
    """The complete name of one partition of ``topic`` (itself complete)."""
    return f"{topic}{PARTITION_SUFFIX}{partition}"


def partition_of(topic: str) -> int:
    """The partition index in a partition's name, or -1 when the name is not a partition's."""
    _, sep, tail = topic.rpartition(PARTITION_SUFFIX)
    if sep and tail.isdigit():
        return int(tail)
    return -1


def is_persistent(topic: str) -> bool:
    return topic.startswith("persistent://")
