"""Kafka's errors: one named exception per broker error code, the client's own errors, and the shared hierarchy.

The broker error classes are made at import from ``kafkawire.error_table``, the one table of Kafka's codes
(code, Kafka's name, class name, retriable, refresh-metadata, description); that table is checked against
Kafka's own list by tests/test_kafka_error_table.py. Each class is a plain subclass: ``__module__`` is this
module, its docstring the row's description, and it pickles by name like a class written out here. A type
checker does not run the import, so the block under ``TYPE_CHECKING`` declares the same classes; it is
written by ``python kafkawire/error_table.py`` and the same test fails when it no longer matches the table.

Retriable codes (those whose Java exception is a RetriableException) subclass KafkaRetriableError (a
RetriableBrokerError), the rest KafkaFatalError (a FatalBrokerError). ``refresh_metadata`` marks codes after
which the client's view of leaders is stale; ``refresh_coordinator`` marks codes after which the group or
transaction coordinator must be looked up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from kafkawire.error_table import TABLE

# A batch over the consumer's decompression budget: raised by the record decoder, named here with the rest.
from kafkawire.protocol.records import RecordBatchTooLargeError
from mqwire.common.errors import (
    AuthenticationError,
    BrokerError,
    ChecksumError,
    ClosedError,
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    FatalBrokerError,
    FatalError,
    ForkedClientError,
    FrameTooLargeError,
    MqwireError,
    ProtocolError,
    RequestTimeoutError,
    RetriableBrokerError,
    RetriableError,
    UnsupportedVersionError,
    WrongLoopError,
)


class KafkaError(BrokerError):
    """An error code in a Kafka response."""

    error_code: ClassVar[int] = -1
    refresh_metadata: ClassVar[bool] = False
    refresh_coordinator: ClassVar[bool] = False

    def __init__(self, message: str | None = None) -> None:
        name = type(self).__name__
        text = f"{name} (Kafka error {self.error_code})"
        super().__init__(f"{text}: {message}" if message else text, code=self.error_code)
        self._detail = message

    def __reduce__(self) -> tuple[Any, ...]:
        # Built again from the message it was given, not from its formatted text.
        return type(self), (self._detail,), self.__dict__


class KafkaRetriableError(KafkaError, RetriableBrokerError):
    """A Kafka error code that a later attempt may not see."""


# What a group member (or transaction coordinator client) recovers from by finding the coordinator again and
# repeating its request: the connection failed, timed out, or the broker answered with a retriable code.
COORDINATOR_TROUBLE = (ConnectError, ConnectionLostError, RequestTimeoutError, KafkaRetriableError)


class KafkaFatalError(KafkaError, FatalBrokerError):
    """A Kafka error code that retrying will not fix."""


class CommitFailedError(KafkaFatalError):
    """A group member's commit refused because the group has moved on since its records were delivered: it
    rebalanced, or dropped or fenced the member. The partitions may belong to another member now, so the
    offsets are neither committed nor retried; the consumer rejoins by itself, and its next ``commit()`` covers
    what it still owns. aiokafka, kafka-python and the Java client raise an error of this name in the same
    case. Raised as the error of the broker's code: IllegalGenerationError, UnknownMemberIdError,
    RebalanceInProgressError or FencedMemberEpochError (KIP-848)."""


class UnknownKafkaError(KafkaFatalError):
    """A code this client does not know (a newer broker); treated as fatal."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.args = (f"unknown Kafka error {code}" + (f": {message}" if message else ""),)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.code, self._detail), self.__dict__


class DeliveryTimeoutError(RequestTimeoutError):
    """Records were not acknowledged within ``delivery_timeout_ms`` of being buffered."""


class BufferFullError(RequestTimeoutError):
    """The buffer stayed full for ``max_block_ms``: the brokers take records slower than they are produced."""


class AcknowledgementError(FatalError, ValueError):
    """An acknowledgement this consumer refuses; nothing was sent and the record's state is unchanged."""


class AlreadyAcknowledgedError(AcknowledgementError):
    """The delivery was already acknowledged (explicitly, or implicitly accepted by a later poll)."""


class NotAcquiredError(AcknowledgementError):
    """This consumer does not hold the record: another consumer's message, or one delivered again since."""


class AcquisitionLockExpiredError(AcknowledgementError):
    """The record's acquisition lock timed out: the broker may already have given it to another member."""


def _make_classes() -> dict[str, type[KafkaError]]:
    made: dict[str, type[KafkaError]] = {}
    for row in TABLE:
        bases = tuple(globals()[name] for name in row.base_names())
        namespace = {
            "__module__": __name__,
            "__qualname__": row.class_name,
            "__doc__": row.description,
            "error_code": row.code,
            "refresh_metadata": row.refresh_metadata,
            "refresh_coordinator": row.refresh_coordinator,
        }
        made[row.class_name] = type(row.class_name, bases, namespace)
    return made


__all__ = [
    "ERRORS",
    "AcknowledgementError",
    "AcquisitionLockExpiredError",
    "AlreadyAcknowledgedError",
    "AuthenticationError",
    "BrokerError",
    "BufferFullError",
    "ChecksumError",
    "ClosedError",
    "CommitFailedError",
    "ConfigurationError",
    "ConnectError",
    "ConnectionLostError",
    "DeliveryTimeoutError",
    "FatalBrokerError",
    "FatalError",
    "ForkedClientError",
    "FrameTooLargeError",
    "KafkaError",
    "KafkaFatalError",
    "KafkaRetriableError",
    "MqwireError",
    "NotAcquiredError",
    "ProtocolError",
    "RecordBatchTooLargeError",
    "RequestTimeoutError",
    "RetriableBrokerError",
    "RetriableError",
    "UnknownKafkaError",
    "UnsupportedVersionError",
    "WrongLoopError",
    "error_for",
    "raise_for",
]

_CLASSES = _make_classes()

if TYPE_CHECKING:
    # Written by `python kafkawire/error_table.py` from the table; tests/test_kafka_error_table.py checks it.
    # BEGIN DECLARATIONS
    class IllegalGenerationError(CommitFailedError): ...
    class UnknownMemberIdError(CommitFailedError): ...
    class RebalanceInProgressError(CommitFailedError): ...
    class FencedMemberEpochError(CommitFailedError): ...
    class UnknownServerError(KafkaFatalError): ...
    class OffsetOutOfRangeError(KafkaFatalError): ...
    class InvalidFetchSizeError(KafkaFatalError): ...
    class BrokerNotAvailableError(KafkaFatalError): ...
    class MessageTooLargeError(KafkaFatalError): ...
    class StaleControllerEpochError(KafkaFatalError): ...
    class OffsetMetadataTooLargeError(KafkaFatalError): ...
    class InvalidTopicError(KafkaFatalError): ...
    class RecordListTooLargeError(KafkaFatalError): ...
    class InvalidRequiredAcksError(KafkaFatalError): ...
    class InconsistentGroupProtocolError(KafkaFatalError): ...
    class InvalidGroupIdError(KafkaFatalError): ...
    class InvalidSessionTimeoutError(KafkaFatalError): ...
    class InvalidCommitOffsetSizeError(KafkaFatalError): ...
    class TopicAuthorizationFailedError(KafkaFatalError): ...
    class GroupAuthorizationFailedError(KafkaFatalError): ...
    class ClusterAuthorizationFailedError(KafkaFatalError): ...
    class InvalidTimestampError(KafkaFatalError): ...
    class TopicAlreadyExistsError(KafkaFatalError): ...
    class InvalidPartitionsError(KafkaFatalError): ...
    class InvalidReplicationFactorError(KafkaFatalError): ...
    class InvalidReplicaAssignmentError(KafkaFatalError): ...
    class InvalidConfigError(KafkaFatalError): ...
    class InvalidRequestError(KafkaFatalError): ...
    class UnsupportedForMessageFormatError(KafkaFatalError): ...
    class PolicyViolationError(KafkaFatalError): ...
    class OutOfOrderSequenceNumberError(KafkaFatalError): ...
    class DuplicateSequenceNumberError(KafkaFatalError): ...
    class InvalidProducerEpochError(KafkaFatalError): ...
    class InvalidTxnStateError(KafkaFatalError): ...
    class InvalidProducerIdMappingError(KafkaFatalError): ...
    class InvalidTransactionTimeoutError(KafkaFatalError): ...
    class TransactionCoordinatorFencedError(KafkaFatalError): ...
    class TransactionalIdAuthorizationFailedError(KafkaFatalError): ...
    class SecurityDisabledError(KafkaFatalError): ...
    class OperationNotAttemptedError(KafkaFatalError): ...
    class LogDirNotFoundError(KafkaFatalError): ...
    class UnknownProducerIdError(KafkaFatalError): ...
    class ReassignmentInProgressError(KafkaFatalError): ...
    class DelegationTokenAuthDisabledError(KafkaFatalError): ...
    class DelegationTokenNotFoundError(KafkaFatalError): ...
    class DelegationTokenOwnerMismatchError(KafkaFatalError): ...
    class DelegationTokenRequestNotAllowedError(KafkaFatalError): ...
    class DelegationTokenAuthorizationFailedError(KafkaFatalError): ...
    class DelegationTokenExpiredError(KafkaFatalError): ...
    class InvalidPrincipalTypeError(KafkaFatalError): ...
    class NonEmptyGroupError(KafkaFatalError): ...
    class GroupIdNotFoundError(KafkaFatalError): ...
    class TopicDeletionDisabledError(KafkaFatalError): ...
    class UnsupportedCompressionTypeError(KafkaFatalError): ...
    class StaleBrokerEpochError(KafkaFatalError): ...
    class MemberIdRequiredError(KafkaFatalError): ...
    class GroupMaxSizeReachedError(KafkaFatalError): ...
    class FencedInstanceIdError(KafkaFatalError): ...
    class NoReassignmentInProgressError(KafkaFatalError): ...
    class GroupSubscribedToTopicError(KafkaFatalError): ...
    class InvalidRecordError(KafkaFatalError): ...
    class ProducerFencedError(KafkaFatalError): ...
    class ResourceNotFoundError(KafkaFatalError): ...
    class DuplicateResourceError(KafkaFatalError): ...
    class UnacceptableCredentialError(KafkaFatalError): ...
    class InconsistentVoterSetError(KafkaFatalError): ...
    class InvalidUpdateVersionError(KafkaFatalError): ...
    class FeatureUpdateFailedError(KafkaFatalError): ...
    class PrincipalDeserializationFailureError(KafkaFatalError): ...
    class SnapshotNotFoundError(KafkaFatalError): ...
    class PositionOutOfRangeError(KafkaFatalError): ...
    class DuplicateBrokerRegistrationError(KafkaFatalError): ...
    class BrokerIdNotRegisteredError(KafkaFatalError): ...
    class InconsistentClusterIdError(KafkaFatalError): ...
    class TransactionalIdNotFoundError(KafkaFatalError): ...
    class IneligibleReplicaError(KafkaFatalError): ...
    class NewLeaderElectedError(KafkaFatalError): ...
    class OffsetMovedToTieredStorageError(KafkaFatalError): ...
    class UnreleasedInstanceIdError(KafkaFatalError): ...
    class UnsupportedAssignorError(KafkaFatalError): ...
    class StaleMemberEpochError(KafkaFatalError): ...
    class MismatchedEndpointTypeError(KafkaFatalError): ...
    class UnsupportedEndpointTypeError(KafkaFatalError): ...
    class UnknownControllerIdError(KafkaFatalError): ...
    class UnknownSubscriptionIdError(KafkaFatalError): ...
    class TelemetryTooLargeError(KafkaFatalError): ...
    class InvalidRegistrationError(KafkaFatalError): ...
    class TransactionAbortableError(KafkaFatalError): ...
    class InvalidRecordStateError(KafkaFatalError): ...
    class FencedStateEpochError(KafkaFatalError): ...
    class InvalidVoterKeyError(KafkaFatalError): ...
    class DuplicateVoterError(KafkaFatalError): ...
    class VoterNotFoundError(KafkaFatalError): ...
    class InvalidRegularExpressionError(KafkaFatalError): ...
    class RebootstrapRequiredError(KafkaFatalError): ...
    class StreamsInvalidTopologyError(KafkaFatalError): ...
    class StreamsInvalidTopologyEpochError(KafkaFatalError): ...
    class StreamsTopologyFencedError(KafkaFatalError): ...
    class GroupDeletionFailedError(KafkaFatalError): ...
    class StreamsTopologyDescriptionUpdateFailedError(KafkaFatalError): ...
    class ControllerIdNotRegisteredError(KafkaFatalError): ...
    class CorruptMessageError(KafkaRetriableError): ...
    class UnknownTopicOrPartitionError(KafkaRetriableError): ...
    class LeaderNotAvailableError(KafkaRetriableError): ...
    class NotLeaderOrFollowerError(KafkaRetriableError): ...
    class RequestTimedOutError(KafkaRetriableError): ...
    class ReplicaNotAvailableError(KafkaRetriableError): ...
    class NetworkError(KafkaRetriableError): ...
    class CoordinatorLoadInProgressError(KafkaRetriableError): ...
    class CoordinatorNotAvailableError(KafkaRetriableError): ...
    class NotCoordinatorError(KafkaRetriableError): ...
    class NotEnoughReplicasError(KafkaRetriableError): ...
    class NotEnoughReplicasAfterAppendError(KafkaRetriableError): ...
    class NotControllerError(KafkaRetriableError): ...
    class ConcurrentTransactionsError(KafkaRetriableError): ...
    class KafkaStorageError(KafkaRetriableError): ...
    class FetchSessionIdNotFoundError(KafkaRetriableError): ...
    class InvalidFetchSessionEpochError(KafkaRetriableError): ...
    class ListenerNotFoundError(KafkaRetriableError): ...
    class FencedLeaderEpochError(KafkaRetriableError): ...
    class UnknownLeaderEpochError(KafkaRetriableError): ...
    class OffsetNotAvailableError(KafkaRetriableError): ...
    class PreferredLeaderNotAvailableError(KafkaRetriableError): ...
    class EligibleLeadersNotAvailableError(KafkaRetriableError): ...
    class ElectionNotNeededError(KafkaRetriableError): ...
    class UnstableOffsetCommitError(KafkaRetriableError): ...
    class ThrottlingQuotaExceededError(KafkaRetriableError): ...
    class UnknownTopicIdError(KafkaRetriableError): ...
    class InconsistentTopicIdError(KafkaRetriableError): ...
    class FetchSessionTopicIdError(KafkaRetriableError): ...
    class ShareSessionNotFoundError(KafkaRetriableError): ...
    class InvalidShareSessionEpochError(KafkaRetriableError): ...
    class ShareSessionLimitReachedError(KafkaRetriableError): ...
    class UnsupportedSaslMechanismError(KafkaFatalError, AuthenticationError): ...
    class IllegalSaslStateError(KafkaFatalError, AuthenticationError): ...
    class SaslAuthenticationFailedError(KafkaFatalError, AuthenticationError): ...
    class BrokerUnsupportedVersionError(KafkaFatalError, UnsupportedVersionError): ...
    __all__ += [
        "BrokerIdNotRegisteredError",
        "BrokerNotAvailableError",
        "BrokerUnsupportedVersionError",
        "ClusterAuthorizationFailedError",
        "ConcurrentTransactionsError",
        "ControllerIdNotRegisteredError",
        "CoordinatorLoadInProgressError",
        "CoordinatorNotAvailableError",
        "CorruptMessageError",
        "DelegationTokenAuthDisabledError",
        "DelegationTokenAuthorizationFailedError",
        "DelegationTokenExpiredError",
        "DelegationTokenNotFoundError",
        "DelegationTokenOwnerMismatchError",
        "DelegationTokenRequestNotAllowedError",
        "DuplicateBrokerRegistrationError",
        "DuplicateResourceError",
        "DuplicateSequenceNumberError",
        "DuplicateVoterError",
        "ElectionNotNeededError",
        "EligibleLeadersNotAvailableError",
        "FeatureUpdateFailedError",
        "FencedInstanceIdError",
        "FencedLeaderEpochError",
        "FencedMemberEpochError",
        "FencedStateEpochError",
        "FetchSessionIdNotFoundError",
        "FetchSessionTopicIdError",
        "GroupAuthorizationFailedError",
        "GroupDeletionFailedError",
        "GroupIdNotFoundError",
        "GroupMaxSizeReachedError",
        "GroupSubscribedToTopicError",
        "IllegalGenerationError",
        "IllegalSaslStateError",
        "InconsistentClusterIdError",
        "InconsistentGroupProtocolError",
        "InconsistentTopicIdError",
        "InconsistentVoterSetError",
        "IneligibleReplicaError",
        "InvalidCommitOffsetSizeError",
        "InvalidConfigError",
        "InvalidFetchSessionEpochError",
        "InvalidFetchSizeError",
        "InvalidGroupIdError",
        "InvalidPartitionsError",
        "InvalidPrincipalTypeError",
        "InvalidProducerEpochError",
        "InvalidProducerIdMappingError",
        "InvalidRecordError",
        "InvalidRecordStateError",
        "InvalidRegistrationError",
        "InvalidRegularExpressionError",
        "InvalidReplicaAssignmentError",
        "InvalidReplicationFactorError",
        "InvalidRequestError",
        "InvalidRequiredAcksError",
        "InvalidSessionTimeoutError",
        "InvalidShareSessionEpochError",
        "InvalidTimestampError",
        "InvalidTopicError",
        "InvalidTransactionTimeoutError",
        "InvalidTxnStateError",
        "InvalidUpdateVersionError",
        "InvalidVoterKeyError",
        "KafkaStorageError",
        "LeaderNotAvailableError",
        "ListenerNotFoundError",
        "LogDirNotFoundError",
        "MemberIdRequiredError",
        "MessageTooLargeError",
        "MismatchedEndpointTypeError",
        "NetworkError",
        "NewLeaderElectedError",
        "NoReassignmentInProgressError",
        "NonEmptyGroupError",
        "NotControllerError",
        "NotCoordinatorError",
        "NotEnoughReplicasAfterAppendError",
        "NotEnoughReplicasError",
        "NotLeaderOrFollowerError",
        "OffsetMetadataTooLargeError",
        "OffsetMovedToTieredStorageError",
        "OffsetNotAvailableError",
        "OffsetOutOfRangeError",
        "OperationNotAttemptedError",
        "OutOfOrderSequenceNumberError",
        "PolicyViolationError",
        "PositionOutOfRangeError",
        "PreferredLeaderNotAvailableError",
        "PrincipalDeserializationFailureError",
        "ProducerFencedError",
        "ReassignmentInProgressError",
        "RebalanceInProgressError",
        "RebootstrapRequiredError",
        "RecordListTooLargeError",
        "ReplicaNotAvailableError",
        "RequestTimedOutError",
        "ResourceNotFoundError",
        "SaslAuthenticationFailedError",
        "SecurityDisabledError",
        "ShareSessionLimitReachedError",
        "ShareSessionNotFoundError",
        "SnapshotNotFoundError",
        "StaleBrokerEpochError",
        "StaleControllerEpochError",
        "StaleMemberEpochError",
        "StreamsInvalidTopologyEpochError",
        "StreamsInvalidTopologyError",
        "StreamsTopologyDescriptionUpdateFailedError",
        "StreamsTopologyFencedError",
        "TelemetryTooLargeError",
        "ThrottlingQuotaExceededError",
        "TopicAlreadyExistsError",
        "TopicAuthorizationFailedError",
        "TopicDeletionDisabledError",
        "TransactionAbortableError",
        "TransactionCoordinatorFencedError",
        "TransactionalIdAuthorizationFailedError",
        "TransactionalIdNotFoundError",
        "UnacceptableCredentialError",
        "UnknownControllerIdError",
        "UnknownLeaderEpochError",
        "UnknownMemberIdError",
        "UnknownProducerIdError",
        "UnknownServerError",
        "UnknownSubscriptionIdError",
        "UnknownTopicIdError",
        "UnknownTopicOrPartitionError",
        "UnreleasedInstanceIdError",
        "UnstableOffsetCommitError",
        "UnsupportedAssignorError",
        "UnsupportedCompressionTypeError",
        "UnsupportedEndpointTypeError",
        "UnsupportedForMessageFormatError",
        "UnsupportedSaslMechanismError",
        "VoterNotFoundError",
    ]
    # END DECLARATIONS
else:
    globals().update(_CLASSES)
    __all__ += list(_CLASSES)

# Every code with its class.
ERRORS: dict[int, type[KafkaError]] = {cls.error_code: cls for cls in _CLASSES.values()}


def error_for(code: int, message: str | None = None) -> KafkaError:
    """The exception for a non-zero Kafka error code (unknown codes give UnknownKafkaError)."""
    if code == 0:
        raise ValueError("error code 0 means success")
    cls = ERRORS.get(code)
    if cls is None:
        return UnknownKafkaError(code, message)
    return cls(message)


def raise_for(code: int, message: str | None = None) -> None:
    """Raise the exception for ``code`` unless it is 0 (no error)."""
    if code:
        raise error_for(code, message)
