"""Messages that keep failing go to a dead-letter topic after two redeliveries.

python examples/pulsar_dead_letter.py [pulsar://127.0.0.1:6650] [topic]
"""

import asyncio

from _common import argument, broker_url

import pulsarwire


async def main(url: str, topic: str) -> None:
    policy = pulsarwire.DeadLetterPolicy(max_redeliver_count=2)
    async with (
        pulsarwire.connect(url) as client,
        client.consumer(
            topic,
            group="work",
            subscription_type="Shared",
            start="earliest",
            negative_ack_redelivery_delay_ms=200,
            dead_letter_policy=policy,
        ) as consumer,
        client.consumer(f"{topic}-work-DLQ", group="inspect", start="earliest") as dead_letters,
    ):
        async with client.producer(topic, batching_enabled=False) as producer:
            await producer.send(b"good")
            await producer.send(b"poison")
        async with asyncio.timeout(60):
            while True:
                try:
                    message = await consumer.receive(timeout=0.5)
                except TimeoutError:
                    message = None
                if message is not None and message.value == b"poison":
                    print(f"failed to process poison (delivery {message.redelivery_count + 1})")
                    await consumer.negative_ack(message)
                elif message is not None:
                    print("processed good")
                    await consumer.ack(message)
                dead = dead_letters.receive_nowait()
                if dead is not None:
                    real_topic = dead.headers.get("REAL_TOPIC", b"").decode()
                    print(f"dead letter: {dead.value!r} from {real_topic}")
                    await dead_letters.ack(dead)
                    return


if __name__ == "__main__":
    asyncio.run(main(broker_url("pulsar"), argument(2, "jobs")))
