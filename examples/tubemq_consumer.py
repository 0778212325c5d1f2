"""Consume a TubeMQ topic in a consumer group (the master balances partitions) and confirm each message.

python examples/tubemq_consumer.py [tubemq://127.0.0.1:8715] [topic] [group]
"""

import asyncio

from _common import argument, broker_url

import tubemqwire


async def main(url: str, topic: str, group: str) -> None:
    async with tubemqwire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        while True:
            try:
                message = await consumer.receive(timeout=8)
            except TimeoutError:
                break
            print(f"partition {message.partition} {message.msg_type or '-'} {message.value!r} {message.headers}")
            await consumer.ack(message)  # confirms the fetched batch's offset once all of it is acked


if __name__ == "__main__":
    asyncio.run(main(broker_url("tubemq"), argument(2, "demo"), argument(3, "example")))
