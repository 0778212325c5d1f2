"""Produce then consume N records with kafkawire, aiokafka and confluent-kafka against one broker.

Each client gets its own fresh topic, the same record count and size, in the same run; the table reports
records per second and CPU seconds of this process, and the ratios of kafkawire to each peer.

    .venv/bin/python benchmarks/kafka_throughput.py --records 1000000 --size 100 [--url kafka://...]

Without --url a Kafka broker is started with the project's launcher and stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Awaitable, Callable

from harness import Result, local_broker, measure, report

import kafkawire


# ------------------------------------------------------------------------------------------ kafkawire
async def kafkawire_produce(url: str, topic: str, count: int, value: bytes) -> None:
    async with kafkawire.connect(url) as client, client.producer(topic, linger_ms=5, batch_size=262144) as producer:
        futures = [await producer.enqueue(value) for _ in range(count)]
        await producer.flush()
        await futures[-1]


async def kafkawire_consume(url: str, topic: str, count: int) -> None:
    async with kafkawire.connect(url) as client, client.consumer(topic, start="earliest") as consumer:
        seen = 0
        while seen < count:
            seen += len(await consumer.getmany(timeout_ms=1000, max_records=100_000))


# ------------------------------------------------------------------------------------------- aiokafka
async def aiokafka_produce(bootstrap: str, topic: str, count: int, value: bytes) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=262144, acks="all")
    await producer.start()
    try:
        futures = [await producer.send(topic, value) for _ in range(count)]
        await producer.flush()
        await futures[-1]
    finally:
        await producer.stop()


async def aiokafka_consume(bootstrap: str, topic: str, count: int) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        seen = 0
        while seen < count:
            batches = await consumer.getmany(timeout_ms=1000, max_records=100_000)
            seen += sum(len(b) for b in batches.values())
    finally:
        await consumer.stop()


# ------------------------------------------------------------------------------------- confluent-kafka
async def confluent_produce(bootstrap: str, topic: str, count: int, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush()


async def confluent_consume(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        seen = 0
        while seen < count:
            seen += len([m for m in consumer.consume(10_000, 1.0) if m.error() is None])
    finally:
        consumer.close()


async def run(url: str, records: int, size: int) -> list[Result]:
    bootstrap = url.removeprefix("kafka://")
    value = os.urandom(size)
    clients: list[tuple[str, Callable[..., Awaitable[None]], Callable[..., Awaitable[None]], str]] = [
        ("kafkawire", kafkawire_produce, kafkawire_consume, url),
        ("aiokafka", aiokafka_produce, aiokafka_consume, bootstrap),
        ("confluent-kafka", confluent_produce, confluent_consume, bootstrap),
    ]
    results = []
    for name, produce, consume, address in clients:
        topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
        async with kafkawire.connect(url) as admin_client, admin_client.admin() as admin:
            await admin.create_topic(topic, partitions=1)
        results.append(await measure(name, "produce", records, produce(address, topic, records, value)))
        results.append(await measure(name, "consume", records, consume(address, topic, records)))
        print(f"  {name}: done", file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--url", help="kafka://host:port of a running broker (default: start one)")
    args = parser.parse_args()
    with local_broker("kafka", args.url) as urls:
        report(asyncio.run(run(urls["kafka"], args.records, args.size)), "kafkawire")
    return 0


if __name__ == "__main__":
    sys.exit(main())
