"""Two Key_Shared consumers on one subscription: every key is handled by exactly one of them.

The producer batches per key (``batcher_builder="key_based"``) so that a batch never mixes keys.

    python examples/pulsar_key_shared.py [pulsar://127.0.0.1:6650] [topic]
"""

import asyncio

from _common import argument, broker_url

import pulsarwire


async def main(url: str, topic: str) -> None:
    async with pulsarwire.connect(url) as client:
        consumers = [
            client.consumer(topic, group="by-key", subscription_type="Key_Shared", start="earliest")
            for _ in range(2)
        ]
        async with consumers[0] as first, consumers[1] as second:
            async with client.producer(topic, batcher_builder="key_based") as producer:
                await asyncio.gather(*[await producer.enqueue(b"m%d" % i, key=b"key-%d" % (i % 6)) for i in range(60)])
            keys: list[set[str]] = [set(), set()]
            for index, consumer in enumerate((first, second)):
                while True:
                    try:
                        message = await consumer.receive(timeout=3)
                    except TimeoutError:
                        break
                    keys[index].add(message.partition_key or "")
                    await consumer.ack(message)
        print(f"consumer 1 got keys {sorted(keys[0])}")
        print(f"consumer 2 got keys {sorted(keys[1])}")
        print("no key at both consumers" if not keys[0] & keys[1] else f"shared keys: {keys[0] & keys[1]}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("pulsar"), argument(2, "keyed-events")))
