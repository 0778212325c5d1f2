"""Every Kafka error code, one row each: the single source of ``kafkawire.errors``' broker error classes.

A row gives the code, the name Kafka spells it with (``Errors`` in kafka-clients), the public class name, its
traits, and under it a one-line description (the class's docstring). The traits ``retriable`` and ``metadata``
follow Kafka: the code's Java exception is a ``RetriableException`` / an ``InvalidMetadataException``;
tests/test_kafka_error_table.py checks codes, names and both traits against the pinned kafka-clients jar. The
others are this client's: ``coordinator`` (look the group or transaction coordinator up again after it), and
``commit-failed``, ``authentication`` and ``unsupported-version``, a second base class that lets applications
catch a family of codes together. A row without ``retriable`` is fatal.

``kafkawire.errors`` makes the classes from these rows at import. For the type checker it carries one
declaration per row, written by ``python kafkawire/error_table.py`` (``declarations()``); the same test
fails when they no longer match the rows.

Every code of the pinned Kafka has a row; ``NOT_IN_PINNED_KAFKA`` names the rows of codes that the pinned
kafka-clients does not list (codes of newer releases), which the check cannot confirm.
"""

from __future__ import annotations

from enum import Flag, auto
from typing import NamedTuple


class Trait(Flag):
    """What a code implies for the client, besides its number and name."""

    FATAL = 0
    RETRIABLE = auto()
    REFRESH_METADATA = auto()
    REFRESH_COORDINATOR = auto()
    # The class is also a CommitFailedError: the group moved on since the records were delivered.
    COMMIT_FAILED = auto()
    # The class is also mqwire.common's AuthenticationError.
    AUTHENTICATION = auto()
    # The class is also mqwire.common's UnsupportedVersionError.
    UNSUPPORTED_VERSION = auto()


# The second base class each trait adds, by name in kafkawire.errors.
_ALSO = {
    Trait.COMMIT_FAILED: "CommitFailedError",
    Trait.AUTHENTICATION: "AuthenticationError",
    Trait.UNSUPPORTED_VERSION: "UnsupportedVersionError",
}

# The words of the traits column.
TRAIT_WORDS = {
    "fatal": Trait.FATAL,
    "retriable": Trait.RETRIABLE,
    "metadata": Trait.REFRESH_METADATA,
    "coordinator": Trait.REFRESH_COORDINATOR,
    "commit-failed": Trait.COMMIT_FAILED,
    "authentication": Trait.AUTHENTICATION,
    "unsupported-version": Trait.UNSUPPORTED_VERSION,
}


class ErrorCode(NamedTuple):
    """One Kafka error code and the class that stands for it."""

    code: int
    name: str
    class_name: str
    traits: Trait
    description: str

    @property
    def retriable(self) -> bool:
        """Whether a later attempt may succeed (Kafka's ``RetriableException``)."""
        return Trait.RETRIABLE in self.traits

    @property
    def refresh_metadata(self) -> bool:
        """Whether the client's view of leaders is stale after it (Kafka's ``InvalidMetadataException``)."""
        return Trait.REFRESH_METADATA in self.traits

    @property
    def refresh_coordinator(self) -> bool:
        """Whether the group or transaction coordinator must be looked up again after it."""
        return Trait.REFRESH_COORDINATOR in self.traits

    def base_names(self) -> tuple[str, ...]:
        """The base classes of the code's class, by name in ``kafkawire.errors``."""
        also = [name for trait, name in _ALSO.items() if trait in self.traits]
        if also == ["CommitFailedError"]:
            return ("CommitFailedError",)  # itself a KafkaFatalError
        return ("KafkaRetriableError" if self.retriable else "KafkaFatalError", *also)


# One row a code: code, Kafka's name, class name, traits (words of TRAIT_WORDS); under it, indented, the
# description.
_TEXT = """
  -1  UNKNOWN_SERVER_ERROR                        UnknownServerError                           fatal
      The broker failed on the request in a way it does not name.
   1  OFFSET_OUT_OF_RANGE                         OffsetOutOfRangeError                        fatal
      The offset asked for is outside the range the partition's log holds.
   2  CORRUPT_MESSAGE                             CorruptMessageError                          retriable
      A record failed its checksum, is too large, or is otherwise malformed.
   3  UNKNOWN_TOPIC_OR_PARTITION                  UnknownTopicOrPartitionError                 retriable metadata
      The broker hosts no such topic or partition.
   4  INVALID_FETCH_SIZE                          InvalidFetchSizeError                        fatal
      The fetch asked for an invalid number of bytes.
   5  LEADER_NOT_AVAILABLE                        LeaderNotAvailableError                      retriable metadata
      The partition has no leader right now: an election is under way.
   6  NOT_LEADER_OR_FOLLOWER                      NotLeaderOrFollowerError                     retriable metadata
      The broker is not the partition's leader (or, for a replica request, not one of its replicas).
   7  REQUEST_TIMED_OUT                           RequestTimedOutError                         retriable
      The broker gave up on the request after its timeout.
   8  BROKER_NOT_AVAILABLE                        BrokerNotAvailableError                      fatal
      The broker named is not available.
   9  REPLICA_NOT_AVAILABLE                       ReplicaNotAvailableError                     retriable metadata
      A replica of the partition is not available.
  10  MESSAGE_TOO_LARGE                           MessageTooLargeError                         fatal
      A record batch is larger than the broker or topic accepts.
  11  STALE_CONTROLLER_EPOCH                      StaleControllerEpochError                    fatal
      The controller has moved to another broker.
  12  OFFSET_METADATA_TOO_LARGE                   OffsetMetadataTooLargeError                  fatal
      The metadata string of a committed offset is longer than the broker allows.
  13  NETWORK_EXCEPTION                           NetworkError                                 retriable metadata
      The broker lost its connection before it could answer.
  14  COORDINATOR_LOAD_IN_PROGRESS                CoordinatorLoadInProgressError               retriable
      The coordinator is still loading its state.
  15  COORDINATOR_NOT_AVAILABLE                   CoordinatorNotAvailableError                 retriable coordinator
      No coordinator is available for the group or transaction.
  16  NOT_COORDINATOR                             NotCoordinatorError                          retriable coordinator
      The broker is not the coordinator of the group or transaction.
  17  INVALID_TOPIC_EXCEPTION                     InvalidTopicError                            fatal
      The topic name is invalid, or the operation is not allowed on it.
  18  RECORD_LIST_TOO_LARGE                       RecordListTooLargeError                      fatal
      A record batch is larger than the broker's log segment.
  19  NOT_ENOUGH_REPLICAS                         NotEnoughReplicasError                       retriable
      Fewer replicas are in sync than the topic requires: nothing was written.
  20  NOT_ENOUGH_REPLICAS_AFTER_APPEND            NotEnoughReplicasAfterAppendError            retriable
      The records were written, but to fewer in-sync replicas than the topic requires.
  21  INVALID_REQUIRED_ACKS                       InvalidRequiredAcksError                     fatal
      The produce request's acks value is not one the broker accepts.
  22  ILLEGAL_GENERATION                          IllegalGenerationError                       commit-failed
      The member's group generation is not the current one.
  23  INCONSISTENT_GROUP_PROTOCOL                 InconsistentGroupProtocolError               fatal
      The member's protocols do not match those of the group.
  24  INVALID_GROUP_ID                            InvalidGroupIdError                          fatal
      The group id is invalid.
  25  UNKNOWN_MEMBER_ID                           UnknownMemberIdError                         commit-failed
      The coordinator does not know the member.
  26  INVALID_SESSION_TIMEOUT                     InvalidSessionTimeoutError                   fatal
      The session timeout is outside the range the broker allows.
  27  REBALANCE_IN_PROGRESS                       RebalanceInProgressError                     commit-failed
      The group is rebalancing: the member must join again.
  28  INVALID_COMMIT_OFFSET_SIZE                  InvalidCommitOffsetSizeError                 fatal
      The committed offset data has an invalid size.
  29  TOPIC_AUTHORIZATION_FAILED                  TopicAuthorizationFailedError                fatal
      The principal may not do this on the topic.
  30  GROUP_AUTHORIZATION_FAILED                  GroupAuthorizationFailedError                fatal
      The principal may not do this on the group.
  31  CLUSTER_AUTHORIZATION_FAILED                ClusterAuthorizationFailedError              fatal
      The principal may not do this on the cluster.
  32  INVALID_TIMESTAMP                           InvalidTimestampError                        fatal
      A record's timestamp is outside the range the topic accepts.
  33  UNSUPPORTED_SASL_MECHANISM                  UnsupportedSaslMechanismError                authentication
      The broker does not offer the SASL mechanism asked for.
  34  ILLEGAL_SASL_STATE                          IllegalSaslStateError                        authentication
      The request does not fit the state of the SASL handshake.
  35  UNSUPPORTED_VERSION                         BrokerUnsupportedVersionError                unsupported-version
      The broker does not support this version of the request.
  36  TOPIC_ALREADY_EXISTS                        TopicAlreadyExistsError                      fatal
      A topic of this name exists already.
  37  INVALID_PARTITIONS                          InvalidPartitionsError                       fatal
      The number of partitions is invalid.
  38  INVALID_REPLICATION_FACTOR                  InvalidReplicationFactorError                fatal
      The replication factor is below 1 or above the number of brokers.
  39  INVALID_REPLICA_ASSIGNMENT                  InvalidReplicaAssignmentError                fatal
      The replica assignment is invalid.
  40  INVALID_CONFIG                              InvalidConfigError                           fatal
      The configuration is invalid.
  41  NOT_CONTROLLER                              NotControllerError                           retriable
      The broker is not the cluster's active controller.
  42  INVALID_REQUEST                             InvalidRequestError                          fatal
      The broker found the request malformed or not meant for it; its log says more.
  43  UNSUPPORTED_FOR_MESSAGE_FORMAT              UnsupportedForMessageFormatError             fatal
      The topic's message format does not support the request.
  44  POLICY_VIOLATION                            PolicyViolationError                         fatal
      The request breaks a policy configured on the broker.
  45  OUT_OF_ORDER_SEQUENCE_NUMBER                OutOfOrderSequenceNumberError                fatal
      The broker received a producer sequence number out of order.
  46  DUPLICATE_SEQUENCE_NUMBER                   DuplicateSequenceNumberError                 fatal
      The broker received a producer sequence number it has written already.
  47  INVALID_PRODUCER_EPOCH                      InvalidProducerEpochError                    fatal
      The producer's epoch is older than the broker's.
  48  INVALID_TXN_STATE                           InvalidTxnStateError                         fatal
      The transactional operation does not fit the transaction's state.
  49  INVALID_PRODUCER_ID_MAPPING                 InvalidProducerIdMappingError                fatal
      The producer id is not the one assigned to the transactional id.
  50  INVALID_TRANSACTION_TIMEOUT                 InvalidTransactionTimeoutError               fatal
      The transaction timeout exceeds the broker's transaction.max.timeout.ms.
  51  CONCURRENT_TRANSACTIONS                     ConcurrentTransactionsError                  retriable
      Another operation on the same transaction is still under way.
  52  TRANSACTION_COORDINATOR_FENCED              TransactionCoordinatorFencedError            fatal
      The transaction coordinator that sent the markers is no longer the current one.
  53  TRANSACTIONAL_ID_AUTHORIZATION_FAILED       TransactionalIdAuthorizationFailedError      fatal
      The principal may not use the transactional id.
  54  SECURITY_DISABLED                           SecurityDisabledError                        fatal
      The broker has its security features turned off.
  55  OPERATION_NOT_ATTEMPTED                     OperationNotAttemptedError                   fatal
      The broker skipped this operation because another one in the same request failed.
  56  KAFKA_STORAGE_ERROR                         KafkaStorageError                            retriable metadata
      The broker could not access the partition's log on its disk.
  57  LOG_DIR_NOT_FOUND                           LogDirNotFoundError                          fatal
      The broker has no log directory of that name.
  58  SASL_AUTHENTICATION_FAILED                  SaslAuthenticationFailedError                authentication
      SASL authentication failed: the credentials were refused.
  59  UNKNOWN_PRODUCER_ID                         UnknownProducerIdError                       fatal
      The broker holds no state for the producer id (its records may have expired).
  60  REASSIGNMENT_IN_PROGRESS                    ReassignmentInProgressError                  fatal
      A partition reassignment is under way.
  61  DELEGATION_TOKEN_AUTH_DISABLED              DelegationTokenAuthDisabledError             fatal
      Delegation tokens are not enabled on the broker.
  62  DELEGATION_TOKEN_NOT_FOUND                  DelegationTokenNotFoundError                 fatal
      The broker knows no such delegation token.
  63  DELEGATION_TOKEN_OWNER_MISMATCH             DelegationTokenOwnerMismatchError            fatal
      The principal is neither the token's owner nor a renewer of it.
  64  DELEGATION_TOKEN_REQUEST_NOT_ALLOWED        DelegationTokenRequestNotAllowedError        fatal
      Delegation token requests are refused on this kind of channel or authentication.
  65  DELEGATION_TOKEN_AUTHORIZATION_FAILED       DelegationTokenAuthorizationFailedError      fatal
      The principal may not do this with delegation tokens.
  66  DELEGATION_TOKEN_EXPIRED                    DelegationTokenExpiredError                  fatal
      The delegation token has expired.
  67  INVALID_PRINCIPAL_TYPE                      InvalidPrincipalTypeError                    fatal
      The broker does not support the principal type given.
  68  NON_EMPTY_GROUP                             NonEmptyGroupError                           fatal
      The group still has members.
  69  GROUP_ID_NOT_FOUND                          GroupIdNotFoundError                         fatal
      No group of that id exists.
  70  FETCH_SESSION_ID_NOT_FOUND                  FetchSessionIdNotFoundError                  retriable
      The broker knows no fetch session of that id.
  71  INVALID_FETCH_SESSION_EPOCH                 InvalidFetchSessionEpochError                retriable
      The fetch session epoch is not the one the broker expects.
  72  LISTENER_NOT_FOUND                          ListenerNotFoundError                        retriable metadata
      The leader has no listener matching the one the metadata request came in on.
  73  TOPIC_DELETION_DISABLED                     TopicDeletionDisabledError                   fatal
      Deleting topics is turned off on the broker.
  74  FENCED_LEADER_EPOCH                         FencedLeaderEpochError                       retriable metadata
      The request's leader epoch is older than the broker's.
  75  UNKNOWN_LEADER_EPOCH                        UnknownLeaderEpochError                      retriable
      The request's leader epoch is newer than the broker's.
  76  UNSUPPORTED_COMPRESSION_TYPE                UnsupportedCompressionTypeError              fatal
      The client does not support the partition's compression type.
  77  STALE_BROKER_EPOCH                          StaleBrokerEpochError                        fatal
      The broker epoch has changed.
  78  OFFSET_NOT_AVAILABLE                        OffsetNotAvailableError                      retriable
      The new leader's high watermark has not caught up yet, so the offset cannot be given.
  79  MEMBER_ID_REQUIRED                          MemberIdRequiredError                        fatal
      The member must join again with the member id the coordinator gave it.
  80  PREFERRED_LEADER_NOT_AVAILABLE              PreferredLeaderNotAvailableError             retriable metadata
      The preferred leader is not available.
  81  GROUP_MAX_SIZE_REACHED                      GroupMaxSizeReachedError                     fatal
      The group has as many members as it may have.
  82  FENCED_INSTANCE_ID                          FencedInstanceIdError                        fatal
      Another member has registered with the same group.instance.id.
  83  ELIGIBLE_LEADERS_NOT_AVAILABLE              EligibleLeadersNotAvailableError             retriable metadata
      No eligible leader is available for the partition.
  84  ELECTION_NOT_NEEDED                         ElectionNotNeededError                       retriable metadata
      The partition needs no leader election.
  85  NO_REASSIGNMENT_IN_PROGRESS                 NoReassignmentInProgressError                fatal
      No partition reassignment is under way.
  86  GROUP_SUBSCRIBED_TO_TOPIC                   GroupSubscribedToTopicError                  fatal
      The group's offsets of a topic cannot be deleted while it is subscribed to it.
  87  INVALID_RECORD                              InvalidRecordError                           fatal
      The broker's validation refused a record.
  88  UNSTABLE_OFFSET_COMMIT                      UnstableOffsetCommitError                    retriable
      Offsets of pending transactions must settle first.
  89  THROTTLING_QUOTA_EXCEEDED                   ThrottlingQuotaExceededError                 retriable
      The principal's throttling quota is used up.
  90  PRODUCER_FENCED                             ProducerFencedError                          fatal
      A newer producer with the same transactional id has fenced this one.
  91  RESOURCE_NOT_FOUND                          ResourceNotFoundError                        fatal
      The request names a resource that does not exist.
  92  DUPLICATE_RESOURCE                          DuplicateResourceError                       fatal
      The request names the same resource twice.
  93  UNACCEPTABLE_CREDENTIAL                     UnacceptableCredentialError                  fatal
      The credential asked for does not meet the broker's criteria.
  94  INCONSISTENT_VOTER_SET                      InconsistentVoterSetError                    fatal
      The sender or receiver of a voters' request is not one of the expected voters.
  95  INVALID_UPDATE_VERSION                      InvalidUpdateVersionError                    fatal
      The update version is invalid.
  96  FEATURE_UPDATE_FAILED                       FeatureUpdateFailedError                     fatal
      The finalized features could not be updated.
  97  PRINCIPAL_DESERIALIZATION_FAILURE           PrincipalDeserializationFailureError         fatal
      A forwarded request's principal could not be read: the cluster's security setup is at fault.
  98  SNAPSHOT_NOT_FOUND                          SnapshotNotFoundError                        fatal
      The snapshot asked for does not exist.
  99  POSITION_OUT_OF_RANGE                       PositionOutOfRangeError                      fatal
      The position is negative or beyond the end of the snapshot.
 100  UNKNOWN_TOPIC_ID                            UnknownTopicIdError                          retriable metadata
      The broker hosts no topic of that id.
 101  DUPLICATE_BROKER_REGISTRATION               DuplicateBrokerRegistrationError             fatal
      Another broker uses this broker id.
 102  BROKER_ID_NOT_REGISTERED                    BrokerIdNotRegisteredError                   fatal
      No broker is registered with that id.
 103  INCONSISTENT_TOPIC_ID                       InconsistentTopicIdError                     retriable metadata
      The topic id in the request is not the one of the broker's log.
 104  INCONSISTENT_CLUSTER_ID                     InconsistentClusterIdError                   fatal
      The cluster id in the request is not the broker's.
 105  TRANSACTIONAL_ID_NOT_FOUND                  TransactionalIdNotFoundError                 fatal
      No transaction has that transactional id.
 106  FETCH_SESSION_TOPIC_ID_ERROR                FetchSessionTopicIdError                     retriable
      The fetch session used topic ids inconsistently.
 107  INELIGIBLE_REPLICA                          IneligibleReplicaError                       fatal
      The new in-sync replica set holds a replica that may not be in it.
 108  NEW_LEADER_ELECTED                          NewLeaderElectedError                        fatal
      The partition state was updated, but the leader has changed meanwhile.
 109  OFFSET_MOVED_TO_TIERED_STORAGE              OffsetMovedToTieredStorageError              fatal
      The offset now lives in tiered storage.
 110  FENCED_MEMBER_EPOCH                         FencedMemberEpochError                       commit-failed
      The coordinator fenced the member's epoch: it must give up its partitions and join again.
 111  UNRELEASED_INSTANCE_ID                      UnreleasedInstanceIdError                    fatal
      Another member still holds the instance id and must leave first.
 112  UNSUPPORTED_ASSIGNOR                        UnsupportedAssignorError                     fatal
      The group does not support the assignor or its versions.
 113  STALE_MEMBER_EPOCH                          StaleMemberEpochError                        fatal
      The member epoch is stale: retry once the next heartbeat has brought the current one.
 114  MISMATCHED_ENDPOINT_TYPE                    MismatchedEndpointTypeError                  fatal
      The request went to an endpoint of the wrong type.
 115  UNSUPPORTED_ENDPOINT_TYPE                   UnsupportedEndpointTypeError                 fatal
      This type of endpoint is not supported yet.
 116  UNKNOWN_CONTROLLER_ID                       UnknownControllerIdError                     fatal
      No controller has that id.
 117  UNKNOWN_SUBSCRIPTION_ID                     UnknownSubscriptionIdError                   fatal
      The telemetry push names a subscription id that is invalid or out of date.
 118  TELEMETRY_TOO_LARGE                         TelemetryTooLargeError                       fatal
      The telemetry push is larger than the broker accepts.
 119  INVALID_REGISTRATION                        InvalidRegistrationError                     fatal
      The controller found the broker's registration invalid.
 120  TRANSACTION_ABORTABLE                       TransactionAbortableError                    fatal
      The transaction failed on the broker; aborting it lets the transactional id go on.
 121  INVALID_RECORD_STATE                        InvalidRecordStateError                      fatal
      The record's state does not allow the acknowledgement.
 122  SHARE_SESSION_NOT_FOUND                     ShareSessionNotFoundError                    retriable
      The broker knows no such share session.
 123  INVALID_SHARE_SESSION_EPOCH                 InvalidShareSessionEpochError                retriable
      The share session epoch is not the one the broker expects.
 124  FENCED_STATE_EPOCH                          FencedStateEpochError                        fatal
      The share coordinator refused a share-group state epoch that does not match its own.
 125  INVALID_VOTER_KEY                           InvalidVoterKeyError                         fatal
      The voter key is not the receiving replica's.
 126  DUPLICATE_VOTER                             DuplicateVoterError                          fatal
      The voter is in the voter set already.
 127  VOTER_NOT_FOUND                             VoterNotFoundError                           fatal
      The voter is not in the voter set.
 128  INVALID_REGULAR_EXPRESSION                  InvalidRegularExpressionError                fatal
      The regular expression is invalid.
 129  REBOOTSTRAP_REQUIRED                        RebootstrapRequiredError                     fatal
      The client's metadata is stale: it must bootstrap again.
 130  STREAMS_INVALID_TOPOLOGY                    StreamsInvalidTopologyError                  fatal
      The streams topology is invalid.
 131  STREAMS_INVALID_TOPOLOGY_EPOCH              StreamsInvalidTopologyEpochError             fatal
      The streams topology epoch is invalid.
 132  STREAMS_TOPOLOGY_FENCED                     StreamsTopologyFencedError                   fatal
      The streams topology epoch is out of date.
 133  SHARE_SESSION_LIMIT_REACHED                 ShareSessionLimitReachedError                retriable
      The broker holds as many share sessions as it may.
 134  GROUP_DELETION_FAILED                       GroupDeletionFailedError                     fatal
      The group could not be deleted.
 135  STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED  StreamsTopologyDescriptionUpdateFailedError  fatal
      The streams topology description could not be updated.
 136  CONTROLLER_ID_NOT_REGISTERED                ControllerIdNotRegisteredError               fatal
      No controller is registered with that id.
"""


def _parse(text: str) -> tuple[ErrorCode, ...]:
    rows: list[ErrorCode] = []
    heading: list[str] = []
    for line in text.strip("\n").splitlines():
        if not line.startswith("      "):
            heading = line.split()
            continue
        code, name, class_name, *words = heading
        traits = Trait.FATAL
        for word in words:
            traits |= TRAIT_WORDS[word]
        rows.append(ErrorCode(int(code), name, class_name, traits, line.strip()))
    return tuple(rows)


TABLE: tuple[ErrorCode, ...] = _parse(_TEXT)

# Codes of Kafka releases newer than the pinned kafka-clients, which does not list them: their rows are kept so
# a newer broker's code still gets its name, and the check against Kafka cannot confirm them.
NOT_IN_PINNED_KAFKA = frozenset({134, 135, 136})


def declarations() -> str:
    """The type checker's view of the classes, as ``kafkawire.errors`` carries it under ``TYPE_CHECKING``."""
    # Grouped by base class, in code order within a group.
    grouped = sorted(TABLE, key=lambda row: (len(row.base_names()), row.base_names(), row.code))
    lines = [f"    class {row.class_name}({', '.join(row.base_names())}): ..." for row in grouped]
    lines.append("    __all__ += [")
    lines.extend(f'        "{name}",' for name in sorted(row.class_name for row in TABLE))
    lines.append("    ]")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(declarations(), end="")
