"""aiokafka's "Getting started" producer and consumer (the first page of aiokafka's documentation), ported to
kafkawire with the aiokafka table of docs/porting.md and nothing else. Each changed line names its row.

    python aiokafka_getting_started.py produce kafka://127.0.0.1:9092 my_topic
    python aiokafka_getting_started.py consume kafka://127.0.0.1:9092 my_topic my_other_topic my-group
"""

import asyncio
import sys

import kafkawire  # row "import"


async def send_one(url: str, topic: str) -> None:
    client = kafkawire.connect(url)  # row "AIOKafkaProducer(bootstrap_servers=...)"
    producer = client.producer()
    # Get cluster layout and initial topic/partition leadership information
    await client.start()  # row "await producer.start()"
    await producer.start()
    try:
        # Produce message
        await producer.send_and_wait(topic, b"Super message")  # row "send_and_wait": unchanged
    finally:
        # Wait for all pending messages to be delivered or expire.
        await producer.stop()  # row "stop": unchanged
        await client.close()  # row "AIOKafkaProducer(bootstrap_servers=...)": the client is closed too


async def consume(url: str, topics: list[str], group: str) -> None:
    client = kafkawire.connect(url)  # row "AIOKafkaConsumer(*topics, bootstrap_servers=..., group_id=...)"
    consumer = client.consumer(topics, group=group)
    # Get cluster layout and join group
    await client.start()  # row "await consumer.start()"
    await consumer.start()
    try:
        # Consume messages
        async for msg in consumer:  # row "async for": unchanged
            print("consumed: ", msg.topic, msg.partition, msg.offset, msg.key, msg.value, msg.timestamp, flush=True)
    finally:
        # Will leave consumer group; perform autocommit if enabled.
        await consumer.stop()  # row "stop": unchanged
        await client.close()


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        asyncio.run(send_one(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(consume(sys.argv[2], sys.argv[3:-1], sys.argv[-1]))
