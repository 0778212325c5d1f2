"""Produce then consume N batched messages with pulsarwire and pulsar-client against one standalone broker.

    .venv/bin/python benchmarks/pulsar_throughput.py --records 1000000 --size 100 [--url pulsar://...]

Each client gets its own fresh topic; the consumer acknowledges every message. Without --url a Pulsar
standalone is started with the project's launcher and stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid

from harness import Result, local_broker, measure, report

import pulsarwire


async def pulsarwire_produce(url: str, topic: str, count: int, value: bytes) -> None:
    async with pulsarwire.connect(url) as client, client.producer(
        topic, batching_max_messages=1000, max_pending_messages=10000
    ) as producer:
        futures = [await producer.enqueue(value) for _ in range(count)]
        await producer.flush()
        await futures[-1]


async def pulsarwire_consume(url: str, topic: str, count: int) -> None:
    async with pulsarwire.connect(url) as client, client.consumer(
        topic, subscription="bench", start="earliest"
    ) as consumer:
        for _ in range(count):
            await consumer.ack(await consumer.receive())


async def official_produce(url: str, topic: str, count: int, value: bytes) -> None:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                          max_pending_messages=10000, block_if_queue_full=True)
        for _ in range(count):
            producer.send_async(value, None)
        producer.flush()
        producer.close()
    finally:
        client.close()


async def official_consume(url: str, topic: str, count: int) -> None:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "bench", initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(count):
            consumer.acknowledge(consumer.receive())
        consumer.close()
    finally:
        client.close()


async def run(url: str, records: int, size: int) -> list[Result]:
    value = os.urandom(size)
    results = []
    for name, produce, consume in (
        ("pulsarwire", pulsarwire_produce, pulsarwire_consume),
        ("pulsar-client", official_produce, official_consume),
    ):
        topic = f"persistent://public/default/bench-{name}-{uuid.uuid4().hex[:8]}"
        # Subscribe first so that the messages are retained for the consumer phase.
        async with pulsarwire.connect(url) as client, client.consumer(topic, subscription="bench"):
            pass
        results.append(await measure(name, "produce", records, produce(url, topic, records, value)))
        results.append(await measure(name, "consume", records, consume(url, topic, records)))
        print(f"  {name}: done", file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--url", help="pulsar://host:port of a running broker (default: start one)")
    args = parser.parse_args()
    with local_broker("pulsar", args.url) as urls:
        report(asyncio.run(run(urls["pulsar"], args.records, args.size)), "pulsarwire")
    return 0


if __name__ == "__main__":
    sys.exit(main())
