"""Regex subscriptions: the topics of one namespace whose names match a pattern, asked of the broker,
and followed through the broker's topic-list watch where it has one."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqwire.common.errors import MqwireError
from pulsarwire.protocol import commands
from pulsarwire.protocol.pulsar_api_pb2 import CommandGetTopicsOfNamespace
from pulsarwire.topics import DEFAULT_NAMESPACE, PARTITION_SUFFIX

if TYPE_CHECKING:
    from pulsarwire.connection import PulsarConnection
    from pulsarwire.session import Session

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

    async def matching(self, session: Session) -> list[str]:
        """The complete names of the matching topics; partitions count as their partitioned topic."""
        names = await session.retrying(
            lambda: session.lookup.topics_of_namespace(self.namespace, self.mode), f"topics of {self.namespace}"
        )
        topics = dict.fromkeys(_base_name(name) for name in names)
        return sorted(topic for topic in topics if self.matches(topic))


class TopicWatch:
    """A topic-list watcher on the broker: the topics matching now, and a callback for each change.

    ``on_change(added, removed)`` gets complete names (partitions as their partitioned topic);
    ``on_lost()`` is called when the connection carrying the watch closes.
    """

    def __init__(self, connection: PulsarConnection, watcher_id: int, topics: list[str]) -> None:
        self.connection = connection
        self.watcher_id = watcher_id
        self.topics = topics

    @classmethod
    async def start(
        cls,
        session: Session,
        pattern: TopicPattern,
        on_change: Callable[[list[str], list[str]], None],
        on_lost: Callable[[], None],
    ) -> TopicWatch | None:
        """Start watching; None when the broker has no topic-list watchers."""
        connection = await session.service_connection()
        if not connection.supports_topic_watchers:
            return None
        watcher_id = session.next_consumer_id()

        def pushed(kind: int, body: Any, frame: Any) -> None:
            added = [t for t in dict.fromkeys(_base_name(n) for n in body.new_topics) if pattern.matches(t)]
            removed = [t for t in dict.fromkeys(_base_name(n) for n in body.deleted_topics) if pattern.matches(t)]
            on_change(added, removed)

        connection.register_watcher(watcher_id, pushed)
        connection.on_close(lambda error: on_lost())
        request_id = connection.next_request_id()
        try:
            frame = await connection.request(
                commands.watch_topic_list(request_id, watcher_id, pattern.namespace, pattern.regex.pattern),
                request_id,
                session.operation_timeout,
            )
        except BaseException:
            connection.unregister_watcher(watcher_id)
            raise
        names = frame.command.watchTopicListSuccess.topic
        topics = sorted(t for t in dict.fromkeys(_base_name(n) for n in names) if pattern.matches(t))
        return cls(connection, watcher_id, topics)

    async def close(self, timeout: float) -> None:
        connection = self.connection
        connection.unregister_watcher(self.watcher_id)
        if connection.closed:
            return
        request_id = connection.next_request_id()
        with contextlib.suppress(MqwireError):
            await connection.request(commands.watch_topic_list_close(request_id, self.watcher_id), request_id, timeout)


def _base_name(topic: str) -> str:
    base, sep, tail = topic.rpartition(PARTITION_SUFFIX)
    return base if sep and tail.isdigit() else topic
