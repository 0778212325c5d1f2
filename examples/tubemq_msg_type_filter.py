"""A consumer that asks the broker for one msgType only: the others never leave the broker.

python examples/tubemq_msg_type_filter.py [tubemq://127.0.0.1:8715] [topic]
"""

import asyncio
import secrets

from _common import argument, broker_url

import tubemqwire


async def main(url: str, topic: str) -> None:
    group = f"filtered-{secrets.token_hex(3)}"
    async with (
        tubemqwire.connect(url) as client,
        client.consumer(topic, group=group, start="latest", msg_types=["alarm"]) as consumer,
    ):
        async with client.producer(topic) as producer:
            seen: list[bytes] = []
            # The master needs a heartbeat or two to give the new group its partitions: send until seen.
            async with asyncio.timeout(90):
                while not seen:
                    await producer.send(b"all quiet", msg_type="status")
                    await producer.send(b"overheating", msg_type="alarm")
                    try:
                        message = await consumer.receive(timeout=3)
                    except TimeoutError:
                        continue
                    seen.append(message.value)
                    await consumer.ack(message)
                    print(f"received {message.msg_type}: {message.value!r}")
            while True:
                try:
                    message = await consumer.receive(timeout=3)
                except TimeoutError:
                    break
                seen.append(message.value)
                await consumer.ack(message)
        kinds = set(seen)
        print("only alarms arrived" if kinds == {b"overheating"} else f"unexpected: {kinds}")


if __name__ == "__main__":
    asyncio.run(main(broker_url("tubemq"), argument(2, "demo")))
