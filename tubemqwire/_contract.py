"""Proof for the type checker that tubemqwire implements the shared contract (``mqwire.common.contract``).

Never imported at run time: mypy checks each assignment below, so a method whose signature drifts from
the contract fails ``make lint``.
"""

from __future__ import annotations

from mqwire.common import contract
from tubemqwire.client import Client
from tubemqwire.client_balance import ClientBalanceConsumer
from tubemqwire.consumer import Consumer
from tubemqwire.message import Message, Receipt
from tubemqwire.producer import Producer


def client_is_a_contract_client(client: Client) -> contract.Client[Message]:
    """``tubemqwire.Client`` is a ``contract.Client`` of ``tubemqwire.Message``."""
    return client


def producer_is_a_contract_producer(producer: Producer) -> contract.Producer:
    """``tubemqwire.Producer`` is a ``contract.Producer``."""
    return producer


def consumer_is_a_contract_consumer(consumer: Consumer) -> contract.Consumer[Message]:
    """``tubemqwire.Consumer`` is a ``contract.Consumer`` of ``tubemqwire.Message``."""
    return consumer


def client_balance_consumer_is_a_contract_consumer(consumer: ClientBalanceConsumer) -> contract.Consumer[Message]:
    """``tubemqwire.ClientBalanceConsumer`` is a ``contract.Consumer`` of ``tubemqwire.Message``."""
    return consumer


def message_is_a_contract_message(message: Message) -> contract.Message:
    """``tubemqwire.Message`` is a ``contract.Message``."""
    return message


def receipt_is_a_contract_receipt(receipt: Receipt) -> contract.Receipt:
    """``tubemqwire.Receipt`` is a ``contract.Receipt``."""
    return receipt
