"""Read a Kafka topic from the beginning and print each record, stopping when nothing more comes.

python examples/kafka_consumer.py [kafka://127.0.0.1:9092] [topic]
"""

import asyncio

from _common import argument, broker_url

import kafkawire


async def main(url: str, topic: str) -> None:
    async with kafkawire.connect(url) as client, client.consumer(topic, start="earliest") as consumer:
        while messages := await consumer.getmany(timeout=3):
            for message in messages:
                print(f"{message.partition}@{message.offset} key={message.key!r} value={message.value!r}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("kafka"), argument(2, "orders")))
