"""Share groups (KIP-932, queues for Kafka): the share consumer and its acknowledgements."""

from kafkawire.errors import (
    AcknowledgementError,
    AcquisitionLockExpiredError,
    AlreadyAcknowledgedError,
    NotAcquiredError,
)
from kafkawire.share.acks import AcknowledgeType
from kafkawire.share.consumer import ShareConsumer
from kafkawire.share.message import ShareMessage

__all__ = [
    "AcknowledgeType",
    "AcknowledgementError",
    "AcquisitionLockExpiredError",
    "AlreadyAcknowledgedError",
    "NotAcquiredError",
    "ShareConsumer",
    "ShareMessage",
]
