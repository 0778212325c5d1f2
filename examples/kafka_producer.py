"""Send keyed records with headers to a Kafka topic and print where each landed.

python examples/kafka_producer.py [kafka://127.0.0.1:9092] [topic]
"""

import asyncio

from _common import argument, broker_url

import kafkawire


async def main(url: str, topic: str) -> None:
    async with kafkawire.connect(url) as client, client.producer(topic, compression="lz4") as producer:
        # enqueue buffers and returns the future of the broker's ack: many records travel in one batch.
        futures = [
            await producer.enqueue(b"order %d" % i, key=b"customer-%d" % (i % 3), headers={"source": b"example"})
            for i in range(10)
        ]
        for receipt in await asyncio.gather(*futures):
            print(f"stored at {receipt.topic}-{receipt.partition}@{receipt.offset}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("kafka"), argument(2, "orders")))
