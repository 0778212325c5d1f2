"""The three clients as the commands see them: the shared contract (``mqwire.common.contract``) by URL.

Producing and consuming go through the contract only. What really differs between the systems is settled
here: the name of a message's stored position (a Kafka offset, a Pulsar or TubeMQ message id) and whether a
consumer may go without a group (Kafka reads without committing; Pulsar and TubeMQ need a subscription or
group, so the command makes a throwaway one).
"""

from __future__ import annotations

import os
import secrets
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.contract import Client, Consumer, Message, Start
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.connect_options import ConnectOptions, client_options, kafka_url

PACKAGES: dict[str, ModuleType] = {"kafka": kafkawire, "pulsar": pulsarwire, "tubemq": tubemqwire}
SCHEMES = {
    "kafka": "kafka",
    "kafka+ssl": "kafka",
    "pulsar": "pulsar",
    "pulsar+ssl": "pulsar",
    "tubemq": "tubemq",
    "tubemq+ssl": "tubemq",
}


class UsageError(ValueError):
    """A command line that cannot work (exit code 2)."""


class UnsupportedError(Exception):
    """Something this system cannot do (exit code 3)."""


def system_of(url: str) -> str:
    """``kafka``, ``pulsar`` or ``tubemq``, from the URL's scheme."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    try:
        return SCHEMES[scheme]
    except KeyError:
        raise UsageError(
            f"unknown URL scheme in {url!r}: use kafka://, kafka+ssl://, pulsar://, pulsar+ssl://, tubemq://,"
            " tubemq+ssl://"
        ) from None


# Client options of the command line (-X name=value, -F file): names as the reference clients spell them.
_client_options: dict[str, str] = {}


def configure(options: Mapping[str, str]) -> None:
    """Use ``options`` (``security.protocol``, ``sasl.username``, ``authParams``...) for every client made
    from now on; a wrong name or value fails when a client is made, naming the option but not its value."""
    _client_options.clear()
    _client_options.update(options)


# Secrets read from the environment as well, so that they need not be on the command line, where ``ps``
# shows them to every user of the machine: variable -> (system, option). -F and -X win over them.
SECRET_VARIABLES = {
    "MQWIRE_SASL_USERNAME": ("kafka", "sasl.username"),
    "MQWIRE_SASL_PASSWORD": ("kafka", "sasl.password"),
    "MQWIRE_SASL_JAAS_CONFIG": ("kafka", "sasl.jaas.config"),
    "MQWIRE_PULSAR_TOKEN": ("pulsar", "auth.token"),
    "MQWIRE_TUBEMQ_USERNAME": ("tubemq", "username"),
    "MQWIRE_TUBEMQ_PASSWORD": ("tubemq", "password"),
}


def environment_options(system: str) -> dict[str, str]:
    """The options of ``system`` set by ``MQWIRE_*`` variables (``SECRET_VARIABLES``)."""
    return {
        option: os.environ[variable]
        for variable, (owner, option) in SECRET_VARIABLES.items()
        if owner == system and variable in os.environ
    }


def _options(system: str) -> dict[str, str]:
    return {**environment_options(system), **_client_options}


def options_for(system: str) -> ConnectOptions:
    """The connect() keywords of ``system`` from the ``MQWIRE_*`` variables, then the configured options."""
    return client_options(system, _options(system), "-X ")


def url_for(url: str) -> str:
    """``url`` as the configured options ask: a Kafka URL gets TLS with ``security.protocol`` SSL or SASL_SSL
    (and contradicting it is an error naming both)."""
    return kafka_url(url, _options("kafka"), "-X ") if system_of(url) == "kafka" else url


def connect(url: str) -> Client[Any]:
    """The client for ``url`` (an async context manager), with the configured options."""
    system = system_of(url)
    client: Client[Any] = PACKAGES[system].connect(url_for(url), **options_for(system))
    return client


def consumer_group(system: str, group: str | None) -> str | None:
    """The group a command's consumer joins: the one given, else none (Kafka) or a throwaway one."""
    if group is not None or system == "kafka":
        return group
    return f"mqwire-cli-{secrets.token_hex(4)}"


def open_consumer(client: Client[Any], system: str, topic: str, group: str | None, start: str) -> Consumer[Any]:
    """A consumer of ``topic`` for a command (raw bytes: no deserializer)."""
    if start not in ("latest", "earliest"):
        raise UsageError(f"--from must be latest or earliest, not {start!r}")
    begin: Start = "earliest" if start == "earliest" else "latest"
    return client.consumer(topic, group=consumer_group(system, group), start=begin)


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


def position_of(message: Message) -> str:
    """Where the message is stored: the Kafka offset, or the Pulsar / TubeMQ message id."""
    offset = getattr(message, "offset", None)
    return str(offset) if isinstance(offset, int) else str(getattr(message, "message_id", ""))


def to_row(message: Message) -> Row:
    """The template fields of a consumed message."""
    return Row(
        message.topic,
        message.partition,
        position_of(message),
        message.key,
        message.value,
        message.headers,
        message.timestamp or 0,
    )


class ConsumerReceiver:
    """One message at a time from any consumer of the contract, fetched in batches; acks the last one."""

    def __init__(self, consumer: Consumer[Any]) -> None:
        self.consumer = consumer
        self._buffered: deque[Any] = deque()
        self._last: Any = None

    async def next(self, timeout: float, wanted: int | None = None) -> Row | None:
        """The next message as a row, or None when nothing came within ``timeout`` seconds.

        ``wanted`` is how many more the command will take: no more than that is taken from the consumer, since a
        Kafka consumer commits what it delivered.
        """
        if not self._buffered:
            try:
                self._buffered.append(await self.consumer.receive(timeout=timeout))
            except ReceiveTimeoutError:
                return None
            more = 499 if wanted is None else min(499, wanted - 1)
            if more > 0:
                self._buffered.extend(await self.consumer.getmany(timeout=0, max_records=more))
        self._last = self._buffered.popleft()
        return to_row(self._last)

    async def ack(self) -> None:
        """Acknowledge the message last returned by ``next``."""
        if self._last is not None:
            await self.consumer.ack(self._last)
