"""Producer and consumer options, checked when the object is built so a wrong one names itself."""

from __future__ import annotations

import difflib
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from mqwire.common.contract import Deserializer, Serializer
from mqwire.common.options import (
    check_bool,
    check_choice,
    check_int_range,
    check_non_negative,
    check_positive,
    check_str,
)
from pulsarwire.message import MessageId
from pulsarwire.protocol.batch import COMPRESSION_TYPES
from pulsarwire.protocol.pulsar_api_pb2 import CommandSubscribe, KeySharedMode, ProducerAccessMode
from pulsarwire.routing import HASHING_SCHEMES, ROUTING_MODES, MessageRouter

_INT32_MAX = 2**31 - 1
# Shorter ack timeouts would redeliver messages the application is still working on.
_MIN_ACK_TIMEOUT = 0.1

ACCESS_MODES = {
    "Shared": ProducerAccessMode.Shared,
    "Exclusive": ProducerAccessMode.Exclusive,
    "ExclusiveWithFencing": ProducerAccessMode.ExclusiveWithFencing,
}
SUBSCRIPTION_TYPES = {
    "Exclusive": CommandSubscribe.Exclusive,
    "Shared": CommandSubscribe.Shared,
    "Failover": CommandSubscribe.Failover,
    "Key_Shared": CommandSubscribe.Key_Shared,
}
BATCHER_BUILDERS = ("default", "key_based")
# The reference clients' names of the retry and dead-letter topics' suffixes and message properties.
RETRY_SUFFIX = "-RETRY"
DLQ_SUFFIX = "-DLQ"
KEY_SHARED_MODES = {"auto_split": KeySharedMode.AUTO_SPLIT, "sticky": KeySharedMode.STICKY}
INITIAL_POSITIONS = {"latest": CommandSubscribe.Latest, "earliest": CommandSubscribe.Earliest}


def _choice_ignoring_case(name: str, value: object, choices: Mapping[str, int]) -> tuple[str, int]:
    text = check_str(name, value)
    for choice, number in choices.items():
        if choice.lower() == text.lower():
            return choice, number
    raise ValueError(f"option {name} must be one of {', '.join(choices)}, got {value!r}")


def _string_map(name: str, value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError(f"option {name} must be a mapping of str to str")
    return dict(value)


def _partition_updates(take: Any) -> dict[str, Any]:
    return {
        "auto_update_partitions": check_bool("auto_update_partitions", take("auto_update_partitions", True)),
        "auto_update_partitions_interval": check_positive(
            "auto_update_partitions_interval_ms", take("auto_update_partitions_interval_ms", 60_000)
        )
        / 1000,
    }


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Where messages go after ``max_redeliver_count`` redeliveries (and retries).

    ``dead_letter_topic`` defaults to ``<topic>-<subscription>-DLQ`` and ``retry_letter_topic`` to
    ``<topic>-<subscription>-RETRY``; ``initial_subscription_name`` is created on the dead-letter topic
    with its first message, so that nothing sent there is lost before someone subscribes.
    """

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    retry_letter_topic: str | None = None
    initial_subscription_name: str | None = None

    def __post_init__(self) -> None:
        check_int_range("dead_letter_policy.max_redeliver_count", self.max_redeliver_count, 1, _INT32_MAX)
        for name in ("dead_letter_topic", "retry_letter_topic", "initial_subscription_name"):
            value = getattr(self, name)
            if value is not None and not check_str(f"dead_letter_policy.{name}", value).strip():
                raise ValueError(f"option dead_letter_policy.{name} must not be blank")

    @classmethod
    def of(cls, value: object) -> DeadLetterPolicy | None:
        if value is None or isinstance(value, DeadLetterPolicy):
            return value
        if isinstance(value, Mapping):
            try:
                return cls(**value)
            except TypeError as exc:
                raise TypeError(f"option dead_letter_policy: {exc}") from None
        kind = type(value).__name__
        raise TypeError(f"option dead_letter_policy must be a DeadLetterPolicy or a mapping, not {kind}")


class ClientConfig(TypedDict, total=False):
    """The options of ``pulsarwire.connect`` (see :class:`pulsarwire.Client`)."""

    operation_timeout: float
    connect_timeout: float
    keepalive_interval: float
    max_lookup_redirects: int
    initial_backoff_interval: float
    max_backoff_interval: float
    listener_name: str | None
    auth_token: str | Callable[[], Awaitable[str]] | None
    tls_ca_file: str | None
    tls_cert_file: str | None
    tls_key_file: str | None
    tls_validate_hostname: bool
    tls_allow_insecure_connection: bool
    ssl_context: ssl.SSLContext | None
    client_version: str
    admin_url: str | None
    admin_timeout: float


class ProducerConfig(TypedDict, total=False):
    """The options of ``client.producer`` (see :class:`pulsarwire.Producer`)."""

    key_serializer: Serializer | None
    value_serializer: Serializer | None
    producer_name: str | None
    initial_sequence_id: int | None
    send_timeout_ms: float
    compression: str | None
    compression_type: str | None
    max_pending_messages: int
    block_if_queue_full: bool
    batching_enabled: bool
    batching_max_messages: int
    batching_max_allowed_size_in_bytes: int
    batching_max_publish_delay_ms: float
    chunking_enabled: bool
    chunk_max_message_size: int | None
    hashing_scheme: Literal["java_string_hash", "murmur3_32"]
    message_routing_mode: Literal["round_robin", "single_partition"]
    message_router: MessageRouter | None
    access_mode: str
    properties: Mapping[str, str] | None
    batcher_builder: Literal["default", "key_based"]
    initial_subscription_name: str | None
    auto_update_partitions: bool
    auto_update_partitions_interval_ms: float


class ConsumerConfig(TypedDict, total=False):
    """The options of ``client.consumer`` (see :class:`pulsarwire.Consumer`)."""

    group: str | None
    subscription: str | None
    start: Literal["latest", "earliest"]
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    subscription_type: str
    receiver_queue_size: int
    max_total_receiver_queue_size_across_partitions: int
    consumer_name: str | None
    ack_group_time_ms: float
    ack_group_max_size: int
    negative_ack_redelivery_delay_ms: float
    read_compacted: bool
    properties: Mapping[str, str] | None
    subscription_properties: Mapping[str, str] | None
    priority_level: int | None
    key_shared_mode: Literal["auto_split", "sticky"]
    replicate_subscription_state: bool
    ack_timeout_ms: float
    batch_index_ack_enabled: bool
    dead_letter_policy: DeadLetterPolicy | Mapping[str, Any] | None
    retry_enable: bool
    pattern_auto_discovery_period_ms: float
    auto_update_partitions: bool
    auto_update_partitions_interval_ms: float


class ReaderConfig(TypedDict, total=False):
    """The options of ``client.reader`` (see :class:`pulsarwire.Reader`)."""

    start: Literal["latest", "earliest"] | MessageId
    start_inclusive: bool
    receiver_queue_size: int
    reader_name: str | None
    subscription_role_prefix: str
    read_compacted: bool
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None


def check_names(kind: str, options: Mapping[str, object], declared: type[Any]) -> None:
    """Raise a TypeError naming every option of ``options`` that ``declared`` (a TypedDict) does not list."""
    known = declared.__annotations__
    unknown = sorted(name for name in options if name not in known)
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    raise TypeError(f"unknown {kind} option(s): {', '.join(hints)}")


def _unexpected(kind: str, options: Mapping[str, Any]) -> None:
    if options:
        raise TypeError(f"unknown {kind} option(s): {', '.join(sorted(options))}")


@dataclass(frozen=True)
class ProducerOptions:
    producer_name: str | None = None
    initial_sequence_id: int | None = None
    send_timeout: float = 30.0
    compression: int = 0
    compression_type: str = "NONE"
    max_pending_messages: int = 1000
    block_if_queue_full: bool = True
    batching_enabled: bool = True
    batching_max_messages: int = 1000
    batching_max_allowed_size_in_bytes: int = 128 * 1024
    batching_max_publish_delay: float = 0.01
    chunking_enabled: bool = False
    chunk_max_message_size: int | None = None
    hashing_scheme: str = "java_string_hash"
    message_routing_mode: str = "round_robin"
    message_router: MessageRouter | None = None
    access_mode: int = ProducerAccessMode.Shared
    properties: Mapping[str, str] | None = None
    key_based_batching: bool = False
    initial_subscription_name: str | None = None
    auto_update_partitions: bool = True
    auto_update_partitions_interval: float = 60.0

    @classmethod
    def build(cls, options: dict[str, Any]) -> ProducerOptions:
        """Check ``options`` (keyword arguments of ``client.producer``); unknown names are a TypeError."""
        check_names("producer", options, ProducerConfig)
        options.pop("key_serializer", None)
        options.pop("value_serializer", None)
        take = options.pop
        name = take("producer_name", None)
        initial = take("initial_sequence_id", None)
        # ``compression`` is the name the other two packages use; ``compression_type`` the Pulsar clients' one.
        alias = take("compression", None)
        chosen = take("compression_type", None)
        if alias is not None and chosen is not None:
            raise ValueError("give compression or compression_type, not both")
        option = "compression" if alias is not None else "compression_type"
        given = alias if alias is not None else chosen
        compression_name, compression = _choice_ignoring_case(
            option, "NONE" if given is None else given, COMPRESSION_TYPES
        )
        router = take("message_router", None)
        if router is not None and not callable(router):
            raise TypeError("option message_router must be callable (partition_key, partitions) -> partition")
        chunk_size = take("chunk_max_message_size", None)
        access_name = take("access_mode", "Shared")
        initial_subscription = take("initial_subscription_name", None)
        built = cls(
            producer_name=None if name is None else check_str("producer_name", name),
            initial_sequence_id=None
            if initial is None
            else check_int_range("initial_sequence_id", initial, -1, 2**63 - 1),
            send_timeout=check_non_negative("send_timeout_ms", take("send_timeout_ms", 30_000)) / 1000,
            compression=compression,
            compression_type=compression_name,
            max_pending_messages=check_int_range(
                "max_pending_messages", take("max_pending_messages", 1000), 1, _INT32_MAX
            ),
            block_if_queue_full=check_bool("block_if_queue_full", take("block_if_queue_full", True)),
            batching_enabled=check_bool("batching_enabled", take("batching_enabled", True)),
            batching_max_messages=check_int_range(
                "batching_max_messages", take("batching_max_messages", 1000), 1, _INT32_MAX
            ),
            batching_max_allowed_size_in_bytes=check_int_range(
                "batching_max_allowed_size_in_bytes",
                take("batching_max_allowed_size_in_bytes", 128 * 1024),
                1,
                _INT32_MAX,
            ),
            batching_max_publish_delay=check_non_negative(
                "batching_max_publish_delay_ms", take("batching_max_publish_delay_ms", 10)
            )
            / 1000,
            chunking_enabled=check_bool("chunking_enabled", take("chunking_enabled", False)),
            chunk_max_message_size=None
            if chunk_size is None
            else check_int_range("chunk_max_message_size", chunk_size, 1, _INT32_MAX),
            hashing_scheme=check_choice("hashing_scheme", take("hashing_scheme", "java_string_hash"), HASHING_SCHEMES),
            message_routing_mode=check_choice(
                "message_routing_mode", take("message_routing_mode", "round_robin"), ROUTING_MODES
            ),
            message_router=router,
            access_mode=_choice_ignoring_case("access_mode", access_name, ACCESS_MODES)[1],
            properties=_string_map("properties", take("properties", None)),
            key_based_batching=check_choice("batcher_builder", take("batcher_builder", "default"), BATCHER_BUILDERS)
            == "key_based",
            initial_subscription_name=None
            if initial_subscription is None
            else check_str("initial_subscription_name", initial_subscription),
            **_partition_updates(take),
        )
        _unexpected("producer", options)
        if built.chunking_enabled and built.batching_enabled:
            raise ValueError("options chunking_enabled and batching_enabled cannot both be on")
        return built


@dataclass(frozen=True)
class ConsumerOptions:
    subscription: str
    subscription_type: int = CommandSubscribe.Exclusive
    subscription_type_name: str = "Exclusive"
    initial_position: int = CommandSubscribe.Latest
    receiver_queue_size: int = 1000
    max_total_receiver_queue_size_across_partitions: int = 50_000
    consumer_name: str | None = None
    ack_group_time: float = 0.1
    ack_group_max_size: int = 1000
    negative_ack_redelivery_delay: float = 60.0
    read_compacted: bool = False
    properties: Mapping[str, str] | None = None
    subscription_properties: Mapping[str, str] | None = None
    priority_level: int | None = None
    key_shared_mode: int = KeySharedMode.AUTO_SPLIT
    replicate_subscription_state: bool = False
    ack_timeout: float = 0.0
    batch_index_ack_enabled: bool = False
    dead_letter_policy: DeadLetterPolicy | None = None
    retry_enable: bool = False
    pattern_auto_discovery_period: float = 60.0
    auto_update_partitions: bool = True
    auto_update_partitions_interval: float = 60.0

    @classmethod
    def build(cls, options: dict[str, Any]) -> ConsumerOptions:
        """Check ``options`` (keyword arguments of ``client.consumer``); unknown names are a TypeError."""
        check_names("consumer", options, ConsumerConfig)
        options.pop("key_deserializer", None)
        options.pop("value_deserializer", None)
        take = options.pop
        group = take("group", None)
        subscription = take("subscription", None)
        if group is not None and subscription is not None and group != subscription:
            raise ValueError("options group and subscription name the same thing; give one of them")
        name = subscription if subscription is not None else group
        if name is None:
            raise TypeError("a consumer needs option group (or subscription): the subscription name")
        name = check_str("group", name)
        if not name.strip():
            raise ValueError("option group must not be blank")
        type_name, sub_type = _choice_ignoring_case(
            "subscription_type", take("subscription_type", "Exclusive"), SUBSCRIPTION_TYPES
        )
        _, position = _choice_ignoring_case("start", take("start", "latest"), INITIAL_POSITIONS)
        consumer_name = take("consumer_name", None)
        priority = take("priority_level", None)
        built = cls(
            subscription=name,
            subscription_type=sub_type,
            subscription_type_name=type_name,
            initial_position=position,
            receiver_queue_size=check_int_range("receiver_queue_size", take("receiver_queue_size", 1000), 1, 1 << 24),
            max_total_receiver_queue_size_across_partitions=check_int_range(
                "max_total_receiver_queue_size_across_partitions",
                take("max_total_receiver_queue_size_across_partitions", 50_000),
                1,
                1 << 30,
            ),
            consumer_name=None if consumer_name is None else check_str("consumer_name", consumer_name),
            ack_group_time=check_non_negative("ack_group_time_ms", take("ack_group_time_ms", 100)) / 1000,
            ack_group_max_size=check_int_range("ack_group_max_size", take("ack_group_max_size", 1000), 1, 1 << 20),
            negative_ack_redelivery_delay=check_non_negative(
                "negative_ack_redelivery_delay_ms", take("negative_ack_redelivery_delay_ms", 60_000)
            )
            / 1000,
            read_compacted=check_bool("read_compacted", take("read_compacted", False)),
            properties=_string_map("properties", take("properties", None)),
            subscription_properties=_string_map("subscription_properties", take("subscription_properties", None)),
            priority_level=None if priority is None else check_int_range("priority_level", priority, 0, _INT32_MAX),
            key_shared_mode=_choice_ignoring_case(
                "key_shared_mode", take("key_shared_mode", "auto_split"), KEY_SHARED_MODES
            )[1],
            replicate_subscription_state=check_bool(
                "replicate_subscription_state", take("replicate_subscription_state", False)
            ),
            ack_timeout=check_non_negative("ack_timeout_ms", take("ack_timeout_ms", 0)) / 1000,
            batch_index_ack_enabled=check_bool("batch_index_ack_enabled", take("batch_index_ack_enabled", False)),
            dead_letter_policy=DeadLetterPolicy.of(take("dead_letter_policy", None)),
            retry_enable=check_bool("retry_enable", take("retry_enable", False)),
            pattern_auto_discovery_period=check_positive(
                "pattern_auto_discovery_period_ms", take("pattern_auto_discovery_period_ms", 60_000)
            )
            / 1000,
            **_partition_updates(take),
        )
        _unexpected("consumer", options)
        if 0 < built.ack_timeout < _MIN_ACK_TIMEOUT:
            raise ValueError(f"option ack_timeout_ms must be 0 (off) or at least {_MIN_ACK_TIMEOUT * 1000:g}")
        if built.retry_enable and built.dead_letter_policy is None:
            raise ValueError("option retry_enable needs a dead_letter_policy (its max_redeliver_count bounds retries)")
        if built.read_compacted and built.subscription_type in (CommandSubscribe.Shared, CommandSubscribe.Key_Shared):
            raise ValueError("option read_compacted works with Exclusive and Failover subscriptions only")
        return built
