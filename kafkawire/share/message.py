"""A record delivered by a share consumer: a ``Message`` with its delivery count."""

from __future__ import annotations

from kafkawire.message import Message

__all__ = ["ShareMessage"]


class ShareMessage(Message):
    """One record acquired by a share consumer.

    ``delivery_count`` is how many times the record has been delivered to the group, this time included
    (1 on the first delivery; more after a release, a lock timeout or a member's departure).
    """

    __slots__ = ("_serial", "delivery_count")

    delivery_count: int
    # Which acquisition this is: acknowledging checks it against the consumer's own record of the delivery.
    _serial: int

    def __repr__(self) -> str:
        return f"Share{super().__repr__()[:-1]}, delivery_count={self.delivery_count})"
