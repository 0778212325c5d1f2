"""The options of ``connect`` and of the client's factories, each declared once as a public ``TypedDict``
(what the type checker sees, and the names ``kafkawire.client`` checks at run time): the Java client's and
aiokafka's names, times in ms. Each is checked into one frozen config (``ClientConfig``, ``ProducerConfig``,
``ConsumerConfig``, ``ShareConsumerConfig``, ``AdminConfig``) that holds every option's default, check and
unit once, with the rules between options; the session, producers, consumers and admins read those.
"""

from __future__ import annotations

import re
import ssl as _ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from kafkawire.metadata import RECOVERY_STRATEGIES, MetadataRecoveryStrategy, TopicPartition
from kafkawire.protocol.records import DEFAULT_MAX_UNCOMPRESSED
from kafkawire.rebalance_listener import ConsumerRebalanceListener
from kafkawire.sasl import TokenProvider
from mqwire.common.contract import Deserializer, Serializer, Start
from mqwire.common.errors import ConfigurationError, OptionTypeError
from mqwire.common.options import (
    Check,
    callable_or_none,
    check_bool,
    check_choice,
    check_non_negative,
    check_positive,
    check_str,
    instance_of,
    int_range,
    one_of,
    option,
    options_of,
    or_none,
)

__all__ = ["AdminOptions", "ClientOptions", "ConsumerOptions", "ProducerOptions", "ShareConsumerOptions"]

# The types of some options, declared with the options: the modules that take them import them from here.
PartitionSpec = TopicPartition | tuple[str, int] | int
"""A partition as the consumer's calls take it: a TopicPartition, (topic, partition), or a partition number."""
PartitionsCallback = Callable[[set[TopicPartition]], Awaitable[None]]
"""A rebalance callback: called with the partitions assigned, revoked or lost."""
Partitioner = Callable[[bytes | None, list[int], list[int]], int]
"""``partitioner(key, all_partitions, available_partitions) -> partition``."""
AcknowledgementMode = Literal["implicit", "explicit"]
AcquireMode = Literal["batch_optimized", "record_limit"]
IsolationLevel = Literal["read_uncommitted", "read_committed"]
GroupProtocol = Literal["classic", "consumer"]

INT32_MAX = 2**31 - 1
COMPRESSIONS = (None, "none", "gzip", "snappy", "lz4", "zstd")
STARTS = ("earliest", "latest")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
GROUP_PROTOCOLS = ("classic", "consumer")
REMOTE_ASSIGNORS = ("uniform", "range")
# Where every batch starts when batch_size is not given: Java's default, so a producer writing to many
# partitions at a low rate reserves no more memory per partition than Java's does.
DEFAULT_BATCH_SIZE = 16_384
# A busy partition's batches grow to max_request_size (1 MB by default), as librdkafka's do, but never past a
# broker's default limit on one record batch (message.max.bytes, 1 048 588), whatever max_request_size says:
# 2x the records/s of 16 KB batches on one partition at 100 B; at 10 KB on one partition, 1 MB batches cost the
# broker less CPU per record than 512 KB ones (18 against 28 µs in one run) and so went faster on two cores.
GROWN_BATCH_LIMIT = 1_048_576
# Java's bound: more produce requests in flight than this could reorder an idempotent producer's batches.
MAX_IDEMPOTENT_IN_FLIGHT = 5
# Times are held in seconds converted from ms; a rule comparing sums of them allows for float rounding.
_ROUNDING = 1e-9


class ClientOptions(TypedDict, total=False):
    """The options of ``connect``: the Java client's and aiokafka's names, times in ms.

    - ``client_id`` — the name sent with every request (brokers log it and apply quotas by it); default
      ``"mqwire"``.
    - ``request_timeout_ms`` — how long to wait for a broker's answer to a request (ms), and how long
      metadata and coordinator lookups keep retrying; default 30 000.
    - ``connect_timeout_ms`` — how long opening a connection may take (ms), TCP and TLS; default 10 000
      (Java: ``socket.connection.setup.timeout.ms``).
    - ``metadata_max_age_ms`` — how often the metadata of the topics in use is refreshed (ms), which is also
      how soon a ``pattern`` subscription sees new topics; default 300 000.
    - ``retry_backoff_ms`` — the first wait before retrying a failed request (ms), doubled on each retry;
      default 100.
    - ``retry_backoff_max_ms`` — the longest wait between retries (ms), not below ``retry_backoff_ms``;
      default 1 000.
    - ``allow_auto_create_topics`` — whether a metadata request for an unknown topic lets the broker create
      it (when the broker's ``auto.create.topics.enable`` allows); default True.
    - ``metadata_recovery_strategy`` — what the client does when no broker it knows answers (a cluster
      replaced, its addresses changed): ``"rebootstrap"`` looks the URL's bootstrap names up again and asks
      them for the cluster's metadata, ``"none"`` keeps trying the brokers it knows; default
      ``"rebootstrap"`` (Java 4.x: ``metadata.recovery.strategy``, KIP-899 / KIP-1102).
    - ``metadata_recovery_rebootstrap_trigger_ms`` — with ``"rebootstrap"``: how long metadata may go
      unanswered by every broker the client knows before it bootstraps again (ms); it does so at once when
      none of them can be connected to, or when a broker answers ``REBOOTSTRAP_REQUIRED``; default 300 000
      (Java: ``metadata.recovery.rebootstrap.trigger.ms``).
    - ``ssl_context`` — the ``ssl.SSLContext`` for ``kafka+ssl://`` URLs; default None: one is made that
      verifies the brokers' certificates against the system's (or ``ssl_cafile``'s) authorities.
    - ``ssl_cafile`` — a PEM file of the authorities to trust instead of the system's; ``kafka+ssl://`` and
      no ``ssl_context`` only; default None.
    - ``ssl_certfile`` — a PEM file with the client's certificate (and key), for brokers that authenticate
      clients by TLS; ``kafka+ssl://`` and no ``ssl_context`` only; default None.
    - ``ssl_keyfile`` — the client's private key, when ``ssl_certfile`` does not hold it; used only with
      ``ssl_certfile``; default None.
    - ``ssl_check_hostname`` — whether the broker's certificate must name the host connected to (the
      certificate itself is verified either way); ignored with ``ssl_context``; default True.
    - ``sasl_mechanism`` — ``"PLAIN"``, ``"SCRAM-SHA-256"``, ``"SCRAM-SHA-512"``, ``"OAUTHBEARER"`` or ``"GSSAPI"``;
      default None: no SASL authentication. Over ``kafka://`` it is SASL_PLAINTEXT, over ``kafka+ssl://``
      SASL_SSL.
    - ``sasl_plain_username`` — the user name for PLAIN and SCRAM; default None.
    - ``sasl_plain_password`` — the password for PLAIN and SCRAM; default None.
    - ``sasl_oauth_token_provider`` — for OAUTHBEARER: a callable, plain or async, that returns the bearer
      token; it is called for every new connection; default None.
    - ``sasl_kerberos_service_name`` — for GSSAPI: the service part of the brokers' Kerberos principal
      (``kafka/<host>@REALM``); default ``"kafka"``.
    - ``sasl_kerberos_principal`` — for GSSAPI: the client's principal (``user@REALM``); default None: the
      principal of the default credential cache (``kinit``).
    - ``sasl_kerberos_keytab`` — for GSSAPI: a keytab file with the keys of ``sasl_kerberos_principal``,
      which logs in by itself (into an in-memory cache of the client's own); default None: the default
      credential cache. Needs the ``kerberos`` extra (the ``gssapi`` package over MIT Kerberos).
    - ``sasl_kerberos_domain_name`` — for GSSAPI: the host part of the brokers' principal; default None: the
      host each broker is reached at.
    - ``enable_metrics_push`` — push the client's metrics to brokers that ask for them through a client-metrics
      subscription (KIP-714 client telemetry: GetTelemetrySubscriptions, PushTelemetry); needs the
      ``telemetry`` extra (opentelemetry-proto), without which it stays off; default True (the Java name and
      default).
    """

    client_id: str
    request_timeout_ms: int
    connect_timeout_ms: int
    metadata_max_age_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    allow_auto_create_topics: bool
    metadata_recovery_strategy: MetadataRecoveryStrategy
    metadata_recovery_rebootstrap_trigger_ms: int
    ssl_context: _ssl.SSLContext | None
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_check_hostname: bool
    sasl_mechanism: str | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_oauth_token_provider: TokenProvider | None
    sasl_kerberos_service_name: str
    sasl_kerberos_principal: str | None
    sasl_kerberos_keytab: str | None
    sasl_kerberos_domain_name: str | None
    enable_metrics_push: bool


class ProducerOptions(TypedDict, total=False):
    """The options of ``client.producer``: the Java client's and aiokafka's names, times in ms.

    - ``key_serializer`` — turns each record's key into bytes; default None: keys must be bytes or None.
    - ``value_serializer`` — turns each record's value into bytes; default None: values must be bytes or
      None.
    - ``acks`` — the acknowledgement each produce request waits for: ``0`` (none, the offset reads -1),
      ``1`` (the leader) or ``"all"`` / ``-1`` (all in-sync replicas); default ``"all"``.
    - ``linger_ms`` — how long a batch waits for more records before it is sent (ms); default 5. It goes out within
      half a millisecond of that time: the event loop's timers count whole milliseconds.
    - ``batch_size`` — the size at which a partition's batch is complete and sent at once (bytes); a
      larger record makes a batch of its own; every batch has this size when it is given (the Java
      client's meaning); default None: batches of 16 384 bytes (or room for four records of a batch's
      first record's size, when that is more), and larger ones, up to ``max_request_size`` (at most
      1 048 576, a broker's default batch limit), for a partition whose batches fill faster than they are
      acknowledged or fill up before their linger time is over; a partition's batch that went out at least
      half full leaves the next at its size.
    - ``compression_type`` — the codec of the batches: ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"``, or
      ``"none"`` / None; default None (no compression).
    - ``compression`` — the same as ``compression_type``, under a shorter name; give one of the two (both
      must agree); default None.
    - ``max_request_size`` — the most a produce request, and so a single record, may hold (bytes); default
      1 048 576.
    - ``request_timeout_ms`` — how long the broker may take to answer a produce request (ms), sent to it
      as the request's timeout; this producer's own, not ``connect``'s; default 30 000.
    - ``delivery_timeout_ms`` — how long a record may take from being buffered to being acknowledged,
      retries included (ms), after which it fails with ``DeliveryTimeoutError``; at least
      ``linger_ms + request_timeout_ms``; default 120 000.
    - ``retry_backoff_ms`` — the first wait before a failed batch is sent again (ms), doubled on each retry;
      default 100.
    - ``retry_backoff_max_ms`` — the longest wait before a batch is sent again (ms), not below
      ``retry_backoff_ms``; default 1 000.
    - ``retries`` — how many times a batch failing with a retriable error is sent again (within
      ``delivery_timeout_ms``); default 2 147 483 647.
    - ``enable_idempotence`` — whether the broker drops duplicates of retried batches (producer id and
      sequence numbers); needs ``acks="all"``, ``retries`` > 0 and at most 5 requests in flight; default
      None: on unless other options conflict with it (Java's rule); a ``transactional_id`` turns it on.
    - ``max_in_flight_requests_per_connection`` — how many produce requests may await an answer from one
      broker at a time; default 5.
    - ``buffer_memory`` — how much the batches waiting to be sent may hold together (bytes, counted per
      batch at its size limit or more, grown batches too); ``send`` waits for room when it is full;
      default 33 554 432.
    - ``max_buffer_size`` — the same as ``buffer_memory``, under another name; when given it wins; default
      None.
    - ``max_block_ms`` — how long ``send`` / ``enqueue`` may wait for buffer room (then
      ``BufferFullError``), for a topic's partitions, or for the transactional producer id (ms); default
      60 000.
    - ``partitioner`` — ``(key bytes or None, all partitions, partitions with a leader) -> partition``
      (aiokafka's signature), for records sent without ``partition=``; default None: keyed records go to
      ``murmur2(key)`` modulo the number of partitions (Java's rule), unkeyed ones to a sticky partition
      changed after each batch.
    - ``transactional_id`` — makes the producer transactional (``begin_transaction``, ``transaction()``);
      the id fences older producers that used it; default None.
    - ``transaction_timeout_ms`` — how long the transaction coordinator lets a transaction stay open before
      aborting it (ms); default 60 000.
    """

    key_serializer: Serializer | None
    value_serializer: Serializer | None
    acks: int | str
    linger_ms: float
    batch_size: int | None
    compression: str | None
    compression_type: str | None
    max_request_size: int
    request_timeout_ms: float
    delivery_timeout_ms: float
    retry_backoff_ms: float
    retry_backoff_max_ms: float
    retries: int
    enable_idempotence: bool | None
    max_in_flight_requests_per_connection: int
    buffer_memory: int
    max_buffer_size: int | None
    max_block_ms: float
    partitioner: Partitioner | None
    transactional_id: str | None
    transaction_timeout_ms: int


class ConsumerOptions(TypedDict, total=False):
    """The options of ``client.consumer``: the Java client's and aiokafka's names, times in ms.

    - ``group`` — the consumer group to join, or that commits go to with ``partitions=``; default None: no
      group, no commits (Java: ``group.id``, aiokafka: ``group_id``).
    - ``start`` — where to start a partition without a committed offset, or whose offset is out of range:
      ``"earliest"`` or ``"latest"``; default ``"latest"``.
    - ``auto_offset_reset`` — aiokafka's and Java's name for ``start``; when both are given they must agree;
      default None.
    - ``partitions`` — read exactly these partitions, outside any group rebalance: partition numbers (with
      one topic) or ``(topic, partition)`` pairs of the given topics; default None: the group assigns them,
      or without a group every partition of the topics.
    - ``pattern`` — subscribe to every topic whose whole name matches this regular expression (str or
      compiled), instead of naming topics; default None.
    - ``key_deserializer`` — turns each record's key bytes into the key the application sees; default None:
      bytes.
    - ``value_deserializer`` — turns each record's value bytes into the value the application sees; default
      None: bytes.
    - ``isolation_level`` — ``"read_committed"`` skips aborted transactional records and stops at the last
      stable offset; ``"read_uncommitted"`` reads everything; default ``"read_uncommitted"``.
    - ``fetch_max_wait_ms`` — how long the broker may hold a fetch waiting for ``fetch_min_bytes`` (ms);
      default 500.
    - ``fetch_min_bytes`` — how much data a fetch waits for before the broker answers (bytes); default 1.
    - ``fetch_max_bytes`` — the most data one fetch response may hold (bytes; a larger first batch still
      comes); default 52 428 800.
    - ``max_partition_fetch_bytes`` — the most data one fetch returns for one partition (bytes); default
      1 048 576.
    - ``fetch_max_decompressed_bytes`` — the most that the compressed batches of one fetch response may
      decompress to, over all its partitions (bytes). Batches are decompressed one at a time as they are
      read; one that no longer fits waits for the next fetch, and one larger than the whole budget fails
      its partition with RecordBatchTooLargeError (seek past it to go on). No Java equivalent; default
      67 108 864.
    - ``max_buffered_records`` — how many fetched records may wait for the application before fetching
      pauses (a soft bound: one response may overshoot it); no Java equivalent; default 10 000.
    - ``enable_auto_commit`` — commit in the background, on rebalance and on close; has effect only with a
      ``group``; default True.
    - ``auto_commit_interval_ms`` — how often auto-commit commits (ms); default 5 000.
    - ``commit_acknowledged_only`` — auto-commit only the positions after ``ack``-ed messages rather than
      after every delivered one; default False.
    - ``check_crcs`` — verify the CRC32C of every fetched record batch; default True.
    - ``group_protocol`` — ``"classic"`` (JoinGroup/SyncGroup, assignment by the members) or
      ``"consumer"`` (KIP-848 ConsumerGroupHeartbeat, assignment by the broker); default ``"classic"``.
    - ``partition_assignment_strategy`` — the assignors a classic member offers, preferred first:
      ``"range"``, ``"roundrobin"``, ``"sticky"``, ``"cooperative-sticky"`` (one name or a sequence);
      default ``("range", "roundrobin")``.
    - ``session_timeout_ms`` — how long the coordinator waits for a classic member's heartbeat before
      removing it (ms); default 45 000.
    - ``heartbeat_interval_ms`` — how often a classic member heartbeats (ms), below
      ``session_timeout_ms``; with ``group_protocol="consumer"`` the broker sets it; default 3 000.
    - ``max_poll_interval_ms`` — how long the application may go without polling (``receive``,
      ``getone``, ``getmany``, iteration) before the member leaves the group, to join again at the next
      poll (ms); default 300 000.
    - ``rebalance_timeout_ms`` — how long the coordinator waits for the members to rejoin during a
      rebalance (ms); default None: ``max_poll_interval_ms``.
    - ``group_instance_id`` — a static member id (KIP-345): a restart within the session timeout keeps the
      partitions without a rebalance; default None.
    - ``group_remote_assignor`` — with ``group_protocol="consumer"``: the broker's assignor, ``"uniform"``
      or ``"range"``; default None: the broker's default.
    - ``on_assigned`` — ``async (set of TopicPartition)``, called after the group assigned partitions;
      default None.
    - ``on_revoked`` — ``async (set of TopicPartition)``, called before partitions are given up (with
      auto-commit, after their positions were committed); default None.
    - ``on_lost`` — ``async (set of TopicPartition)``, called when partitions were lost to another member
      and nothing could be committed; default None: ``on_revoked`` is called instead.
    - ``listener`` — a :class:`~kafkawire.ConsumerRebalanceListener` whose methods are awaited at each rebalance
      in aiokafka's order (what ``subscribe(..., listener=)`` sets too); needs ``group`` and excludes
      ``partitions``, ``on_assigned``, ``on_revoked`` and ``on_lost``; default None.
    """

    group: str | None
    start: Start
    auto_offset_reset: Start | None
    partitions: Iterable[PartitionSpec] | None
    pattern: str | re.Pattern[str] | None
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    isolation_level: Literal["read_uncommitted", "read_committed"]
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    fetch_max_decompressed_bytes: int
    max_buffered_records: int
    enable_auto_commit: bool
    auto_commit_interval_ms: float
    commit_acknowledged_only: bool
    check_crcs: bool
    group_protocol: Literal["classic", "consumer"]
    partition_assignment_strategy: str | Sequence[str]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    rebalance_timeout_ms: int | None
    group_instance_id: str | None
    group_remote_assignor: str | None
    on_assigned: PartitionsCallback | None
    on_revoked: PartitionsCallback | None
    on_lost: PartitionsCallback | None
    listener: ConsumerRebalanceListener | None


class ShareConsumerOptions(TypedDict, total=False):
    """The options of ``client.share_consumer``: the Java ``KafkaShareConsumer``'s names, times in ms.

    - ``group`` — the share group to join (required; Java: ``group.id``).
    - ``share_acknowledgement_mode`` — ``"implicit"``: every record handed out is accepted at the next
      poll or ``commit``, unless ``ack`` settled it first; ``"explicit"``: only ``ack`` settles records,
      and one left unacknowledged comes back after its acquisition lock times out; default ``"implicit"``
      (Java: ``share.acknowledgement.mode``).
    - ``key_deserializer`` — turns each record's key bytes into the key the application sees; default None.
    - ``value_deserializer`` — turns each record's value bytes into the value; default None.
    - ``fetch_max_wait_ms`` — how long the broker may hold a ShareFetch waiting for records (ms); default 500.
    - ``fetch_min_bytes`` — how much data a ShareFetch waits for before the broker answers (bytes); default 1.
    - ``fetch_max_bytes`` — the most data one ShareFetch response may hold (bytes); default 52 428 800.
    - ``max_poll_records`` — the most records one ShareFetch acquires (and ``getmany`` returns by default);
      default 500.
    - ``share_acquire_mode`` — ``"batch_optimized"`` (whole record batches, possibly more than
      ``max_poll_records``) or ``"record_limit"`` (at most ``max_poll_records``); default
      ``"batch_optimized"`` (Java: ``share.acquire.mode``).
    - ``check_crcs`` — verify the CRC32C of every fetched record batch; default True.
    - ``client_rack`` — the rack this member runs in, sent to the group coordinator; default None.
    - ``fetch_max_decompressed_bytes`` — the most that the compressed batches of one ShareFetch response may
      decompress to, over all its partitions (bytes); the acquired records of batches past it are released
      for a later fetch, and a batch larger than it alone fails with ``RecordBatchTooLargeError``; default
      67 108 864 (no Java equivalent: the bound is the consumer's, not the producer's).

    Where a share group starts reading (``share.auto.offset.reset``), how long a record stays locked to a
    member (``share.record.lock.duration.ms``) and how often it may be delivered are the group's configs,
    set on the broker, not here.
    """

    group: str
    share_acknowledgement_mode: AcknowledgementMode
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_poll_records: int
    share_acquire_mode: AcquireMode
    check_crcs: bool
    client_rack: str | None
    fetch_max_decompressed_bytes: int


class AdminOptions(TypedDict, total=False):
    """The options of ``client.admin``.

    - ``timeout_ms`` — how long an administrative operation may take (ms): the requests to the controller
      and their retries, the timeout the broker is given, and the wait until created topics have leaders
      or deleted ones are gone; default 60 000 (Java: ``default.api.timeout.ms``).
    """

    timeout_ms: float


@options_of(ClientOptions)
@dataclass(frozen=True)
class ClientConfig:
    """The checked options of ``connect`` (times in seconds). The checks that need the URL (TLS files with
    ``kafka://``) and the SASL settings' own are the session's."""

    client_id: str = option("mqwire", check_str)
    request_timeout: float = option(30_000, check_positive, name="request_timeout_ms", unit="ms")
    connect_timeout: float = option(10_000, check_positive, name="connect_timeout_ms", unit="ms")
    metadata_max_age: float = option(300_000, check_positive, name="metadata_max_age_ms", unit="ms")
    retry_backoff: float = option(100, check_positive, name="retry_backoff_ms", unit="ms")
    retry_backoff_max: float = option(1_000, check_positive, name="retry_backoff_max_ms", unit="ms")
    allow_auto_create_topics: bool = option(True, check_bool)
    metadata_recovery_strategy: MetadataRecoveryStrategy = option("rebootstrap", one_of(*RECOVERY_STRATEGIES))
    metadata_recovery_rebootstrap_trigger: float = option(
        300_000, check_positive, name="metadata_recovery_rebootstrap_trigger_ms", unit="ms"
    )
    ssl_context: _ssl.SSLContext | None = option(None, or_none(instance_of(_ssl.SSLContext, "an ssl.SSLContext")))
    ssl_cafile: str | None = option(None)
    ssl_certfile: str | None = option(None)
    ssl_keyfile: str | None = option(None)
    ssl_check_hostname: bool = option(True, check_bool)
    sasl_mechanism: str | None = option(None)
    sasl_plain_username: str | None = option(None)
    sasl_plain_password: str | None = option(None)
    sasl_oauth_token_provider: TokenProvider | None = option(None)
    sasl_kerberos_service_name: str = option("kafka", check_str)
    sasl_kerberos_principal: str | None = option(None, or_none(check_str))
    sasl_kerberos_keytab: str | None = option(None, or_none(check_str))
    sasl_kerberos_domain_name: str | None = option(None, or_none(check_str))
    enable_metrics_push: bool = option(True, check_bool)

    def __post_init__(self) -> None:
        if self.retry_backoff_max < self.retry_backoff:
            raise ConfigurationError("option retry_backoff_max_ms must not be below retry_backoff_ms")


# ------------------------------------------------------------------------------------------- value checks
def _name_or_none(name: str, value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise OptionTypeError(f"option {name} must be a non-empty str or None")
    return value


def _acks(name: str, value: object) -> int:
    """``acks`` as the protocol's number: ``"all"`` is -1."""
    if value == "all":
        return -1
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionTypeError(f"option {name} must be 0, 1, -1 or 'all', not {value!r}")
    return check_choice(name, value, (0, 1, -1))


def _compression(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise OptionTypeError(f"option {name} must be a str or None")
    return check_choice(name, value, COMPRESSIONS)


def _partitioner(name: str, value: object) -> object:
    if value is not None and not callable(value):
        raise OptionTypeError(f"option {name} must be callable (key, all_partitions, available) -> partition")
    return value


def _named(*choices: str) -> Check:
    """The check of a str option that is one of ``choices``: another type is an OptionTypeError."""
    listed = " or ".join(map(repr, choices))

    def check(name: str, value: object) -> str:
        if not isinstance(value, str):
            raise OptionTypeError(f"option {name} must be {listed}")
        return check_choice(name, value, choices)

    return check


def check_pattern(name: str, value: object) -> re.Pattern[str] | None:
    """A ``pattern`` (of ``client.consumer`` or ``subscribe``) compiled; a str that is no regular expression is a
    ConfigurationError naming the option."""
    if value is None or isinstance(value, re.Pattern):
        return value
    if not isinstance(value, str):
        raise OptionTypeError(f"option {name} must be a str or re.Pattern")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigurationError(f"option {name}: {value!r} is no regular expression: {exc}") from None


def _partition_specs(name: str, value: object) -> tuple[PartitionSpec, ...] | None:
    """The partitions as a tuple (an iterator is read once, here); what each names is checked against the
    consumer's topics by the consumer."""
    if value is None:
        return None
    if not isinstance(value, Iterable):
        raise OptionTypeError(f"option {name} must be an iterable of partitions, not {type(value).__name__}")
    return tuple(value)


def _assignor_names(name: str, value: object) -> tuple[str, ...]:
    """The assignors' names as a tuple; the consumer finds each among the assignors it knows."""
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, Iterable) else None
    if names is None:
        raise OptionTypeError(f"option {name} must be an assignor's name or a sequence of them")
    if not names:
        raise ConfigurationError(f"option {name} must name at least one assignor")
    return tuple(names)


def _remote_assignor(name: str, value: object) -> str | None:
    if value is None:
        return None
    if value not in REMOTE_ASSIGNORS:
        raise ConfigurationError(f"option {name} must be one of {REMOTE_ASSIGNORS} or None")
    return str(value)


def _rebalance_callback(name: str, value: object) -> object:
    if value is not None and not callable(value):
        raise OptionTypeError(f"option {name} must be an async callable taking a set of TopicPartition")
    return value


def check_listener(name: str, value: object) -> ConsumerRebalanceListener | None:
    """A rebalance listener: None, or an instance of kafkawire's ``ConsumerRebalanceListener`` (as aiokafka
    asks of its own), so that a plain callable or an aiokafka listener is told at once."""
    if value is None or isinstance(value, ConsumerRebalanceListener):
        return value
    raise OptionTypeError(f"option {name} must be a kafkawire.ConsumerRebalanceListener, not {type(value).__name__}")


def check_listener_fits(group: str | None, assigned_by_hand: bool, *callbacks: object) -> None:
    """A listener hears a group's rebalances: it needs a group that assigns the partitions, and it replaces the
    ``on_assigned``/``on_revoked``/``on_lost`` callbacks rather than running beside them in an order of its own."""
    if group is None:
        raise ConfigurationError("option listener needs group=: it hears the rebalances of a consumer group")
    if assigned_by_hand:
        raise ConfigurationError("option listener does not go with partitions=: such partitions never rebalance")
    if any(callback is not None for callback in callbacks):
        raise ConfigurationError("give a listener or on_assigned/on_revoked/on_lost, not both")


def _share_group(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"share_consumer: {name} must be a non-empty string")
    return value


def _share_mode(*choices: str) -> Check:
    listed = " or ".join(map(repr, choices))

    def check(name: str, value: object) -> str:
        if value not in choices:
            raise ConfigurationError(f"{name} must be {listed}, not {value!r}")
        return str(value)

    return check


def _at_least(low: int) -> Check:
    """The check of an int option of ``low`` or more, with no upper bound."""

    def check(name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise OptionTypeError(f"{name} must be an integer of at least {low}, not {value!r}")
        if value < low:
            raise ConfigurationError(f"{name} must be an integer of at least {low}, not {value!r}")
        return value

    return check


# ------------------------------------------------------------------------------------- factories' configs
@options_of(ProducerOptions)
@dataclass(frozen=True)
class ProducerConfig:
    """The checked options of ``client.producer`` (times in seconds, but ``transaction_timeout_ms``, which
    the coordinator is sent in ms). ``compression``, ``buffer_memory`` and ``idempotent`` resolve the
    options that say the same thing twice, and Java's rule for idempotence."""

    key_serializer: Serializer | None = option(None, callable_or_none)
    value_serializer: Serializer | None = option(None, callable_or_none)
    acks: int = option("all", _acks)
    linger: float = option(5, check_non_negative, name="linger_ms", unit="ms")
    # Unset, batches adapt (``batch_size``/``max_batch_size`` below); given, every batch has that size.
    batch_size_option: int | None = option(None, or_none(int_range(1, INT32_MAX)), name="batch_size")
    compression_option: str | None = option(None, _compression, name="compression")
    compression_type_option: str | None = option(None, _compression, name="compression_type")
    max_request_size: int = option(1_048_576, int_range(1, INT32_MAX))
    request_timeout: float = option(30_000, check_positive, name="request_timeout_ms", unit="ms")
    delivery_timeout: float = option(120_000, check_positive, name="delivery_timeout_ms", unit="ms")
    retry_backoff: float = option(100, check_positive, name="retry_backoff_ms", unit="ms")
    retry_backoff_max: float = option(1_000, check_positive, name="retry_backoff_max_ms", unit="ms")
    retries: int = option(INT32_MAX, int_range(0, INT32_MAX))
    enable_idempotence: bool | None = option(None, or_none(check_bool))
    max_in_flight: int = option(5, int_range(1, INT32_MAX), name="max_in_flight_requests_per_connection")
    buffer_memory_option: int = option(33_554_432, int_range(1, 2**62), name="buffer_memory")
    max_buffer_size: int | None = option(None, or_none(int_range(1, 2**62)))
    max_block: float = option(60_000, check_non_negative, name="max_block_ms", unit="ms")
    partitioner: Partitioner | None = option(None, _partitioner)
    transactional_id: str | None = option(None, _name_or_none)
    transaction_timeout_ms: int = option(60_000, int_range(1, INT32_MAX))

    def __post_init__(self) -> None:
        given = (self.compression_option, self.compression_type_option)
        if None not in given and given[0] != given[1]:
            raise ConfigurationError("options compression and compression_type disagree; give one of them")
        if self.delivery_timeout < self.linger + self.request_timeout - _ROUNDING:
            raise ConfigurationError("option delivery_timeout_ms must be at least linger_ms + request_timeout_ms")
        if self.retry_backoff_max < self.retry_backoff:
            raise ConfigurationError("option retry_backoff_max_ms must not be below retry_backoff_ms")
        if self.transactional_id is not None and self.enable_idempotence is False:
            raise ConfigurationError("option transactional_id needs enable_idempotence (leave it unset or True)")
        if self.enable_idempotence or self.transactional_id is not None:
            if self.acks != -1:
                raise ConfigurationError("option enable_idempotence needs acks='all'")
            if self.max_in_flight > MAX_IDEMPOTENT_IN_FLIGHT:
                raise ConfigurationError(
                    "option max_in_flight_requests_per_connection must be at most 5 with idempotence"
                )
            if self.retries == 0:
                raise ConfigurationError("option enable_idempotence needs retries > 0")

    @property
    def compression(self) -> str | None:
        """The batches' codec, from ``compression`` or ``compression_type``; None for no compression."""
        given = self.compression_option if self.compression_option is not None else self.compression_type_option
        return None if given in (None, "none") else given

    @property
    def batch_size(self) -> int:
        """The size at which a batch is complete: ``batch_size`` when given, else where every batch starts."""
        return DEFAULT_BATCH_SIZE if self.batch_size_option is None else self.batch_size_option

    @property
    def max_batch_size(self) -> int:
        """The most a busy partition's batch may grow to: ``batch_size`` when given (a fixed size), else
        ``max_request_size`` up to ``GROWN_BATCH_LIMIT``, at least ``DEFAULT_BATCH_SIZE``."""
        if self.batch_size_option is not None:
            return self.batch_size_option
        return max(DEFAULT_BATCH_SIZE, min(self.max_request_size, GROWN_BATCH_LIMIT))

    @property
    def buffer_memory(self) -> int:
        """What the buffered batches may hold together: ``max_buffer_size`` when given, else ``buffer_memory``."""
        return self.buffer_memory_option if self.max_buffer_size is None else self.max_buffer_size

    @property
    def idempotent(self) -> bool:
        """Whether the producer is idempotent: as asked, or, unasked, Java's rule (on unless ``acks``,
        ``max_in_flight_requests_per_connection`` or ``retries`` conflict with it); a transactional
        producer always is."""
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        if self.transactional_id is not None:
            return True
        return self.acks == -1 and self.max_in_flight <= MAX_IDEMPOTENT_IN_FLIGHT and self.retries > 0


@options_of(ConsumerOptions)
@dataclass(frozen=True)
class ConsumerConfig:
    """The checked options of ``client.consumer`` (``auto_commit_interval`` in seconds; the times sent to
    brokers stay in ms). ``partitions`` is checked against the consumed topics, and the assignors' names
    against the assignors, by the consumer."""

    group: str | None = option(None, _name_or_none)
    start_option: Start = option("latest", _named(*STARTS), name="start")
    auto_offset_reset: Start | None = option(None, or_none(one_of(*STARTS)))
    partitions: tuple[PartitionSpec, ...] | None = option(None, _partition_specs)
    pattern: re.Pattern[str] | None = option(None, check_pattern)
    key_deserializer: Deserializer | None = option(None, callable_or_none)
    value_deserializer: Deserializer | None = option(None, callable_or_none)
    isolation_level: IsolationLevel = option("read_uncommitted", _named(*ISOLATION_LEVELS))
    fetch_max_wait_ms: int = option(500, int_range(0, INT32_MAX))
    fetch_min_bytes: int = option(1, int_range(0, INT32_MAX))
    fetch_max_bytes: int = option(52_428_800, int_range(1, INT32_MAX))
    max_partition_fetch_bytes: int = option(1_048_576, int_range(1, INT32_MAX))
    fetch_max_decompressed_bytes: int = option(DEFAULT_MAX_UNCOMPRESSED, int_range(1, INT32_MAX))
    max_buffered_records: int = option(10_000, int_range(1, INT32_MAX))
    enable_auto_commit: bool = option(True, check_bool)
    auto_commit_interval: float = option(5_000, check_positive, name="auto_commit_interval_ms", unit="ms")
    commit_acknowledged_only: bool = option(False, check_bool)
    check_crcs: bool = option(True, check_bool)
    group_protocol: GroupProtocol = option("classic", one_of(*GROUP_PROTOCOLS))
    partition_assignment_strategy: tuple[str, ...] = option(("range", "roundrobin"), _assignor_names)
    session_timeout_ms: int = option(45_000, int_range(1, INT32_MAX))
    heartbeat_interval_ms: int = option(3_000, int_range(1, INT32_MAX))
    max_poll_interval_ms: int = option(300_000, int_range(1, INT32_MAX))
    rebalance_timeout_option: int | None = option(None, or_none(int_range(1, INT32_MAX)), name="rebalance_timeout_ms")
    group_instance_id: str | None = option(None, _name_or_none)
    group_remote_assignor: str | None = option(None, _remote_assignor)
    on_assigned: PartitionsCallback | None = option(None, _rebalance_callback)
    on_revoked: PartitionsCallback | None = option(None, _rebalance_callback)
    on_lost: PartitionsCallback | None = option(None, _rebalance_callback)
    listener: ConsumerRebalanceListener | None = option(None, check_listener)

    def __post_init__(self) -> None:
        reset = self.auto_offset_reset
        # aiokafka's and Java's name for start: both given must agree.
        if reset is not None and self.start_option != "latest" and self.start_option != reset:
            raise ConfigurationError("options start and auto_offset_reset disagree; give one of them")
        if self.pattern is not None and self.partitions is not None:
            raise ConfigurationError("options partitions and pattern exclude each other")
        if self.group_protocol == "classic" and self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigurationError("option heartbeat_interval_ms must be lower than session_timeout_ms")
        if self.listener is not None:
            callbacks = (self.on_assigned, self.on_revoked, self.on_lost)
            check_listener_fits(self.group, self.partitions is not None, *callbacks)

    @property
    def start(self) -> Start:
        """Where a partition without a committed offset starts: ``auto_offset_reset`` when given, else ``start``."""
        return self.start_option if self.auto_offset_reset is None else self.auto_offset_reset

    @property
    def rebalance_timeout_ms(self) -> int:
        """How long a rebalance may take (ms): the Java client's rule, the poll interval unless given."""
        given = self.rebalance_timeout_option
        return self.max_poll_interval_ms if given is None else given


@options_of(ShareConsumerOptions)
@dataclass(frozen=True)
class ShareConsumerConfig:
    """The checked options of ``client.share_consumer`` (times in ms, as ShareFetch sends them)."""

    group: str = option(None, _share_group)
    share_acknowledgement_mode: AcknowledgementMode = option("implicit", _share_mode("implicit", "explicit"))
    key_deserializer: Deserializer | None = option(None, callable_or_none)
    value_deserializer: Deserializer | None = option(None, callable_or_none)
    fetch_max_wait_ms: int = option(500, _at_least(0))
    fetch_min_bytes: int = option(1, _at_least(0))
    fetch_max_bytes: int = option(52_428_800, _at_least(1))
    max_poll_records: int = option(500, _at_least(1))
    share_acquire_mode: AcquireMode = option("batch_optimized", _share_mode("batch_optimized", "record_limit"))
    check_crcs: bool = option(True, check_bool)
    client_rack: str | None = option(None, or_none(check_str))
    fetch_max_decompressed_bytes: int = option(DEFAULT_MAX_UNCOMPRESSED, _at_least(1))


@options_of(AdminOptions)
@dataclass(frozen=True)
class AdminConfig:
    """The checked options of ``client.admin`` (times in seconds)."""

    timeout: float = option(60_000, check_positive, name="timeout_ms", unit="ms")
