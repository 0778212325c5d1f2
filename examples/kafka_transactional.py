"""Consume-transform-produce exactly once: read a topic, write upper-cased copies to another, and commit
the consumer's offsets inside the same transaction.

    python examples/kafka_transactional.py [kafka://127.0.0.1:9092] [source] [destination]
"""

import asyncio

from _common import argument, broker_url

import kafkawire
from kafkawire import TopicPartition


async def main(url: str, source: str, destination: str) -> None:
    async with (
        kafkawire.connect(url) as client,
        client.consumer(
            source, group="uppercase", start="earliest", enable_auto_commit=False, isolation_level="read_committed"
        ) as consumer,
        client.producer(destination, transactional_id="uppercase-1") as producer,
    ):
        moved = 0
        while messages := await consumer.getmany(timeout=5):
            async with producer.transaction():  # commits at the end of the block, aborts if it raises
                for message in messages:
                    await producer.enqueue((message.value or b"").upper(), key=message.key)
                offsets = {TopicPartition(m.topic, m.partition): m.offset + 1 for m in messages}
                await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            moved += len(messages)
        print(f"moved {moved} records from {source} to {destination} exactly once")


if __name__ == "__main__":
    asyncio.run(main(broker_url("kafka"), argument(2, "orders"), argument(3, "orders-upper")))
