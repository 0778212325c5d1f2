"""Copy what is in one topic to another, on any of the three systems: code written once against the contract.

    python examples/copy_topic.py kafka://127.0.0.1:9092 source target
    python examples/copy_topic.py pulsar://127.0.0.1:6650 source target

The function is typed against ``mqwire.common.contract``, so mypy accepts a kafkawire, pulsarwire or
tubemqwire client for it; only ``connect`` depends on the URL's scheme.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.contract import Client
from mqwire.common.errors import ReceiveTimeoutError

CONNECT: dict[str, Callable[[str], Client[Any]]] = {
    "kafka": kafkawire.connect,
    "pulsar": pulsarwire.connect,
    "tubemq": tubemqwire.connect,
}


async def copy(client: Client[Any], source: str, target: str, group: str, idle: float = 5.0) -> int:
    """Send every message of ``source`` to ``target`` until nothing new comes for ``idle`` seconds."""
    copied = 0
    async with (
        client.consumer(source, group=group, start="earliest") as consumer,
        client.producer(target) as producer,
    ):
        while True:
            try:
                message = await consumer.receive(timeout=idle)
            except ReceiveTimeoutError:
                return copied
            await producer.send(message.value, key=message.key, headers=message.headers)
            await consumer.ack(message)
            copied += 1


async def main(url: str, source: str, target: str) -> None:
    scheme = url.split("://", 1)[0].split("+", 1)[0]
    async with CONNECT[scheme](url) as client:
        copied = await copy(client, source, target, group=f"copy-{target}")
    print(f"copied {copied} messages from {source} to {target}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
