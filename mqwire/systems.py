"""The three clients behind one small interface: connect by URL, produce, receive with a timeout.

Only public client APIs are used here; what differs between the systems (how a consumer is named, how
it waits for a message, what a message's position is called) is settled in this one place.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import kafkawire
import pulsarwire
import tubemqwire

SCHEMES = {
    "kafka": "kafka",
    "kafka+ssl": "kafka",
    "pulsar": "pulsar",
    "pulsar+ssl": "pulsar",
    "tubemq": "tubemq",
}


class UsageError(ValueError):
    """A command line that cannot work (exit code 2)."""


class UnsupportedError(Exception):
    """Something this system cannot do (exit code 3)."""


def system_of(url: str) -> str:
    scheme = url.split("://", 1)[0] if "://" in url else ""
    try:
        return SCHEMES[scheme]
    except KeyError:
        raise UsageError(
            f"unknown URL scheme in {url!r}: use kafka://, kafka+ssl://, pulsar://, pulsar+ssl://, tubemq://"
        ) from None


def connect(url: str) -> Any:
    """The client for ``url`` (an async context manager)."""
    system = system_of(url)
    if system == "kafka":
        return kafkawire.connect(url)
    if system == "pulsar":
        return pulsarwire.connect(url)
    return tubemqwire.connect(url)


@dataclass(frozen=True)
class Row:
    """A consumed message as the output templates see it."""

    topic: str
    partition: int
    offset: str
    key: bytes | None
    value: bytes | None
    headers: Mapping[str, bytes]
    timestamp: int


class Receiver(Protocol):
    async def next(self, timeout: float) -> Row | None: ...

    async def ack(self) -> None: ...


def consumer_options(system: str, group: str | None, start: str) -> dict[str, Any]:
    """Keyword options of ``client.consumer`` for a CLI consumer of ``system``."""
    if system == "kafka":
        return {"group": group, "start": start}
    # Pulsar subscriptions and TubeMQ groups are mandatory: a throwaway one reads without disturbing others.
    name = group or f"mqwire-cli-{secrets.token_hex(4)}"
    if system == "pulsar":
        return {"subscription": name, "start": start}
    return {"group": name, "start": start}


def to_row(system: str, message: Any) -> Row:
    if system == "kafka":
        return Row(
            message.topic,
            message.partition,
            str(message.offset),
            message.key,
            message.value,
            message.headers,
            message.timestamp,
        )
    if system == "pulsar":
        key = message.partition_key.encode() if message.partition_key is not None else None
        return Row(
            message.topic,
            message.partition,
            str(message.message_id),
            key,
            message.value,
            message.headers,
            message.timestamp,
        )
    return Row(
        message.topic,
        message.partition,
        str(message.message_id),
        message.key,
        message.value,
        message.headers,
        message.timestamp,
    )


class ConsumerReceiver:
    """One message at a time from any of the three consumers, with a timeout; acks the last one."""

    def __init__(self, system: str, consumer: Any) -> None:
        self.system = system
        self.consumer = consumer
        self._buffered: list[Any] = []
        self._last: Any = None

    async def next(self, timeout: float) -> Row | None:
        message = await self._receive(timeout)
        self._last = message
        return None if message is None else to_row(self.system, message)

    async def ack(self) -> None:
        if self._last is not None:
            await self.consumer.ack(self._last)

    async def _receive(self, timeout: float) -> Any:
        if self.system == "kafka":
            if not self._buffered:
                self._buffered = list(reversed(await self.consumer.getmany(timeout_ms=timeout * 1000)))
            return self._buffered.pop() if self._buffered else None
        try:
            if self.system == "pulsar":
                return await self.consumer.receive(timeout=timeout)
            return await self.consumer.getone(timeout=timeout)
        except TimeoutError:
            return None
