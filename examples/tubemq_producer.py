"""Send messages with a msgType and attributes to a TubeMQ topic and print their receipts.

python examples/tubemq_producer.py [tubemq://127.0.0.1:8715] [topic]
"""

import asyncio

from _common import argument, broker_url

import tubemqwire


async def main(url: str, topic: str) -> None:
    async with tubemqwire.connect(url) as client, client.producer(topic) as producer:
        futures = [
            await producer.enqueue(b"reading %d" % i, headers={"sensor": f"s{i % 2}"}, msg_type="temperature")
            for i in range(10)
        ]
        for receipt in await asyncio.gather(*futures):
            print(f"stored in partition {receipt.partition} as message {receipt.message_id}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("tubemq"), argument(2, "demo")))
