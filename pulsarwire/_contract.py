"""Proof, for the type checker only, that pulsarwire implements the shared contract of ``mqwire.common.contract``.

Never imported at run time: mypy checks that each assignment below is allowed, so a signature that drifts
from the contract fails ``make lint``.
"""

from __future__ import annotations

from mqwire.common import contract
from pulsarwire.client import Client
from pulsarwire.consumer import Consumer
from pulsarwire.message import Message, Receipt
from pulsarwire.producer import Producer


def client(ours: Client) -> contract.Client[Message]:
    """A pulsarwire client is a contract client of pulsarwire messages."""
    return ours


def producer(ours: Producer) -> contract.Producer:
    """A pulsarwire producer is a contract producer."""
    return ours


def consumer(ours: Consumer) -> contract.Consumer[Message]:
    """A pulsarwire consumer is a contract consumer."""
    return ours


def message(ours: Message) -> contract.Message:
    """A pulsarwire message is a contract message."""
    return ours


def receipt(ours: Receipt) -> contract.Receipt:
    """What ``send`` returns is a contract receipt."""
    return ours
