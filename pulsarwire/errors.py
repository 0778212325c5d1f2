"""Errors of the Pulsar client: the shared hierarchy, one named exception per broker ``ServerError``, the
errors the client raises on its own, without a broker error code behind them, and those of the admin API,
encryption, transactions and schemas.

Whether a code is retriable follows the reference clients: a later attempt, usually after a fresh lookup,
can succeed for a broker that is not ready, overloaded or briefly without metadata; it cannot for refused
credentials, missing topics or a fenced producer.
"""

from __future__ import annotations

from mqwire.common.errors import *  # noqa: F403 - the shared hierarchy, re-exported whole
from mqwire.common.errors import (
    AuthenticationError,
    BrokerError,
    ClosedError,
    ErrorCodes,
    FatalBrokerError,
    FatalError,
    MqwireError,
    RequestTimeoutError,
    RetriableBrokerError,
    RetriableError,
    UnsupportedVersionError,
)
from mqwire.common.errors import __all__ as __all__  # the hierarchy's names, extended below


class UnknownServerError(RetriableBrokerError):
    """ServerError 0, or a code newer than this client knows."""


class MetadataError(RetriableBrokerError):
    """The broker could not read or write its metadata store."""


class PersistenceError(RetriableBrokerError):
    """The broker could not read or write BookKeeper."""


class BrokerAuthenticationError(FatalBrokerError, AuthenticationError):
    """The broker refused the credentials."""


class AuthorizationError(FatalBrokerError):
    """The credentials are valid but lack permission for this topic or operation."""


class ConsumerBusyError(FatalBrokerError):
    """Another consumer holds the exclusive subscription."""


class ServiceNotReadyError(RetriableBrokerError):
    """The broker does not serve the topic right now; look it up again and retry."""


class ProducerBlockedQuotaExceededError(RetriableBrokerError):
    """The backlog quota is exceeded under the hold policy: the producer waits until space frees up."""


class ProducerBlockedQuotaExceededFatalError(FatalBrokerError):
    """The backlog quota is exceeded under the exception policy: producing fails."""


class ServerChecksumError(RetriableBrokerError):
    """The broker found a checksum mismatch in a sent message; sending it again can succeed."""


class BrokerUnsupportedVersionError(FatalBrokerError, UnsupportedVersionError):
    """The broker needs a feature this client's protocol version lacks."""


class TopicNotFoundError(FatalBrokerError):
    """The topic does not exist and is not auto-created."""


class SubscriptionNotFoundError(FatalBrokerError):
    """The subscription does not exist."""


class ConsumerNotFoundError(RetriableBrokerError):
    """The broker does not know this consumer id (typically after a reconnection); subscribe again."""


class TooManyRequestsError(RetriableBrokerError):
    """The broker is throttling lookups or other requests."""


class TopicTerminatedError(FatalBrokerError):
    """The topic was terminated and accepts no more messages."""


class ProducerBusyError(FatalBrokerError):
    """A producer of the same name is already connected (or an exclusive producer is)."""


class InvalidTopicNameError(FatalBrokerError):
    """The topic name is not valid."""


class IncompatibleSchemaError(FatalBrokerError):
    """The schema is incompatible with the topic's schema."""


class ConsumerAssignError(FatalBrokerError):
    """The dispatcher could not assign this consumer (Key_Shared range conflicts and the like)."""


class TransactionCoordinatorNotFoundError(RetriableBrokerError):
    """No transaction coordinator serves this id yet."""


class InvalidTxnStatusError(FatalBrokerError):
    """The transaction is not in a state that allows the operation."""


class NotAllowedError(FatalBrokerError):
    """The operation is not allowed (for example by broker configuration)."""


class TransactionConflictError(FatalBrokerError):
    """An acknowledgement conflicts with another transaction."""


class TransactionNotFoundError(FatalBrokerError):
    """The transaction does not exist (or has timed out)."""


class ProducerFencedError(FatalBrokerError):
    """An exclusive producer took over the topic; this producer must be closed."""


class SendTimeoutError(RequestTimeoutError):
    """The broker did not confirm a message within ``send_timeout_ms``."""


class ProducerQueueIsFullError(RetriableError):
    """``max_pending_messages`` messages are waiting and ``block_if_queue_full`` is off."""


class MessageTooBigError(FatalError, ValueError):
    """A message exceeds the broker's maximum message size and chunking is off."""


class TooManyRedirectsError(RetriableError):
    """A topic lookup was redirected more often than the limit."""


class LookupFailedError(RetriableError):
    """A lookup answered neither a broker nor a known error."""


class ProducerClosedError(ClosedError):
    """The producer is closed."""


class ConsumerClosedError(ClosedError):
    """The consumer (or reader) is closed."""


class AdminError(FatalBrokerError):
    """The admin API refused a request; ``code`` is the HTTP status."""


class RetriableAdminError(RetriableBrokerError):
    """The admin API answered a status that may pass (5xx, 429); ``code`` is the HTTP status."""


class TopicAlreadyExistsError(AdminError):
    """``create_topic`` on a topic that exists (pass ``exist_ok=True`` to accept it)."""


class CryptoError(MqwireError):
    """A message could not be encrypted or decrypted (a missing or wrong key, a corrupt payload)."""


# Not exported: the consumer catches it and keeps or acknowledges the entry as crypto_failure_action says.
class Undecryptable(CryptoError):
    """An encrypted entry that could not be decrypted, with crypto_failure_action "FAIL" or "DISCARD"."""


class TransactionError(MqwireError):
    """A transaction cannot take more work: it is committed, aborted, or failed."""


class TransactionTimeoutError(TransactionError):
    """The transaction outlived its ``timeout_ms``: the coordinator aborts it, so its sends and acks fail."""


class SchemaMismatchError(FatalError, ValueError):
    """``decode_with``: the writer's schema cannot be resolved to this (the reader's) schema.

    A consumer turns it into a ``SchemaResolutionError`` that carries the message's position."""


_CODES = ErrorCodes(
    {
        0: UnknownServerError,
        1: MetadataError,
        2: PersistenceError,
        3: BrokerAuthenticationError,
        4: AuthorizationError,
        5: ConsumerBusyError,
        6: ServiceNotReadyError,
        7: ProducerBlockedQuotaExceededError,
        8: ProducerBlockedQuotaExceededFatalError,
        9: ServerChecksumError,
        10: BrokerUnsupportedVersionError,
        11: TopicNotFoundError,
        12: SubscriptionNotFoundError,
        13: ConsumerNotFoundError,
        14: TooManyRequestsError,
        15: TopicTerminatedError,
        16: ProducerBusyError,
        17: InvalidTopicNameError,
        18: IncompatibleSchemaError,
        19: ConsumerAssignError,
        20: TransactionCoordinatorNotFoundError,
        21: InvalidTxnStatusError,
        22: NotAllowedError,
        23: TransactionConflictError,
        24: TransactionNotFoundError,
        25: ProducerFencedError,
    },
    unknown=UnknownServerError,
    fallback="Pulsar server error",
)


def error_class(server_error: int) -> type[BrokerError]:
    """The exception class for a ``ServerError`` code (UnknownServerError for codes not listed)."""
    return _CODES.error_class(server_error)


def error_for(server_error: int, message: str) -> BrokerError:
    """The exception for a ``ServerError`` code and the broker's message; ``code`` keeps the number."""
    return _CODES.error_for(server_error, message)


__all__ = [
    *__all__,
    "AdminError",
    "AuthorizationError",
    "BrokerAuthenticationError",
    "BrokerUnsupportedVersionError",
    "ConsumerAssignError",
    "ConsumerBusyError",
    "ConsumerClosedError",
    "ConsumerNotFoundError",
    "CryptoError",
    "IncompatibleSchemaError",
    "InvalidTopicNameError",
    "InvalidTxnStatusError",
    "LookupFailedError",
    "MessageTooBigError",
    "MetadataError",
    "NotAllowedError",
    "PersistenceError",
    "ProducerBlockedQuotaExceededError",
    "ProducerBlockedQuotaExceededFatalError",
    "ProducerBusyError",
    "ProducerClosedError",
    "ProducerFencedError",
    "ProducerQueueIsFullError",
    "RetriableAdminError",
    "SchemaMismatchError",
    "SendTimeoutError",
    "ServerChecksumError",
    "ServiceNotReadyError",
    "SubscriptionNotFoundError",
    "TooManyRedirectsError",
    "TooManyRequestsError",
    "TopicAlreadyExistsError",
    "TopicNotFoundError",
    "TopicTerminatedError",
    "TransactionConflictError",
    "TransactionCoordinatorNotFoundError",
    "TransactionError",
    "TransactionNotFoundError",
    "TransactionTimeoutError",
    "UnknownServerError",
    "error_class",
    "error_for",
]
