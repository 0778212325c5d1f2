"""Regex subscriptions: the topics of one namespace whose names match a pattern, asked of the broker."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pulsarwire.protocol.pulsar_api_pb2 import CommandGetTopicsOfNamespace
from pulsarwire.topics import DEFAULT_NAMESPACE, PARTITION_SUFFIX

if TYPE_CHECKING:
    from pulsarwire.client import Client

_MODES = {
    "persistent": CommandGetTopicsOfNamespace.PERSISTENT,
    "non-persistent": CommandGetTopicsOfNamespace.NON_PERSISTENT,
}


class TopicPattern:
    """A pattern over complete topic names, such as ``persistent://public/default/orders-.*``.

    A pattern without a domain is taken as persistent, and one without a namespace as in public/default,
    as the reference clients do. The namespace part must be literal: topics are listed per namespace.
    """

    def __init__(self, pattern: re.Pattern[str]) -> None:
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            raise TypeError("a topic pattern must be a compiled str regular expression")
        text = pattern.pattern
        domain = "persistent"
        if "://" in text:
            domain, text = text.split("://", 1)
        if domain not in _MODES:
            raise ValueError(f"topic pattern {pattern.pattern!r}: domain must be persistent or non-persistent")
        parts = text.split("/", 2)
        if len(parts) < 3:
            parts = [*DEFAULT_NAMESPACE.split("/"), text]
        tenant, namespace, _ = parts
        if not tenant or not namespace or re.escape(tenant) != tenant or re.escape(namespace) != namespace:
            raise ValueError(f"topic pattern {pattern.pattern!r}: tenant and namespace must be literal names")
        self.namespace = f"{tenant}/{namespace}"
        self.mode = _MODES[domain]
        self.regex = re.compile(f"{domain}://{tenant}/{namespace}/{parts[2]}", pattern.flags)
        self.text = pattern.pattern

    def matches(self, topic: str) -> bool:
        return self.regex.fullmatch(topic) is not None

    async def matching(self, client: Client) -> list[str]:
        """The complete names of the matching topics; partitions count as their partitioned topic."""
        names = await client.retrying(
            lambda: client.lookup.topics_of_namespace(self.namespace, self.mode), f"topics of {self.namespace}"
        )
        topics = dict.fromkeys(_base_name(name) for name in names)
        return sorted(topic for topic in topics if self.matches(topic))


def _base_name(topic: str) -> str:
    base, sep, tail = topic.rpartition(PARTITION_SUFFIX)
    return base if sep and tail.isdigit() else topic
