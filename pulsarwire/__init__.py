"""asyncio client for Apache Pulsar, speaking its binary protocol directly.

    async with pulsarwire.connect("pulsar://localhost:6650") as client:
        async with client.producer("orders", compression_type="LZ4") as producer:
            receipt = await producer.send(b"value", key=b"k", headers={"h": b"v"})
        async with client.consumer("orders", group="billing", start="earliest") as consumer:
            async for message in consumer:
                await consumer.ack(message)
"""

from pulsarwire.admin import Admin, AdminOptions
from pulsarwire.client import Client, connect
from pulsarwire.consumer import Consumer
from pulsarwire.crypto import CryptoKeyReader, EncryptionKeyInfo
from pulsarwire.errors import *  # noqa: F403 - the whole error hierarchy is part of the public API
from pulsarwire.errors import __all__ as _error_names
from pulsarwire.message import EARLIEST, LATEST, Message, MessageId, Receipt
from pulsarwire.oauth2 import OAuth2ClientCredentials
from pulsarwire.options import ClientOptions, ConsumerOptions, DeadLetterPolicy, ProducerOptions, ReaderOptions
from pulsarwire.producer import Producer
from pulsarwire.reader import Reader
from pulsarwire.table_view import TableView, TableViewOptions
from pulsarwire.transaction import Transaction

# The earlier names of the option TypedDicts, from before they were named as kafkawire's and tubemqwire's
# are: the same classes, so that code written against them still imports and type-checks.
AdminConfig = AdminOptions
ClientConfig = ClientOptions
ConsumerConfig = ConsumerOptions
ProducerConfig = ProducerOptions
ReaderConfig = ReaderOptions
TableViewConfig = TableViewOptions

__all__ = [
    "EARLIEST",
    "LATEST",
    "Admin",
    "AdminOptions",
    "Client",
    "ClientOptions",
    "Consumer",
    "ConsumerOptions",
    "CryptoKeyReader",
    "DeadLetterPolicy",
    "EncryptionKeyInfo",
    "Message",
    "MessageId",
    "OAuth2ClientCredentials",
    "Producer",
    "ProducerOptions",
    "Reader",
    "ReaderOptions",
    "Receipt",
    "TableView",
    "TableViewOptions",
    "Transaction",
    "connect",
    *_error_names,
]
