"""Consume as a member of a consumer group, acknowledging each record; offsets are committed for the group.

Run it twice with the same group to see the second run continue where the first committed.

    python examples/kafka_group_consumer.py [kafka://127.0.0.1:9092] [topic] [group]
"""

import asyncio

from _common import argument, broker_url

import kafkawire


async def main(url: str, topic: str, group: str) -> None:
    async with kafkawire.connect(url) as client:
        async with client.consumer(topic, group=group, start="earliest") as consumer:
            processed = 0
            while messages := await consumer.getmany(timeout=3):
                for message in messages:
                    processed += 1  # the work would go here
                    await consumer.ack(message)  # marks offset + 1 for the next commit
            await consumer.commit()
        print(f"group {group} processed {processed} records")


if __name__ == "__main__":
    asyncio.run(main(broker_url("kafka"), argument(2, "orders"), argument(3, "billing")))
