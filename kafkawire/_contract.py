"""A proof for the type checker that ``kafkawire`` implements the shared contract (``mqwire.common.contract``).

Nothing imports this module at run time; ``mypy --strict`` checks it with the package. Each function
assigns a ``kafkawire`` class to the protocol it implements, so a signature that drifts from the contract
is a type error here.
"""

from __future__ import annotations

from kafkawire.client import Client
from kafkawire.consumer import Consumer
from kafkawire.message import Message, RecordMetadata
from kafkawire.producer import Producer
from kafkawire.share.message import ShareMessage
from mqwire.common import contract


def client(value: Client) -> contract.Client[Message]:
    """``kafkawire.Client`` is a ``Client`` whose consumers yield ``kafkawire.Message``."""
    return value


def producer(value: Producer) -> contract.Producer:
    """``kafkawire.Producer`` is a ``Producer``."""
    return value


def consumer(value: Consumer) -> contract.Consumer[Message]:
    """``kafkawire.Consumer`` is a ``Consumer`` of ``kafkawire.Message``."""
    return value


def message(value: Message) -> contract.Message:
    """``kafkawire.Message`` is a ``Message``."""
    return value


def receipt(value: RecordMetadata) -> contract.Receipt:
    """``kafkawire.RecordMetadata`` (what ``send`` returns) is a ``Receipt``."""
    return value


def share_message(value: ShareMessage) -> contract.Message:
    """``kafkawire.ShareMessage`` (what a share consumer yields) is a ``Message``."""
    return value
