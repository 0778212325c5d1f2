"""The options of ``connect`` and of the client's factories: each declared once, as a public ``TypedDict``
(what the type checker sees), and checked into a frozen config (ranges, units, defaults) that the client,
producers and consumers read.

Times are in milliseconds, as the ``_ms`` suffixes say; the configs hold them in seconds.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from mqwire.common.contract import Deserializer, Serializer, Start
from mqwire.common.errors import ConfigurationError, OptionTypeError
from mqwire.common.options import (
    Check,
    callable_or_none,
    check_bool,
    check_non_negative,
    check_positive,
    check_str,
    check_type,
    instance_of,
    int_range,
    one_of,
    option,
    options_of,
    or_none,
)
from tubemqwire.names import check_group
from tubemqwire.protocol.constants import HEARTBEAT_INTERVAL_MS
from tubemqwire.protocol.metadata import parse_partition_key

__all__ = ["ClientBalanceConsumerOptions", "ClientOptions", "ConsumerOptions", "MsgTypes", "ProducerOptions"]

MsgTypes = str | Iterable[str] | Mapping[str, Iterable[str]] | None
"""Message types to consume: for every topic, or a mapping of topic to types."""

# The master drops a consumer after 30 s without a heartbeat; a slower period would churn the group.
MAX_HEARTBEAT_INTERVAL_MS = 25_000
START_POSITIONS = ("earliest", "latest")


class ClientOptions(TypedDict, total=False):
    """The options of ``tubemqwire.connect`` and :class:`tubemqwire.Client`, all optional.

    - ``request_timeout_ms`` — how long each request to a master or broker may take, in ms; also sent
      with the request, so the server drops one that waited longer; default 10000. Java client:
      ``rpcTimeoutMs``.
    - ``connect_timeout_ms`` — how long opening a connection to a master or broker may take, in ms;
      default 10000.
    - ``heartbeat_interval_ms`` — period of the heartbeats every producer and consumer sends to the
      master and the brokers, in ms; at most 25000 (the master drops a client after 30 s of silence);
      default 13000. Java client: ``heartbeatPeriodMs``.
    - ``username`` — user name, when the cluster authenticates clients; default None: no
      authentication. Java client: ``usrName`` of ``setAuthenticInfo``.
    - ``password`` — the user's password (needs ``username``); default None. Java client:
      ``usrPassWord`` of ``setAuthenticInfo``.
    - ``ssl_context`` — the ``ssl.SSLContext`` of the connections to masters and brokers (when given,
      they use TLS whatever the scheme); default None: plain TCP, or for ``tubemq+ssl://`` a default
      context (``ssl.create_default_context()``).
    """

    request_timeout_ms: int
    connect_timeout_ms: int
    heartbeat_interval_ms: int
    username: str | None
    password: str | None
    ssl_context: _ssl.SSLContext | None


class ProducerOptions(TypedDict, total=False):
    """The options of ``client.producer``, all optional.

    - ``key_serializer`` — callable turning a key into bytes (a None key is not passed to it: no key);
      default None: keys must be bytes.
    - ``value_serializer`` — callable turning a value into bytes; default None: values must be bytes.
    - ``max_in_flight`` — sends outstanding (not yet acknowledged or failed) before ``enqueue`` waits
      for one to finish; 1 to 1000000, default 1000.
    - ``retries`` — further tries of a send that failed in a way a retry can fix (including finding
      no partition), each on another partition while one remains (a keyed message keeps its key's
      partition); 0 to 1000, default 3.
    - ``retry_backoff_ms`` — pause before a retry, in ms, times the retry's number (100, 200, ...);
      default 100.
    - ``metadata_timeout_ms`` — how long opening the producer waits for the master to place every
      topic's partitions on brokers, in ms, before ``TopicNoPartitionError``; default 30000.
    - ``checksum`` — compute each message's CRC-32 here so the broker verifies it; default False (the
      broker computes it, as it does for the Java producer).
    """

    key_serializer: Serializer | None
    value_serializer: Serializer | None
    max_in_flight: int
    retries: int
    retry_backoff_ms: int
    metadata_timeout_ms: int
    checksum: bool


class ConsumerOptions(TypedDict, total=False):
    """The options of ``client.consumer``, all optional.

    - ``group`` — the consumer group; default None: a group of its own (``mqwire_`` and 16 random hex
      digits), so the consumer reads alone and its position is not reused.
    - ``start`` — where a partition begins when the group has no stored position in it: ``"latest"``
      (only messages written from now on, the default) or ``"earliest"`` (the first message kept).
      Java client: ``consumePosition``.
    - ``key_deserializer`` — callable applied to each key (bytes) as messages are delivered; default
      None: keys stay bytes.
    - ``value_deserializer`` — callable applied to each value (bytes) as messages are delivered;
      default None: values stay bytes.
    - ``msg_types`` — consume only messages of these types (filtered by the broker): a str, an
      iterable of str, or a mapping of topic to types (topics left out are not filtered); default
      None: every message.
    - ``confirm_timeout_ms`` — how long a delivered batch may stay not wholly acknowledged, in ms,
      before it is given back and served again; default 60000. Java client:
      ``pullProtectConfirmTimeoutMs``.
    - ``msg_not_found_wait_ms`` — pause before fetching again from a partition that had no new
      message, in ms; default 400. Java client: ``msgNotFoundWaitPeriodMs``.
    - ``rebalance_confirm_wait_ms`` — how long a partition given up (taken away by the master, or by
      ``disconnect_partition`` without ``confirm_wait``) waits for its delivered batch to be acknowledged
      before it is released, in ms; default 3000. Java client: ``pullRebConfirmWaitPeriodMs``.
    """

    group: str | None
    start: Start
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    msg_types: MsgTypes
    confirm_timeout_ms: int
    msg_not_found_wait_ms: int
    rebalance_confirm_wait_ms: int


class ClientBalanceConsumerOptions(ConsumerOptions, total=False):
    """The options of ``client.client_balance_consumer``, all optional: the three below, then those of
    :class:`ConsumerOptions` (a group may not mix master-balanced and client-balanced members; ``start``
    applies to a partition claimed without an offset).

    - ``partitions`` — partitions to claim on start: keys (``brokerId:topic:partitionId``), or a
      mapping of key to the index offset to start from (None: the group's stored position); default
      None: none.
    - ``source_count`` — how many members the group has, reported to the master; default -1: not
      used. Java client: ``sourceCount`` of ``start``.
    - ``node_id`` — which member this is, 0 to ``source_count`` - 1, reported to the master; ignored
      (-1) unless ``source_count`` is positive; default -1. Java client: ``nodeId`` of ``start``.
    """

    partitions: Iterable[str] | Mapping[str, int | None] | None
    source_count: int
    node_id: int


# The consumer's options, described once in ConsumerOptions, are listed in help() of this one too.
ClientBalanceConsumerOptions.__doc__ = (
    f"{ClientBalanceConsumerOptions.__doc__}\n    Those of ConsumerOptions:\n\n"
    + (ConsumerOptions.__doc__ or "").split("\n\n", 1)[1]
)


def _heartbeat_interval(name: str, value: object) -> float:
    interval = check_positive(name, value)
    if interval > MAX_HEARTBEAT_INTERVAL_MS:
        raise ConfigurationError(f"option {name} must be at most {MAX_HEARTBEAT_INTERVAL_MS}, got {value}")
    return interval


def _username(name: str, value: object) -> str:
    text = check_str(name, value)
    if not text.strip():
        raise ConfigurationError(f"option {name} must not be blank")
    return text


def check_partitions(name: str, partitions: object) -> dict[str, int | None]:
    """``partitions``: keys (``brokerId:topic:partitionId``), or a mapping of key to start offset or None."""
    if partitions is None:
        return {}
    if isinstance(partitions, str):
        partitions = [partitions]
    items = partitions.items() if isinstance(partitions, Mapping) else ((key, None) for key in partitions)  # type: ignore[attr-defined]
    checked: dict[str, int | None] = {}
    for key, offset in items:
        if not isinstance(key, str):
            raise OptionTypeError(f"option {name}: a partition key is a str, not {type(key).__name__}")
        try:
            parse_partition_key(key)
        except Exception as exc:
            raise ConfigurationError(f"option {name}: {exc}") from None
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise ConfigurationError(f"option {name}: the offset of {key} must be an int >= 0 or None, not {offset!r}")
        checked[key] = offset
    return checked


def _int(name: str, value: object) -> int:
    return check_type(name, value, int)


_group: Check = or_none(lambda name, value: check_group(value))


@options_of(ClientOptions)
@dataclass(frozen=True)
class ClientConfig:
    """The checked options of a client (times in seconds)."""

    request_timeout: float = option(10_000, check_positive, name="request_timeout_ms", unit="ms")
    connect_timeout: float = option(10_000, check_positive, name="connect_timeout_ms", unit="ms")
    heartbeat_interval: float = option(
        HEARTBEAT_INTERVAL_MS, _heartbeat_interval, name="heartbeat_interval_ms", unit="ms"
    )
    username: str | None = option(None, or_none(_username))
    password: str | None = option(None, or_none(check_str))
    ssl_context: _ssl.SSLContext | None = option(None, or_none(instance_of(_ssl.SSLContext, "an ssl.SSLContext")))

    def __post_init__(self) -> None:
        if self.password is not None and self.username is None:
            raise ConfigurationError("option password needs option username")


@options_of(ProducerOptions)
@dataclass(frozen=True)
class ProducerConfig:
    """The checked options of a producer (times in seconds)."""

    key_serializer: Serializer | None = option(None, callable_or_none)
    value_serializer: Serializer | None = option(None, callable_or_none)
    max_in_flight: int = option(1000, int_range(1, 1_000_000))
    retries: int = option(3, int_range(0, 1000))
    retry_backoff: float = option(100, check_non_negative, name="retry_backoff_ms", unit="ms")
    metadata_timeout: float = option(30_000, check_positive, name="metadata_timeout_ms", unit="ms")
    checksum: bool = option(False, check_bool)


@options_of(ConsumerOptions)
@dataclass(frozen=True)
class ConsumerConfig:
    """The checked options of a master-balanced consumer (times in seconds). ``msg_types`` is checked
    against the consumed topics by the consumer."""

    group: str | None = option(None, _group)
    start: Start = option("latest", one_of(*START_POSITIONS))
    key_deserializer: Deserializer | None = option(None, callable_or_none)
    value_deserializer: Deserializer | None = option(None, callable_or_none)
    msg_types: MsgTypes = option(None)
    confirm_timeout: float = option(60_000, check_positive, name="confirm_timeout_ms", unit="ms")
    msg_not_found_wait: float = option(400, check_positive, name="msg_not_found_wait_ms", unit="ms")
    rebalance_confirm_wait: float = option(3_000, check_positive, name="rebalance_confirm_wait_ms", unit="ms")


@options_of(ClientBalanceConsumerOptions)
@dataclass(frozen=True)
class ClientBalanceConsumerConfig(ConsumerConfig):
    """The checked options of a client-balanced consumer. ``partitions`` is checked against the consumed
    topics by the consumer."""

    partitions: Mapping[str, int | None] = option(None, check_partitions)
    source_count: int = option(-1, _int)
    node_id: int = option(-1, _int)

    def __post_init__(self) -> None:
        if self.source_count > 0 and not 0 <= self.node_id < self.source_count:
            raise ConfigurationError("option node_id must be in 0..source_count-1 when source_count is set")
