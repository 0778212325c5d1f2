"""Kafka broker error codes as named exceptions, and the shared error hierarchy re-exported.

Each code maps to one class. Retriable codes (those whose Java exception is a RetriableException) subclass
RetriableBrokerError, the rest FatalBrokerError. ``refresh_metadata`` marks codes after which the client's
view of leaders is stale; ``refresh_coordinator`` marks codes after which the group or transaction
coordinator must be looked up again.
"""

from __future__ import annotations

from typing import ClassVar

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


class UnknownServerError(KafkaFatalError):
    error_code = -1


class OffsetOutOfRangeError(KafkaFatalError):
    error_code = 1


class CorruptMessageError(KafkaRetriableError):
    error_code = 2


class UnknownTopicOrPartitionError(KafkaRetriableError):
    error_code = 3
    refresh_metadata = True


class InvalidFetchSizeError(KafkaFatalError):
    error_code = 4


class LeaderNotAvailableError(KafkaRetriableError):
    error_code = 5
    refresh_metadata = True


class NotLeaderOrFollowerError(KafkaRetriableError):
    error_code = 6
    refresh_metadata = True


class RequestTimedOutError(KafkaRetriableError):
    error_code = 7


class BrokerNotAvailableError(KafkaFatalError):
    error_code = 8


class ReplicaNotAvailableError(KafkaRetriableError):
    error_code = 9
    refresh_metadata = True


class MessageTooLargeError(KafkaFatalError):
    error_code = 10


class StaleControllerEpochError(KafkaFatalError):
    error_code = 11


class OffsetMetadataTooLargeError(KafkaFatalError):
    error_code = 12


class NetworkError(KafkaRetriableError):
    error_code = 13
    refresh_metadata = True


class CoordinatorLoadInProgressError(KafkaRetriableError):
    error_code = 14


class CoordinatorNotAvailableError(KafkaRetriableError):
    error_code = 15
    refresh_coordinator = True


class NotCoordinatorError(KafkaRetriableError):
    error_code = 16
    refresh_coordinator = True


class InvalidTopicError(KafkaFatalError):
    error_code = 17


class RecordListTooLargeError(KafkaFatalError):
    error_code = 18


class NotEnoughReplicasError(KafkaRetriableError):
    error_code = 19


class NotEnoughReplicasAfterAppendError(KafkaRetriableError):
    error_code = 20


class InvalidRequiredAcksError(KafkaFatalError):
    error_code = 21


class IllegalGenerationError(CommitFailedError):
    error_code = 22


class InconsistentGroupProtocolError(KafkaFatalError):
    error_code = 23


class InvalidGroupIdError(KafkaFatalError):
    error_code = 24


class UnknownMemberIdError(CommitFailedError):
    error_code = 25


class InvalidSessionTimeoutError(KafkaFatalError):
    error_code = 26


class RebalanceInProgressError(CommitFailedError):
    error_code = 27


class InvalidCommitOffsetSizeError(KafkaFatalError):
    error_code = 28


class TopicAuthorizationFailedError(KafkaFatalError):
    error_code = 29


class GroupAuthorizationFailedError(KafkaFatalError):
    error_code = 30


class ClusterAuthorizationFailedError(KafkaFatalError):
    error_code = 31


class InvalidTimestampError(KafkaFatalError):
    error_code = 32


class UnsupportedSaslMechanismError(KafkaFatalError, AuthenticationError):
    error_code = 33


class IllegalSaslStateError(KafkaFatalError, AuthenticationError):
    error_code = 34


class BrokerUnsupportedVersionError(KafkaFatalError, UnsupportedVersionError):
    error_code = 35


class TopicAlreadyExistsError(KafkaFatalError):
    error_code = 36


class InvalidPartitionsError(KafkaFatalError):
    error_code = 37


class InvalidReplicationFactorError(KafkaFatalError):
    error_code = 38


class InvalidReplicaAssignmentError(KafkaFatalError):
    error_code = 39


class InvalidConfigError(KafkaFatalError):
    error_code = 40


class NotControllerError(KafkaRetriableError):
    error_code = 41


class InvalidRequestError(KafkaFatalError):
    error_code = 42


class UnsupportedForMessageFormatError(KafkaFatalError):
    error_code = 43


class PolicyViolationError(KafkaFatalError):
    error_code = 44


class OutOfOrderSequenceNumberError(KafkaFatalError):
    error_code = 45


class DuplicateSequenceNumberError(KafkaFatalError):
    error_code = 46


class InvalidProducerEpochError(KafkaFatalError):
    error_code = 47


class InvalidTxnStateError(KafkaFatalError):
    error_code = 48


class InvalidProducerIdMappingError(KafkaFatalError):
    error_code = 49


class InvalidTransactionTimeoutError(KafkaFatalError):
    error_code = 50


class ConcurrentTransactionsError(KafkaRetriableError):
    error_code = 51


class TransactionCoordinatorFencedError(KafkaFatalError):
    error_code = 52


class TransactionalIdAuthorizationFailedError(KafkaFatalError):
    error_code = 53


class SecurityDisabledError(KafkaFatalError):
    error_code = 54


class OperationNotAttemptedError(KafkaFatalError):
    error_code = 55


class KafkaStorageError(KafkaRetriableError):
    error_code = 56
    refresh_metadata = True


class LogDirNotFoundError(KafkaFatalError):
    error_code = 57


class SaslAuthenticationFailedError(KafkaFatalError, AuthenticationError):
    error_code = 58


class UnknownProducerIdError(KafkaFatalError):
    error_code = 59


class ReassignmentInProgressError(KafkaFatalError):
    error_code = 60


class DelegationTokenAuthDisabledError(KafkaFatalError):
    error_code = 61


class DelegationTokenNotFoundError(KafkaFatalError):
    error_code = 62


class DelegationTokenOwnerMismatchError(KafkaFatalError):
    error_code = 63


class DelegationTokenRequestNotAllowedError(KafkaFatalError):
    error_code = 64


class DelegationTokenAuthorizationFailedError(KafkaFatalError):
    error_code = 65


class DelegationTokenExpiredError(KafkaFatalError):
    error_code = 66


class InvalidPrincipalTypeError(KafkaFatalError):
    error_code = 67


class NonEmptyGroupError(KafkaFatalError):
    error_code = 68


class GroupIdNotFoundError(KafkaFatalError):
    error_code = 69


class FetchSessionIdNotFoundError(KafkaRetriableError):
    error_code = 70


class InvalidFetchSessionEpochError(KafkaRetriableError):
    error_code = 71


class ListenerNotFoundError(KafkaRetriableError):
    error_code = 72
    refresh_metadata = True


class TopicDeletionDisabledError(KafkaFatalError):
    error_code = 73


class FencedLeaderEpochError(KafkaRetriableError):
    error_code = 74
    refresh_metadata = True


class UnknownLeaderEpochError(KafkaRetriableError):
    error_code = 75


class UnsupportedCompressionTypeError(KafkaFatalError):
    error_code = 76


class StaleBrokerEpochError(KafkaFatalError):
    error_code = 77


class OffsetNotAvailableError(KafkaRetriableError):
    error_code = 78


class MemberIdRequiredError(KafkaFatalError):
    error_code = 79


class PreferredLeaderNotAvailableError(KafkaRetriableError):
    error_code = 80
    refresh_metadata = True


class GroupMaxSizeReachedError(KafkaFatalError):
    error_code = 81


class FencedInstanceIdError(KafkaFatalError):
    error_code = 82


class EligibleLeadersNotAvailableError(KafkaRetriableError):
    error_code = 83
    refresh_metadata = True


class ElectionNotNeededError(KafkaRetriableError):
    error_code = 84
    refresh_metadata = True


class NoReassignmentInProgressError(KafkaFatalError):
    error_code = 85


class GroupSubscribedToTopicError(KafkaFatalError):
    error_code = 86


class InvalidRecordError(KafkaFatalError):
    error_code = 87


class UnstableOffsetCommitError(KafkaRetriableError):
    error_code = 88


class ThrottlingQuotaExceededError(KafkaRetriableError):
    error_code = 89


class ProducerFencedError(KafkaFatalError):
    error_code = 90


class ResourceNotFoundError(KafkaFatalError):
    error_code = 91


class DuplicateResourceError(KafkaFatalError):
    error_code = 92


class UnacceptableCredentialError(KafkaFatalError):
    error_code = 93


class InconsistentVoterSetError(KafkaFatalError):
    error_code = 94


class InvalidUpdateVersionError(KafkaFatalError):
    error_code = 95


class FeatureUpdateFailedError(KafkaFatalError):
    error_code = 96


class PrincipalDeserializationFailureError(KafkaFatalError):
    error_code = 97


class SnapshotNotFoundError(KafkaFatalError):
    error_code = 98


class PositionOutOfRangeError(KafkaFatalError):
    error_code = 99


class UnknownTopicIdError(KafkaRetriableError):
    error_code = 100
    refresh_metadata = True


class DuplicateBrokerRegistrationError(KafkaFatalError):
    error_code = 101


class BrokerIdNotRegisteredError(KafkaFatalError):
    error_code = 102


class InconsistentTopicIdError(KafkaRetriableError):
    error_code = 103
    refresh_metadata = True


class InconsistentClusterIdError(KafkaFatalError):
    error_code = 104


class TransactionalIdNotFoundError(KafkaFatalError):
    error_code = 105


class FetchSessionTopicIdError(KafkaRetriableError):
    error_code = 106


class IneligibleReplicaError(KafkaFatalError):
    error_code = 107


class NewLeaderElectedError(KafkaFatalError):
    error_code = 108


class OffsetMovedToTieredStorageError(KafkaFatalError):
    error_code = 109


class FencedMemberEpochError(CommitFailedError):
    error_code = 110


class UnreleasedInstanceIdError(KafkaFatalError):
    error_code = 111


class UnsupportedAssignorError(KafkaFatalError):
    error_code = 112


class StaleMemberEpochError(KafkaFatalError):
    error_code = 113


class MismatchedEndpointTypeError(KafkaFatalError):
    error_code = 114


class UnsupportedEndpointTypeError(KafkaFatalError):
    error_code = 115


class UnknownControllerIdError(KafkaFatalError):
    error_code = 116


class UnknownSubscriptionIdError(KafkaFatalError):
    error_code = 117


class TelemetryTooLargeError(KafkaFatalError):
    error_code = 118


class InvalidRegistrationError(KafkaFatalError):
    error_code = 119


class TransactionAbortableError(KafkaFatalError):
    error_code = 120


class InvalidRecordStateError(KafkaFatalError):
    error_code = 121


class ShareSessionNotFoundError(KafkaRetriableError):
    error_code = 122


class InvalidShareSessionEpochError(KafkaRetriableError):
    error_code = 123


class FencedStateEpochError(KafkaFatalError):
    error_code = 124


class InvalidVoterKeyError(KafkaFatalError):
    error_code = 125


class DuplicateVoterError(KafkaFatalError):
    error_code = 126


class VoterNotFoundError(KafkaFatalError):
    error_code = 127


class InvalidRegularExpressionError(KafkaFatalError):
    error_code = 128


class RebootstrapRequiredError(KafkaFatalError):
    error_code = 129


class StreamsInvalidTopologyError(KafkaFatalError):
    error_code = 130


class StreamsInvalidTopologyEpochError(KafkaFatalError):
    error_code = 131


class StreamsTopologyFencedError(KafkaFatalError):
    error_code = 132


class ShareSessionLimitReachedError(KafkaRetriableError):
    error_code = 133


class GroupDeletionFailedError(KafkaFatalError):
    error_code = 134


class StreamsTopologyDescriptionUpdateFailedError(KafkaFatalError):
    error_code = 135


class ControllerIdNotRegisteredError(KafkaFatalError):
    error_code = 136


def _concrete(base: type[KafkaError]) -> list[type[KafkaError]]:
    found = []
    for sub in base.__subclasses__():
        found.append(sub)
        found.extend(_concrete(sub))
    return found


# Every code with its class. Classes are declared one by one above so that type checkers see them.
ERRORS: dict[int, type[KafkaError]] = {
    cls.error_code: cls for cls in _concrete(KafkaError) if "error_code" in vars(cls)
}


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


__all__ = [
    "ERRORS",
    "AuthenticationError",
    "BrokerError",
    "BrokerIdNotRegisteredError",
    "BrokerNotAvailableError",
    "BrokerUnsupportedVersionError",
    "ChecksumError",
    "ClosedError",
    "ClusterAuthorizationFailedError",
    "CommitFailedError",
    "ConcurrentTransactionsError",
    "ConfigurationError",
    "ConnectError",
    "ConnectionLostError",
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
    "FatalBrokerError",
    "FatalError",
    "FeatureUpdateFailedError",
    "FencedInstanceIdError",
    "FencedLeaderEpochError",
    "FencedMemberEpochError",
    "FencedStateEpochError",
    "FetchSessionIdNotFoundError",
    "FetchSessionTopicIdError",
    "ForkedClientError",
    "FrameTooLargeError",
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
    "KafkaError",
    "KafkaFatalError",
    "KafkaRetriableError",
    "KafkaStorageError",
    "LeaderNotAvailableError",
    "ListenerNotFoundError",
    "LogDirNotFoundError",
    "MemberIdRequiredError",
    "MessageTooLargeError",
    "MismatchedEndpointTypeError",
    "MqwireError",
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
    "ProtocolError",
    "ReassignmentInProgressError",
    "RebalanceInProgressError",
    "RebootstrapRequiredError",
    "RecordBatchTooLargeError",
    "RecordListTooLargeError",
    "ReplicaNotAvailableError",
    "RequestTimedOutError",
    "RequestTimeoutError",
    "ResourceNotFoundError",
    "RetriableBrokerError",
    "RetriableError",
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
    "UnknownKafkaError",
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
    "UnsupportedVersionError",
    "VoterNotFoundError",
    "WrongLoopError",
    "error_for",
    "raise_for",
]
