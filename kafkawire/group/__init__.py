"""Consumer groups on the classic protocol: the consumer subscription codec, assignors and membership."""

from kafkawire.group.assignors import ASSIGNORS, RangeAssignor, RoundRobinAssignor
from kafkawire.group.metadata import GroupMetadata
from kafkawire.group.protocol import Assignment, Subscription, decode_assignment, decode_subscription

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "GroupMetadata",
    "RangeAssignor",
    "RoundRobinAssignor",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
]
