"""Send messages with properties and keys to a Pulsar topic and print their message ids.

python examples/pulsar_producer.py [pulsar://127.0.0.1:6650] [topic]
"""

import asyncio

from _common import argument, broker_url

import pulsarwire


async def main(url: str, topic: str) -> None:
    async with pulsarwire.connect(url) as client, client.producer(topic, compression="LZ4") as producer:
        futures = [
            await producer.enqueue(b"event %d" % i, key=b"device-%d" % (i % 3), headers={"n": b"%d" % i})
            for i in range(10)
        ]
        for message_id in await asyncio.gather(*futures):
            print(f"stored as {message_id}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("pulsar"), argument(2, "events")))
