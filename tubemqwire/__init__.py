"""asyncio client for Apache InLong TubeMQ, speaking its binary protocol to the masters and brokers.

    async with tubemqwire.connect("tubemq://master:8715") as client:
        async with client.producer("orders") as producer:
            receipt = await producer.send(b"value", key=b"k", headers={"h": b"v"}, msg_type="order")
        async with client.consumer("orders", group="billing", start="earliest") as consumer:
            async for message in consumer:
                await consumer.ack(message)

``__all__`` is the public API; the modules' other names are the package's own.
"""

from tubemqwire.client import Client, connect
from tubemqwire.client_balance import ClientBalanceConsumer, PartitionOffsets
from tubemqwire.consumer import Consumer
from tubemqwire.errors import *  # noqa: F403 - the whole error hierarchy is part of the public API
from tubemqwire.errors import __all__ as _error_names
from tubemqwire.message import Message, Receipt
from tubemqwire.options import ClientBalanceConsumerOptions, ClientOptions, ConsumerOptions, ProducerOptions
from tubemqwire.producer import Producer

__all__ = [
    "Client",
    "ClientBalanceConsumer",
    "ClientBalanceConsumerOptions",
    "ClientOptions",
    "Consumer",
    "ConsumerOptions",
    "Message",
    "PartitionOffsets",
    "Producer",
    "ProducerOptions",
    "Receipt",
    "connect",
    *_error_names,
]
