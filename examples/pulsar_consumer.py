"""Subscribe to a Pulsar topic (Shared, from the earliest message), print and acknowledge each message.

python examples/pulsar_consumer.py [pulsar://127.0.0.1:6650] [topic] [subscription]
"""

import asyncio

from _common import argument, broker_url

import pulsarwire


async def main(url: str, topic: str, subscription: str) -> None:
    async with (
        pulsarwire.connect(url) as client,
        client.consumer(topic, group=subscription, subscription_type="Shared", start="earliest") as consumer,
    ):
        while True:
            try:
                message = await consumer.receive(timeout=3)
            except TimeoutError:
                break
            print(f"{message.message_id} key={message.partition_key} value={message.value!r} {message.headers}")
            await consumer.ack(message)


if __name__ == "__main__":
    asyncio.run(main(broker_url("pulsar"), argument(2, "events"), argument(3, "example")))
