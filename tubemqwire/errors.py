"""Errors of the TubeMQ client: the shared hierarchy, the exceptions a server reports in an RPC answer,
and one named exception per ``errCode`` of the response messages.

An RPC answer with an exception body names the server-side Java class; it is matched on the simple class
name, so the package prefix (which changes with the protocol version) does not matter.
"""

from __future__ import annotations

from mqwire.common.errors import *  # noqa: F403 - the shared hierarchy, re-exported whole
from mqwire.common.errors import (
    AuthenticationError,
    BrokerError,
    ErrorCodes,
    FatalBrokerError,
    RetriableBrokerError,
)
from mqwire.common.errors import __all__ as __all__  # the hierarchy's names, extended below

# --------------------------------------------------------------------------------- RPC exception bodies


class MasterStandbyError(RetriableBrokerError):
    """The master answered from standby: register with the next master address instead."""


class ServerNotReadyError(RetriableBrokerError):
    """The server is starting up."""


class ServiceStoppingError(RetriableBrokerError):
    """The server is shutting down."""


class ServerOverflowError(RetriableBrokerError):
    """The server's request queue is full."""


class RemoteNetworkError(RetriableBrokerError):
    """The server reports a network failure of its own."""


class UnknownProtocolError(FatalBrokerError):
    """The server did not understand the frame."""


class RemoteServerError(BrokerError):
    """Any other exception the server reports; the class name is kept in ``code``."""


_BY_EXCEPTION: dict[str, type[BrokerError]] = {
    "StandbyException": MasterStandbyError,
    "ServerNotReadyException": ServerNotReadyError,
    "ServiceStoppingException": ServiceStoppingError,
    "OverflowException": ServerOverflowError,
    "NetworkException": RemoteNetworkError,
    "UnknownProtocolException": UnknownProtocolError,
}


def error_for_exception(exception_name: str, message: str) -> BrokerError:
    """The exception for an RPC exception body (``exceptionName``, ``stackTrace`` holding the message)."""
    simple = exception_name.rsplit(".", 1)[-1]
    cls = _BY_EXCEPTION.get(simple, RemoteServerError)
    text = f"{simple}: {message}" if message else simple
    return cls(text, code=exception_name)


# ----------------------------------------------------------------------------------- response errCodes


class NotReadyError(RetriableBrokerError):
    """201: the master is not ready to serve this client yet."""


class MovedError(RetriableBrokerError):
    """301: the resource moved."""


class BadRequestError(FatalBrokerError):
    """400: the request is malformed or misses a field."""


class UnauthorizedError(FatalBrokerError, AuthenticationError):
    """401: authentication failed."""


class ConnectReturnNullError(RetriableBrokerError):
    """402: the server got no answer from a component it called."""


class ForbiddenError(FatalBrokerError):
    """403: not authorized for this topic or group."""


class NotFoundError(RetriableBrokerError):
    """404: nothing found (for a message fetch: no new messages yet)."""


class AllPartitionFrozenError(RetriableBrokerError):
    """405: every partition is frozen."""


class NoPartitionAssignedError(RetriableBrokerError):
    """406: no partition is assigned to this consumer yet."""


class AllPartitionWaitingError(RetriableBrokerError):
    """407: every partition is waiting for data."""


class AllPartitionInUseError(RetriableBrokerError):
    """408: every partition is in use."""


class PartitionOccupiedError(RetriableBrokerError):
    """410: another consumer of the group still holds the partition."""


class HeartbeatNoNodeError(RetriableBrokerError):
    """411: the server no longer knows this client; register again."""


class DuplicatePartitionError(FatalBrokerError):
    """412: the partition is registered twice."""


class CertificateFailureError(FatalBrokerError, AuthenticationError):
    """415: the signature or token was refused."""


class ServerReceiveOverflowError(RetriableBrokerError):
    """419: the broker cannot take more data right now."""


class ClientShutdownError(FatalBrokerError):
    """420: the client is shutting down."""


class HighFrequencyRequestError(RetriableBrokerError):
    """421: requests come too often."""


class PartitionUnsubscribableError(RetriableBrokerError):
    """422: the partition does not accept consumers at the moment."""


class PartitionUnpublishableError(RetriableBrokerError):
    """423: the partition does not accept messages at the moment."""


class InconsistentConsumeTypeError(FatalBrokerError):
    """424: the group's members consume with different settings."""


class InconsistentTopicSetError(FatalBrokerError):
    """425: the group's members subscribe different topics."""


class InconsistentFilterSetError(FatalBrokerError):
    """426: the group's members use different filters."""


class InconsistentSessionKeyError(FatalBrokerError):
    """427: the group's members use different session keys."""


class InconsistentSelectBigError(FatalBrokerError):
    """428: the group's members disagree on select-big."""


class InconsistentSourceCountError(FatalBrokerError):
    """429: the group's members disagree on the source count."""


class DuplicateIndexIdError(FatalBrokerError):
    """430: the node id is used twice in the group."""


class TopicNotDeployedError(FatalBrokerError):
    """431: the topic is not deployed on any broker."""


class MessageNullError(FatalBrokerError):
    """440: no message given."""


class MessageTopicBlankError(FatalBrokerError):
    """441: the message names no topic."""


class MessageBodyEmptyError(FatalBrokerError):
    """442: the message body is empty."""


class TopicUnpublishedError(FatalBrokerError):
    """443: the producer did not publish this topic."""


class TopicNoPartitionError(RetriableBrokerError):
    """444: the topic has no partition to send to yet."""


class MessageTooLargeError(FatalBrokerError):
    """445: the message exceeds the allowed size."""


class ConsumeGroupForbiddenError(FatalBrokerError):
    """450: the consumer group is forbidden from consuming."""


class ConsumeSpeedLimitedError(RetriableBrokerError):
    """452: the server throttles this consumer."""


class ConsumeContentForbiddenError(FatalBrokerError):
    """455: the filter asks for content the group may not consume."""


class InternalServerError(RetriableBrokerError):
    """500: the server failed while handling the request."""


class ServiceUnavailableError(RetriableBrokerError):
    """503: the service is unavailable (broker read-only, store closed ...)."""


class MessageSetNullError(RetriableBrokerError):
    """510: the server got an empty message set."""


class UnspecifiedAbnormalError(RetriableBrokerError):
    """599: an abnormal condition the server does not detail."""


class UnknownErrorCodeError(BrokerError):
    """An errCode this client does not know; ``code`` keeps the number."""


_CODES = ErrorCodes(
    {
        201: NotReadyError,
        301: MovedError,
        400: BadRequestError,
        401: UnauthorizedError,
        402: ConnectReturnNullError,
        403: ForbiddenError,
        404: NotFoundError,
        405: AllPartitionFrozenError,
        406: NoPartitionAssignedError,
        407: AllPartitionWaitingError,
        408: AllPartitionInUseError,
        410: PartitionOccupiedError,
        411: HeartbeatNoNodeError,
        412: DuplicatePartitionError,
        415: CertificateFailureError,
        419: ServerReceiveOverflowError,
        420: ClientShutdownError,
        421: HighFrequencyRequestError,
        422: PartitionUnsubscribableError,
        423: PartitionUnpublishableError,
        424: InconsistentConsumeTypeError,
        425: InconsistentTopicSetError,
        426: InconsistentFilterSetError,
        427: InconsistentSessionKeyError,
        428: InconsistentSelectBigError,
        429: InconsistentSourceCountError,
        430: DuplicateIndexIdError,
        431: TopicNotDeployedError,
        440: MessageNullError,
        441: MessageTopicBlankError,
        442: MessageBodyEmptyError,
        443: TopicUnpublishedError,
        444: TopicNoPartitionError,
        445: MessageTooLargeError,
        450: ConsumeGroupForbiddenError,
        452: ConsumeSpeedLimitedError,
        455: ConsumeContentForbiddenError,
        500: InternalServerError,
        503: ServiceUnavailableError,
        510: MessageSetNullError,
        599: UnspecifiedAbnormalError,
    },
    unknown=UnknownErrorCodeError,
    fallback="TubeMQ error code",
)


def error_class(err_code: int) -> type[BrokerError]:
    """The exception class for a response ``errCode`` (UnknownErrorCodeError for codes not listed)."""
    return _CODES.error_class(err_code)


def error_for_code(err_code: int, message: str) -> BrokerError:
    """The exception for a failed response's ``errCode`` and ``errMsg``."""
    return _CODES.error_for(err_code, message)


__all__ = [
    *__all__,
    "AllPartitionFrozenError",
    "AllPartitionInUseError",
    "AllPartitionWaitingError",
    "BadRequestError",
    "CertificateFailureError",
    "ClientShutdownError",
    "ConnectReturnNullError",
    "ConsumeContentForbiddenError",
    "ConsumeGroupForbiddenError",
    "ConsumeSpeedLimitedError",
    "DuplicateIndexIdError",
    "DuplicatePartitionError",
    "ForbiddenError",
    "HeartbeatNoNodeError",
    "HighFrequencyRequestError",
    "InconsistentConsumeTypeError",
    "InconsistentFilterSetError",
    "InconsistentSelectBigError",
    "InconsistentSessionKeyError",
    "InconsistentSourceCountError",
    "InconsistentTopicSetError",
    "InternalServerError",
    "MasterStandbyError",
    "MessageBodyEmptyError",
    "MessageNullError",
    "MessageSetNullError",
    "MessageTooLargeError",
    "MessageTopicBlankError",
    "MovedError",
    "NoPartitionAssignedError",
    "NotFoundError",
    "NotReadyError",
    "PartitionOccupiedError",
    "PartitionUnpublishableError",
    "PartitionUnsubscribableError",
    "RemoteNetworkError",
    "RemoteServerError",
    "ServerNotReadyError",
    "ServerOverflowError",
    "ServerReceiveOverflowError",
    "ServiceStoppingError",
    "ServiceUnavailableError",
    "TopicNoPartitionError",
    "TopicNotDeployedError",
    "TopicUnpublishedError",
    "UnauthorizedError",
    "UnknownErrorCodeError",
    "UnknownProtocolError",
    "UnspecifiedAbnormalError",
]
