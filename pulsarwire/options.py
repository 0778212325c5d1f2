"""The options of ``connect`` and of the client's factories, declared as public ``TypedDict``s (what the type
checker sees), and the frozen configs the producer and consumer options are checked into when the object is
built, so a wrong one names itself (``ProducerConfig``, ``ConsumerConfig``: the package's own, not exported).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from mqwire.common.contract import Deserializer, Serializer
from mqwire.common.errors import ConfigurationError, OptionTypeError
from mqwire.common.options import (
    Check,
    build_config,
    callable_or_none,
    check_bool,
    check_choice,
    check_int_range,
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
from mqwire.common.version import __version__
from pulsarwire.connection import DEFAULT_MAX_MESSAGE_SIZE
from pulsarwire.crypto import CryptoKeyReader
from pulsarwire.memory_budget import DEFAULT_MEMORY_LIMIT
from pulsarwire.message import EARLIEST, LATEST, MessageId
from pulsarwire.protocol.batch import COMPRESSION_TYPES
from pulsarwire.protocol.frames import FRAME_SIZE_PADDING
from pulsarwire.protocol.pulsar_api_pb2 import CommandSubscribe, KeySharedMode, ProducerAccessMode
from pulsarwire.routing import HASHING_SCHEMES, ROUTING_MODES, MessageRouter
from pulsarwire.schema import Schema, SchemaInfo

__all__ = ["ClientOptions", "ConsumerOptions", "DeadLetterPolicy", "ProducerOptions", "ReaderOptions"]

CLIENT_VERSION = f"mqwire-pulsar-{__version__}"
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
    raise ConfigurationError(f"option {name} must be one of {', '.join(choices)}, got {value!r}")


def _string_map(name: str, value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise OptionTypeError(f"option {name} must be a mapping of str to str")
    return dict(value)


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
                raise ConfigurationError(f"option dead_letter_policy.{name} must not be blank")

    @classmethod
    def of(cls, value: object) -> DeadLetterPolicy | None:
        """The policy ``value`` stands for: a DeadLetterPolicy as is, a mapping of its fields, or None."""
        if value is None or isinstance(value, DeadLetterPolicy):
            return value
        if isinstance(value, Mapping):
            try:
                return cls(**value)
            except TypeError as exc:
                raise OptionTypeError(f"option dead_letter_policy: {exc}") from None
        kind = type(value).__name__
        raise OptionTypeError(f"option dead_letter_policy must be a DeadLetterPolicy or a mapping, not {kind}")


class ClientOptions(TypedDict, total=False):
    """The options of ``pulsarwire.connect`` and :class:`pulsarwire.Client`, all optional.

    Times are in seconds; the reference clients' names are those of the Java client (and of the Python
    client where it differs).

    - ``operation_timeout`` — seconds each request to the broker may take (lookups, partition metadata,
      creating producers and consumers, closing them), and how long ``start`` and partition lookups go on
      retrying; default 30 (Java ``operationTimeout``, Python ``operation_timeout_seconds``).
    - ``connect_timeout`` — seconds to open a connection: TCP, TLS handshake and CONNECT; default 10
      (Java ``connectionTimeout``, Python ``connection_timeout_ms`` in milliseconds).
    - ``keepalive_interval`` — seconds without anything received from the broker after which a PING is sent;
      the connection is dropped after twice that; default 30 (Java ``keepAliveInterval``).
    - ``max_lookup_redirects`` — how many redirects a topic lookup follows before it fails (0 to 1000);
      default 20 (Java ``maxLookupRedirects``).
    - ``max_message_size`` — bytes, the largest message this client sends or receives: every frame from the
      broker is bounded by it (plus room for its command and metadata) before anything is buffered for it.
      A broker that announces a lower maximum in CONNECTED lowers it for that connection, never raises it;
      1 KiB to just under 2 GiB; default 8 388 608 (8 MiB: Pulsar's default maximum of 5 MiB with room to
      spare). No Java equivalent (the Java client takes the broker's value).
    - ``memory_limit_bytes`` — bytes of received messages the receiver queues of all this client's consumers
      and readers may hold together, counted decompressed (as received when they stay encrypted); while
      they hold more, no consumer grants the broker more permits (FLOW) beyond one message in flight for a
      partition whose queue is empty, and granting resumes as the application takes messages. Permits are
      granted in proportion to the room left and the size of the messages seen, so a queue may overshoot
      by what the permits already granted bring. 0: no limit (permits by ``receiver_queue_size`` only);
      default 67 108 864 (64 MiB, as the Java client's ``memoryLimitBytes``).
    - ``initial_backoff_interval`` — seconds, the first delay before reconnecting a producer or consumer or
      retrying a lookup; later delays double up to ``max_backoff_interval``; default 0.1 (Java
      ``startingBackoffInterval``).
    - ``max_backoff_interval`` — seconds, the longest delay between reconnection attempts, not below
      ``initial_backoff_interval`` (retries within ``operation_timeout`` wait at most 5 s); default 60
      (Java ``maxBackoffInterval``).
    - ``listener_name`` — the broker's advertised listener whose address lookups return; default None, the
      broker's default listener (Java ``listenerName``).
    - ``auth_token`` — token authentication: the token (str), or an async callable returning it, called for
      each new connection, each challenge of the broker and each admin request; default None, no
      authentication (the reference clients' ``AuthenticationToken``). OAuth 2.0 client credentials are
      such a callable: ``auth_token=pulsarwire.OAuth2ClientCredentials(issuer_url, private_key=...)``
      (the reference clients' ``AuthenticationOAuth2``).
    - ``tls_ca_file`` — path of the PEM certificates trusted for the broker's certificate, with
      ``pulsar+ssl://`` only; default None, the system's CAs (Java ``tlsTrustCertsFilePath``, Python
      ``tls_trust_certs_file_path``).
    - ``tls_cert_file`` — path of the client certificate (PEM) for TLS client authentication; default None
      (Java ``tlsCertificateFilePath``, Python ``tls_certificate_file_path``).
    - ``tls_key_file`` — path of the private key of ``tls_cert_file`` when that file lacks it; needs
      ``tls_cert_file``; default None (Java ``tlsKeyFilePath``, Python ``tls_private_key_file_path``).
    - ``tls_validate_hostname`` — check that the broker's certificate names the host connected to; default
      True, where the reference clients default to False (Java ``enableTlsHostnameVerification``).
    - ``tls_allow_insecure_connection`` — accept any broker certificate without verifying it; default False
      (Java ``allowTlsInsecureConnection``).
    - ``tls_authentication`` — authenticate with the client certificate ``tls_cert_file`` (or the one in
      ``ssl_context``): the broker's TLS authentication provider takes the role from it (auth method
      ``tls``); excludes ``auth_token``; default False (the reference clients' ``AuthenticationTls``).
    - ``ssl_context`` — a ready ``ssl.SSLContext`` for ``pulsar+ssl://`` connections, used instead of the
      ``tls_`` options above (they are then ignored); an error with ``pulsar://``, which would connect in
      clear; default None.
    - ``client_version`` — the client version sent to the broker in CONNECT (shown in its statistics);
      default ``"mqwire-pulsar-"`` followed by ``mqwire.__version__``.
    - ``admin_url`` — the broker's admin REST API (``http://host:8080`` or ``https://``) that
      ``client.admin()`` uses; default None, ``client.admin()`` then needs it (Java admin's
      ``serviceHttpUrl``, pulsar-admin's ``--admin-url``).
    - ``admin_timeout`` — seconds each admin request may take; default 30.
    - ``admin_allow_insecure_http`` — let ``client.admin()`` send the token to an ``http://`` admin URL although
      the brokers are reached over TLS (``pulsar+ssl://``); default False: that is a ConfigurationError.
    """

    operation_timeout: float
    connect_timeout: float
    keepalive_interval: float
    max_lookup_redirects: int
    max_message_size: int
    memory_limit_bytes: int
    initial_backoff_interval: float
    max_backoff_interval: float
    listener_name: str | None
    auth_token: str | Callable[[], Awaitable[str]] | None
    tls_ca_file: str | None
    tls_cert_file: str | None
    tls_key_file: str | None
    tls_validate_hostname: bool
    tls_allow_insecure_connection: bool
    tls_authentication: bool
    ssl_context: ssl.SSLContext | None
    client_version: str
    admin_url: str | None
    admin_timeout: float
    admin_allow_insecure_http: bool


def _auth_token(name: str, value: object) -> object:
    # A token, or an async callable returning one for each connection, challenge and admin request.
    return value if value is None or callable(value) else check_str(name, value)


@options_of(ClientOptions)
@dataclass(frozen=True)
class ClientConfig:
    """The checked options of a client (times in seconds, as given). The checks that need the URL (TLS
    options with ``pulsar://``, the admin URL's scheme) are the session's."""

    operation_timeout: float = option(30.0, check_positive)
    connect_timeout: float = option(10.0, check_positive)
    keepalive_interval: float = option(30.0, check_positive)
    max_lookup_redirects: int = option(20, int_range(0, 1000))
    max_message_size: int = option(DEFAULT_MAX_MESSAGE_SIZE, int_range(1024, (1 << 31) - 1 - FRAME_SIZE_PADDING))
    memory_limit_bytes: int = option(DEFAULT_MEMORY_LIMIT, int_range(0, 1 << 62))
    initial_backoff_interval: float = option(0.1, check_positive)
    max_backoff_interval: float = option(60.0, check_positive)
    listener_name: str | None = option(None, or_none(check_str))
    auth_token: str | Callable[[], Awaitable[str]] | None = option(None, _auth_token)
    tls_ca_file: str | None = option(None)
    tls_cert_file: str | None = option(None)
    tls_key_file: str | None = option(None)
    tls_validate_hostname: bool = option(True, check_bool)
    tls_allow_insecure_connection: bool = option(False, check_bool)
    tls_authentication: bool = option(False, check_bool)
    ssl_context: ssl.SSLContext | None = option(None, or_none(instance_of(ssl.SSLContext, "an ssl.SSLContext")))
    client_version: str = option(CLIENT_VERSION, check_str)
    admin_url: str | None = option(None, or_none(check_str))
    admin_timeout: float = option(30.0, check_positive)
    admin_allow_insecure_http: bool = option(False, check_bool)

    def __post_init__(self) -> None:
        if self.max_backoff_interval < self.initial_backoff_interval:
            raise ConfigurationError("option max_backoff_interval must not be below initial_backoff_interval")
        if self.tls_authentication and self.auth_token is not None:
            raise ConfigurationError("options auth_token and tls_authentication exclude each other")


class ProducerOptions(TypedDict, total=False):
    """The options of ``client.producer`` (see :class:`pulsarwire.Producer`), all optional.

    Sizes are in bytes and times in milliseconds, as the ``_ms`` suffixes say; the reference clients' names are
    those of the Java client (and of the Python client where it differs). Limits apply per partition.

    - ``key_serializer`` — a callable turning each message key into bytes; default None: keys must be bytes
      (or None).
    - ``value_serializer`` — a callable turning each value into bytes; default None: values must be bytes
      (or None, a null value).
    - ``schema`` — a :class:`pulsarwire.schema.Schema` the producer declares: the broker registers it (or
      refuses it as incompatible with IncompatibleSchemaError at creation) and values are encoded by it, so
      it replaces ``value_serializer``; default None: no schema (Java ``Schema``, Python ``schema``).
    - ``producer_name`` — the producer's name on the broker, unique on the topic (the broker deduplicates by
      name and sequence id); default None: the broker assigns one (Java ``producerName``).
    - ``initial_sequence_id`` — the sequence id before the first message (which gets this plus one), -1 or
      more; default None: go on after the last sequence id the broker has stored for this producer name
      (Java ``initialSequenceId``).
    - ``send_timeout_ms`` — milliseconds within which the broker must confirm a message, else it and the
      messages behind it fail with SendTimeoutError; also bounds the wait of ``close``; 0 waits forever;
      default 30000 (Java ``sendTimeout``, Python ``send_timeout_millis``).
    - ``compression`` — the name the other two packages use for ``compression_type``; give one of the two.
    - ``compression_type`` — the codec of batches and messages: ``"NONE"``, ``"LZ4"``, ``"ZLIB"``,
      ``"ZSTD"`` or ``"SNAPPY"`` (any case); default ``"NONE"`` (Java ``compressionType``).
    - ``max_pending_messages`` — how many messages of a partition may await the broker's confirmation;
      default 1000 (Java ``maxPendingMessages``).
    - ``block_if_queue_full`` — when ``max_pending_messages`` await confirmation, True: ``send`` and
      ``enqueue`` wait for room; False: they raise ProducerQueueIsFullError; default True, where the
      reference clients default to False (Java ``blockIfQueueFull``).
    - ``batching_enabled`` — gather messages into batches, one broker entry each (messages with
      ``deliver_at`` or ``deliver_after`` always go alone); default True (Java ``enableBatching``).
    - ``batching_max_messages`` — messages in a batch at most; default 1000 (Java ``batchingMaxMessages``).
    - ``batching_max_allowed_size_in_bytes`` — bytes in a batch at most; default 131072, 128 KiB (Java
      ``batchingMaxBytes``).
    - ``batching_max_publish_delay_ms`` — milliseconds a batch waits for more messages before it is sent;
      also how long round-robin routing stays on one partition; default 10 (Java
      ``batchingMaxPublishDelay``).
    - ``chunking_enabled`` — send a message larger than the broker's maximum message size (5 MiB unless the
      broker says otherwise) as chunks that the consumer joins; needs ``batching_enabled=False``; default
      False (Java ``enableChunking``).
    - ``chunk_max_message_size`` — bytes in each chunk, at most the broker's maximum less 1 KiB; with
      chunking, a message larger than this goes in chunks even when the broker would take it whole, as in
      the Java client; default None: that maximum (Java ``chunkMaxMessageSize``).
    - ``encryption_keys`` — names of the public keys to encrypt every message for (end-to-end encryption, as
      the Java client does it: AES-256-GCM, the data key under RSA-OAEP); needs ``crypto_key_reader``; not
      with chunking; default None (Java ``addEncryptionKey``, Python ``encryption_key``).
    - ``crypto_key_reader`` — a :class:`pulsarwire.CryptoKeyReader` giving the PEM keys by name; default
      None (Java ``cryptoKeyReader``).
    - ``crypto_failure_action`` — when a message cannot be encrypted: ``"FAIL"`` its send or ``"SEND"`` it
      unencrypted; default ``"FAIL"`` (Java ``cryptoFailureAction``).
    - ``hashing_scheme`` — how a keyed message picks its partition: ``"java_string_hash"`` (Java's
      ``String.hashCode``) or ``"murmur3_32"``; default ``"java_string_hash"``, the Java client's default
      (Java ``hashingScheme``).
    - ``message_routing_mode`` — where messages without a key go: ``"round_robin"`` (over the partitions,
      moving on once per batching delay when batching) or ``"single_partition"`` (one partition chosen at
      random per producer); default ``"round_robin"`` (Java ``messageRoutingMode``).
    - ``message_router`` — a callable ``(partition_key, partitions) -> partition`` that chooses the
      partition of every message, keyed or not, instead of the two options above; default None (Java
      ``messageRouter``).
    - ``access_mode`` — ``"Shared"``, ``"Exclusive"`` or ``"ExclusiveWithFencing"`` (any case): whether
      other producers may publish to the topic meanwhile; default ``"Shared"`` (Java ``accessMode``).
    - ``properties`` — a mapping of str to str, the producer's metadata shown in the topic's statistics;
      default None (Java ``properties``).
    - ``batcher_builder`` — ``"default"``, or ``"key_based"``: one batch per key (the ordering key, else the
      partition key), for Key_Shared subscriptions; default ``"default"`` (Java ``batcherBuilder``, Python
      ``batching_type``).
    - ``initial_subscription_name`` — a subscription the broker creates on the topic with the producer, so
      that messages are kept before anyone subscribes; default None (Java ``initialSubscriptionName``).
    - ``auto_update_partitions`` — look for partitions added to the topic; new ones get a producer and take
      part in routing; default True (Java ``autoUpdatePartitions``).
    - ``auto_update_partitions_interval_ms`` — milliseconds between those looks; default 60000 (Java
      ``autoUpdatePartitionsInterval``).
    """

    key_serializer: Serializer | None
    value_serializer: Serializer | None
    schema: Schema[Any] | None
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
    encryption_keys: Sequence[str] | None
    crypto_key_reader: CryptoKeyReader | None
    crypto_failure_action: str
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


class ConsumerOptions(TypedDict, total=False):
    """The options of ``client.consumer`` (see :class:`pulsarwire.Consumer`); ``group`` is required.

    Times are in milliseconds, as the ``_ms`` suffixes say; the reference clients' names are those of the
    Java client (and of the Python client where it differs).

    - ``group`` — the subscription name, under the name the other two packages use; required, unless
      ``subscription`` is given.
    - ``subscription`` — the same as ``group``, under the reference clients' name (Java
      ``subscriptionName``, Python ``subscription_name``); give one of the two (or both alike).
    - ``start`` — where a new subscription begins: ``"latest"`` or ``"earliest"`` (any case); an existing
      subscription keeps its position; default ``"latest"`` (Java ``subscriptionInitialPosition``, Python
      ``initial_position``).
    - ``key_deserializer`` — a callable applied to each message's key bytes as it is delivered; one that
      raises makes ``receive`` and ``getmany`` raise DeserializationError for that message until
      ``skip(error.message)``; default None: keys stay bytes.
    - ``value_deserializer`` — the same for each message's value; default None: values stay bytes.
    - ``schema`` — a :class:`pulsarwire.schema.Schema` the consumer subscribes with: the broker checks it
      against the topic's schema (IncompatibleSchemaError when they do not fit) and values are decoded by
      it, so it replaces ``value_deserializer``; default None (Java ``Schema``, Python ``schema``).
    - ``subscription_type`` — ``"Exclusive"``, ``"Shared"``, ``"Failover"`` or ``"Key_Shared"`` (any case);
      default ``"Exclusive"`` (Java ``subscriptionType``, Python ``consumer_type``).
    - ``receiver_queue_size`` — messages each partition may deliver ahead of the application (1 to 2**24);
      on a partitioned topic at most ``max_total_receiver_queue_size_across_partitions`` divided by the
      partition count; default 1000 (Java ``receiverQueueSize``).
    - ``max_total_receiver_queue_size_across_partitions`` — the bound on those queues summed over the
      partitions of a topic (1 to 2**30); default 50000 (Java
      ``maxTotalReceiverQueueSizeAcrossPartitions``).
    - ``consumer_name`` — the consumer's name, shown in the subscription's statistics; default None: the
      broker assigns one (Java ``consumerName``).
    - ``ack_group_time_ms`` — milliseconds acknowledgements are gathered before they leave together;
      0 sends each at once; default 100 (Java ``acknowledgmentGroupTime``).
    - ``ack_group_max_size`` — gathered acknowledgements that make them leave at once (1 to 2**20); default
      1000 (Java ``maxAcknowledgmentGroupSize``).
    - ``negative_ack_redelivery_delay_ms`` — milliseconds after ``negative_ack`` before the message comes
      again; default 60000 (Java ``negativeAckRedeliveryDelay``).
    - ``read_compacted`` — read the compacted topic (the latest message of each key) where it is
      compacted; Exclusive and Failover subscriptions only; default False (Java ``readCompacted``, Python
      ``is_read_compacted``).
    - ``properties`` — a mapping of str to str, the consumer's metadata shown in the topic's statistics;
      default None (Java ``properties``).
    - ``subscription_properties`` — a mapping of str to str stored with the subscription when it is
      created; default None (Java ``subscriptionProperties``).
    - ``priority_level`` — on Shared subscriptions the broker dispatches to the consumers of the lowest
      level first (0 to 2**31 - 1); default None: the broker's 0, the highest priority (Java
      ``priorityLevel``).
    - ``key_shared_mode`` — on Key_Shared subscriptions: ``"auto_split"`` (the broker shares the key hash
      range among the consumers) or ``"sticky"`` (hash ranges the consumer declares; this client declares
      none); default ``"auto_split"`` (Java ``keySharedPolicy``).
    - ``replicate_subscription_state`` — with geo-replication, replicate the subscription's position to
      the other clusters; default False (Java ``replicateSubscriptionState``).
    - ``ack_timeout_ms`` — milliseconds after which a message handed out and not acknowledged comes again;
      0 turns it off, else at least 100; default 0 (Java ``ackTimeout``, Python
      ``unacked_messages_timeout_ms``).
    - ``batch_index_ack_enabled`` — acknowledgements of single messages of a batch reach the broker, so
      that a redelivery leaves them out (the broker needs ``acknowledgmentAtBatchIndexLevelEnabled``);
      default False (Java ``enableBatchIndexAcknowledgment``).
    - ``dead_letter_policy`` — a :class:`pulsarwire.DeadLetterPolicy` or a mapping of its fields: a message
      redelivered ``max_redeliver_count`` times goes to the dead-letter topic at its next redelivery;
      Shared and Key_Shared subscriptions only; with several topics or a pattern it must name
      ``dead_letter_topic`` (and with ``retry_enable``, ``retry_letter_topic``); default None (Java
      ``deadLetterPolicy``).
    - ``retry_enable`` — also subscribe to the retry topic and allow ``reconsume_later``; needs
      ``dead_letter_policy``; default False (Java ``enableRetry``).
    - ``pattern_auto_discovery_period_ms`` — with a pattern of topics, milliseconds between looks for new
      and deleted matching topics (besides the changes brokers push); default 60000 (Java
      ``patternAutoDiscoveryPeriod``, Python ``pattern_auto_discovery_period`` in seconds).
    - ``auto_update_partitions`` — look for partitions added to the topics; new ones are subscribed too;
      default True (Java ``autoUpdatePartitions``).
    - ``auto_update_partitions_interval_ms`` — milliseconds between those looks; default 60000 (Java
      ``autoUpdatePartitionsInterval``).
    - ``crypto_key_reader`` — a :class:`pulsarwire.CryptoKeyReader` giving the private keys that decrypt
      encrypted messages; default None (Java ``cryptoKeyReader``).
    - ``crypto_failure_action`` — what happens to a message that cannot be decrypted: ``"FAIL"`` (it is
      not delivered and stays unacknowledged; it comes again after a reconnection or redelivery),
      ``"DISCARD"`` (it is acknowledged and dropped) or ``"CONSUME"`` (delivered still encrypted and
      compressed, a batch as one message, with ``message.encrypted`` True); default ``"FAIL"`` (Java
      ``cryptoFailureAction``).
    """

    group: str | None
    subscription: str | None
    start: Literal["latest", "earliest"]
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    schema: Schema[Any] | None
    subscription_type: str
    receiver_queue_size: int
    crypto_key_reader: CryptoKeyReader | None
    crypto_failure_action: str
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


class ReaderOptions(TypedDict, total=False):
    """The options of ``client.reader`` (see :class:`pulsarwire.Reader`), all optional.

    The reference clients' names are those of the Java client (and of the Python client where it differs).

    - ``start`` — where reading begins: ``"latest"``, ``"earliest"`` (any case) or a
      :class:`pulsarwire.MessageId` (a send ``Receipt`` too; topics without partitions only); default
      ``"latest"`` (Java ``startMessageId``, Python ``start_message_id``).
    - ``start_inclusive`` — with a message id as ``start``, deliver that message too; default False (Java
      ``startMessageIdInclusive``, Python ``start_message_id_inclusive``).
    - ``receiver_queue_size`` — messages each partition may deliver ahead of the application (1 to 2**24);
      default 1000 (Java ``receiverQueueSize``).
    - ``reader_name`` — the reader's consumer name, shown in the topic's statistics; default None: the
      broker assigns one (Java ``readerName``).
    - ``subscription_role_prefix`` — the start of the name of the reader's non-durable subscription
      (followed by a dash and ten random hex digits); default ``"reader"`` (Java
      ``subscriptionRolePrefix``).
    - ``read_compacted`` — read the compacted topic (the latest message of each key) where it is
      compacted; default False (Java ``readCompacted``, Python ``is_read_compacted``).
    - ``key_deserializer`` — a callable applied to each message's key bytes, as for consumers; default None:
      keys stay bytes.
    - ``value_deserializer`` — the same for each message's value; default None: values stay bytes.
    - ``schema`` — a :class:`pulsarwire.schema.Schema` the reader subscribes with: the broker checks it
      against the topic's schema (IncompatibleSchemaError when they do not fit) and values are decoded by
      it, so it replaces ``value_deserializer``; default None (Java ``Schema``, Python ``schema``).
    - ``crypto_key_reader`` — a :class:`pulsarwire.CryptoKeyReader` giving the private keys that decrypt
      encrypted messages; default None (Java ``cryptoKeyReader``).
    - ``crypto_failure_action`` — what happens to a message that cannot be decrypted: ``"FAIL"`` (it is
      not delivered and stays unacknowledged; it comes again after a reconnection or redelivery),
      ``"DISCARD"`` (it is acknowledged and dropped) or ``"CONSUME"`` (delivered still encrypted and
      compressed, a batch as one message, with ``message.encrypted`` True); default ``"FAIL"`` (Java
      ``cryptoFailureAction``).
    """

    start: Literal["latest", "earliest"] | MessageId
    start_inclusive: bool
    receiver_queue_size: int
    reader_name: str | None
    subscription_role_prefix: str
    read_compacted: bool
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    schema: Schema[Any] | None
    crypto_key_reader: CryptoKeyReader | None
    crypto_failure_action: str


def _reader_start(name: str, value: object) -> MessageId:
    if isinstance(value, MessageId):
        return MessageId(*value)
    if isinstance(value, str) and value.lower() in ("earliest", "latest"):
        return EARLIEST if value.lower() == "earliest" else LATEST
    raise ConfigurationError(f"option {name} must be 'earliest', 'latest' or a MessageId, got {value!r}")


def _crypto_failure_action(*choices: str) -> Check:
    return lambda name, value: check_choice(name, str(value).upper(), choices)


@options_of(ReaderOptions)
@dataclass(frozen=True)
class ReaderConfig:
    """The checked options of a reader; ``start`` is held as a MessageId (EARLIEST and LATEST included)."""

    start: MessageId = option("latest", _reader_start)
    start_inclusive: bool = option(False, check_bool)
    receiver_queue_size: int = option(1000, int_range(1, 1 << 24))
    reader_name: str | None = option(None, or_none(check_str))
    subscription_role_prefix: str = option("reader", check_str)
    read_compacted: bool = option(False, check_bool)
    key_deserializer: Deserializer | None = option(None)
    value_deserializer: Deserializer | None = option(None)
    schema: Schema[Any] | None = option(None)
    crypto_key_reader: CryptoKeyReader | None = option(None, lambda name, value: _key_reader(value))
    crypto_failure_action: str = option("FAIL", _crypto_failure_action("FAIL", "DISCARD", "CONSUME"))

    def __post_init__(self) -> None:
        check_schema(self.schema, "value_deserializer", self.value_deserializer)


def check_schema(schema: object, serde_option: str, serde: object) -> Schema[Any] | None:
    """Validate option ``schema``: a Schema, and not given together with the serializer it replaces."""
    if schema is None:
        return None
    if not isinstance(schema, Schema):
        raise OptionTypeError(f"option schema must be a pulsarwire.schema.Schema, not {type(schema).__name__}")
    if serde is not None:
        raise ConfigurationError(f"give option schema or {serde_option}, not both: the schema encodes the values")
    return schema


def _compression_name(name: str, value: object) -> str | None:
    return None if value is None else _choice_ignoring_case(name, value, COMPRESSION_TYPES)[0]


def _router(name: str, value: object) -> object:
    if value is not None and not callable(value):
        raise OptionTypeError(f"option {name} must be callable (partition_key, partitions) -> partition")
    return value


def _encryption_keys(name: str, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise OptionTypeError(f"option {name} must be a list of key names")
    names = tuple(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise OptionTypeError(f"option {name} must be a list of key names")
    return names


def _schema(name: str, value: object) -> Schema[Any] | None:
    if value is not None and not isinstance(value, Schema):
        raise OptionTypeError(f"option {name} must be a pulsarwire.schema.Schema, not {type(value).__name__}")
    return value


_INITIAL_SEQUENCE_ID = int_range(-1, 2**63 - 1)


@options_of(ProducerOptions)
@dataclass(frozen=True)
class ProducerConfig:
    """The checked options of a producer (times in seconds; ``compression`` the codec's number and
    ``compression_type`` its name, from whichever of the two options was given)."""

    key_serializer: Serializer | None = option(None, callable_or_none)
    value_serializer: Serializer | None = option(None, callable_or_none)
    schema: Schema[Any] | None = option(None, _schema)
    producer_name: str | None = option(None, or_none(check_str))
    initial_sequence_id: int | None = option(None, or_none(_INITIAL_SEQUENCE_ID))
    send_timeout: float = option(30_000, check_non_negative, name="send_timeout_ms", unit="ms")
    compression_option: str | None = option(None, _compression_name, name="compression")
    compression_type_option: str | None = option(None, _compression_name, name="compression_type")
    max_pending_messages: int = option(1000, int_range(1, _INT32_MAX))
    block_if_queue_full: bool = option(True, check_bool)
    batching_enabled: bool = option(True, check_bool)
    batching_max_messages: int = option(1000, int_range(1, _INT32_MAX))
    batching_max_allowed_size_in_bytes: int = option(128 * 1024, int_range(1, _INT32_MAX))
    batching_max_publish_delay: float = option(
        10, check_non_negative, name="batching_max_publish_delay_ms", unit="ms"
    )
    chunking_enabled: bool = option(False, check_bool)
    chunk_max_message_size: int | None = option(None, or_none(int_range(1, _INT32_MAX)))
    hashing_scheme: str = option("java_string_hash", one_of(*HASHING_SCHEMES))
    message_routing_mode: str = option("round_robin", one_of(*ROUTING_MODES))
    message_router: MessageRouter | None = option(None, _router)
    access_mode: int = option("Shared", lambda name, value: _choice_ignoring_case(name, value, ACCESS_MODES)[1])
    properties: Mapping[str, str] = option(None, _string_map)
    batcher_builder: str = option("default", one_of(*BATCHER_BUILDERS))
    initial_subscription_name: str | None = option(None, or_none(check_str))
    auto_update_partitions: bool = option(True, check_bool)
    auto_update_partitions_interval: float = option(
        60_000, check_positive, name="auto_update_partitions_interval_ms", unit="ms"
    )
    encryption_keys: tuple[str, ...] = option(None, _encryption_keys)
    crypto_key_reader: CryptoKeyReader | None = option(None, lambda name, value: _key_reader(value))
    crypto_failure_action: str = option("FAIL", _crypto_failure_action("FAIL", "SEND"))

    def __post_init__(self) -> None:
        check_schema(self.schema, "value_serializer", self.value_serializer)
        if self.compression_option is not None and self.compression_type_option is not None:
            raise ConfigurationError("give compression or compression_type, not both")
        if self.chunking_enabled and self.batching_enabled:
            raise ConfigurationError("options chunking_enabled and batching_enabled cannot both be on")
        if self.encryption_keys and self.crypto_key_reader is None:
            raise ConfigurationError("option encryption_keys needs option crypto_key_reader")
        if self.chunking_enabled and self.encryption_keys:
            raise ConfigurationError("options chunking_enabled and encryption_keys cannot both be on")

    @classmethod
    def build(cls, options: Mapping[str, object]) -> ProducerConfig:
        """Check ``options`` (keyword arguments of ``client.producer``): an UnknownOptionError for a name
        ProducerOptions does not declare, a ConfigurationError for a wrong value."""
        return build_config(cls, "producer", options)

    @property
    def compression_type(self) -> str:
        """The codec's name: ``compression`` is the name the other two packages use, ``compression_type``
        the Pulsar clients' one."""
        return self.compression_option or self.compression_type_option or "NONE"

    @property
    def compression(self) -> int:
        """The codec's number in the protocol."""
        return COMPRESSION_TYPES[self.compression_type]

    @property
    def key_based_batching(self) -> bool:
        """One batch per key (``batcher_builder="key_based"``)."""
        return self.batcher_builder == "key_based"

    @property
    def schema_info(self) -> SchemaInfo | None:
        """What the broker is told of the schema."""
        return None if self.schema is None else self.schema.info


def _key_reader(reader: object) -> CryptoKeyReader | None:
    if reader is not None and not isinstance(reader, CryptoKeyReader):
        kind = type(reader).__name__
        raise OptionTypeError(f"option crypto_key_reader must be a pulsarwire.CryptoKeyReader, not {kind}")
    return reader


def _subscription_type(name: str, value: object) -> tuple[str, int]:
    return _choice_ignoring_case(name, value, SUBSCRIPTION_TYPES)


@options_of(ConsumerOptions)
@dataclass(frozen=True)
class ConsumerConfig:
    """The checked options of a consumer (times in seconds; ``subscription`` from ``group`` or
    ``subscription``, whichever was given)."""

    group: str | None = option(None, or_none(check_str))
    subscription_option: str | None = option(None, or_none(check_str), name="subscription")
    initial_position: int = option(
        "latest", lambda name, value: _choice_ignoring_case(name, value, INITIAL_POSITIONS)[1], name="start"
    )
    key_deserializer: Deserializer | None = option(None, callable_or_none)
    value_deserializer: Deserializer | None = option(None, callable_or_none)
    schema: Schema[Any] | None = option(None, _schema)
    subscription_type_choice: tuple[str, int] = option("Exclusive", _subscription_type, name="subscription_type")
    receiver_queue_size: int = option(1000, int_range(1, 1 << 24))
    max_total_receiver_queue_size_across_partitions: int = option(50_000, int_range(1, 1 << 30))
    consumer_name: str | None = option(None, or_none(check_str))
    ack_group_time: float = option(100, check_non_negative, name="ack_group_time_ms", unit="ms")
    ack_group_max_size: int = option(1000, int_range(1, 1 << 20))
    negative_ack_redelivery_delay: float = option(
        60_000, check_non_negative, name="negative_ack_redelivery_delay_ms", unit="ms"
    )
    read_compacted: bool = option(False, check_bool)
    properties: Mapping[str, str] = option(None, _string_map)
    subscription_properties: Mapping[str, str] = option(None, _string_map)
    priority_level: int | None = option(None, or_none(int_range(0, _INT32_MAX)))
    key_shared_mode: int = option(
        "auto_split", lambda name, value: _choice_ignoring_case(name, value, KEY_SHARED_MODES)[1]
    )
    replicate_subscription_state: bool = option(False, check_bool)
    ack_timeout: float = option(0, check_non_negative, name="ack_timeout_ms", unit="ms")
    batch_index_ack_enabled: bool = option(False, check_bool)
    dead_letter_policy: DeadLetterPolicy | None = option(None, lambda name, value: DeadLetterPolicy.of(value))
    retry_enable: bool = option(False, check_bool)
    pattern_auto_discovery_period: float = option(
        60_000, check_positive, name="pattern_auto_discovery_period_ms", unit="ms"
    )
    auto_update_partitions: bool = option(True, check_bool)
    auto_update_partitions_interval: float = option(
        60_000, check_positive, name="auto_update_partitions_interval_ms", unit="ms"
    )
    crypto_key_reader: CryptoKeyReader | None = option(None, lambda name, value: _key_reader(value))
    crypto_failure_action: str = option("FAIL", _crypto_failure_action("FAIL", "DISCARD", "CONSUME"))

    def __post_init__(self) -> None:
        check_schema(self.schema, "value_deserializer", self.value_deserializer)
        group, subscription = self.group, self.subscription_option
        if group is not None and subscription is not None and group != subscription:
            raise ConfigurationError("options group and subscription name the same thing; give one of them")
        if group is None and subscription is None:
            raise OptionTypeError("a consumer needs option group (or subscription): the subscription name")
        if not self.subscription.strip():
            raise ConfigurationError("option group must not be blank")
        if 0 < self.ack_timeout < _MIN_ACK_TIMEOUT:
            raise ConfigurationError(f"option ack_timeout_ms must be 0 (off) or at least {_MIN_ACK_TIMEOUT * 1000:g}")
        if self.retry_enable and self.dead_letter_policy is None:
            raise ConfigurationError(
                "option retry_enable needs a dead_letter_policy (its max_redeliver_count bounds retries)"
            )
        if self.read_compacted and self.subscription_type in (CommandSubscribe.Shared, CommandSubscribe.Key_Shared):
            raise ConfigurationError("option read_compacted works with Exclusive and Failover subscriptions only")

    @classmethod
    def build(cls, options: Mapping[str, object], what: str = "consumer") -> ConsumerConfig:
        """Check ``options`` (keyword arguments of ``client.consumer``): an UnknownOptionError for a name
        ConsumerOptions does not declare, a ConfigurationError for a wrong value."""
        return build_config(cls, what, options)

    @property
    def subscription(self) -> str:
        """The subscription's name."""
        name = self.subscription_option if self.subscription_option is not None else self.group
        return name or ""

    @property
    def subscription_type(self) -> int:
        """The subscription type's number in the protocol."""
        return self.subscription_type_choice[1]

    @property
    def subscription_type_name(self) -> str:
        """The subscription type's name (``"Exclusive"``, ``"Shared"``, ...)."""
        return self.subscription_type_choice[0]

    @property
    def schema_info(self) -> SchemaInfo | None:
        """What the broker is told of the schema."""
        return None if self.schema is None else self.schema.info
