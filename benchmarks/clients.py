"""Produce and consume loops of every Python client the suite compares, one pair per client.

Each produce loop sends ``count`` copies of ``value`` and returns once all are acknowledged; it calls
``clock.start()`` once connected (so connection set-up is not timed) and hands a sample of the sends to
``latencies`` (enqueue to acknowledgement). Each consume loop reads ``count`` messages from the start of the
topic and calls ``clock.start()`` at the first one. The loops use the settings each client's users would
pick for throughput: lingering batches, many sends in flight, batch getters.
"""

from __future__ import annotations

import asyncio
import resource
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

LINGER_MS = 5
BATCH_BYTES = 256 * 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Clock:
    """The measured interval: from ``start()`` (the first call counts) to ``stop()``."""

    wall: float = 0.0
    cpu: float = 0.0
    seconds: float = 0.0
    cpu_used: float = 0.0
    _started: bool = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self.wall, self.cpu = time.perf_counter(), cpu_seconds()

    def stop(self) -> None:
        self.start()
        self.seconds = time.perf_counter() - self.wall
        self.cpu_used = cpu_seconds() - self.cpu


@dataclass
class Latencies:
    """Send-to-acknowledgement times of every ``every``-th send, in seconds."""

    every: int = 50
    samples: list[float] = field(default_factory=list)

    def track(self, index: int) -> Callable[..., None] | None:
        """A callback to run on acknowledgement when send ``index`` is sampled, else None."""
        if index % self.every:
            return None
        begun = time.perf_counter()
        return lambda *_: self.samples.append(time.perf_counter() - begun)

    def percentile(self, q: float) -> float | None:
        if not self.samples:
            return None
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def enqueue_all(
    enqueue: Callable[[bytes], Awaitable[Any]], count: int, value: bytes, lat: Latencies
) -> list[Any]:
    """``count`` enqueues of ``value``; returns the futures, every ``lat.every``-th one timed."""
    futures = []
    for i in range(count):
        future = await enqueue(value)
        callback = lat.track(i)
        if callback is not None:
            future.add_done_callback(callback)
        futures.append(future)
    return futures


Produce = Callable[[str, str, int, bytes, Clock, Latencies], Awaitable[None]]
Consume = Callable[[str, str, int, Clock], Awaitable[None]]


# ----------------------------------------------------------------------------------------------- Kafka
async def kafkawire_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    import kafkawire

    async with kafkawire.connect(url) as client, client.producer(
        topic, linger_ms=LINGER_MS, batch_size=BATCH_BYTES
    ) as producer:
        await producer.send(value)  # warm-up: metadata and connection ready
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat)
        await producer.flush()
        for future in futures:
            future.result()


async def kafkawire_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    import kafkawire

    async with kafkawire.connect(url) as client, client.consumer(topic, start="earliest") as consumer:
        seen = 0
        while seen < count:
            got = len(await consumer.getmany(timeout_ms=1000, max_records=100_000))
            if got:
                clock.start()
            seen += got


async def kafkawire_group_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    """kafkawire in a consumer group of its own (the share consumer's comparison)."""
    import kafkawire

    group = f"bench-group-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        seen = 0
        while seen < count:
            got = len(await consumer.getmany(timeout_ms=1000, max_records=100_000))
            if got:
                clock.start()
            seen += got


async def kafkawire_share_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    """kafkawire as the one member of a share group of its own (implicit acknowledgement), started at the
    beginning of the topic."""
    import kafkawire

    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    async with kafkawire.connect(url) as client:
        partitions = await client.partitions_for(topic)
        async with client.admin() as admin:
            await admin.alter_share_group_offsets(group, {(topic, p): 0 for p in partitions})
        async with client.share_consumer(topic, group=group) as consumer:
            seen = 0
            while seen < count:
                got = len(await consumer.getmany(timeout=1, max_records=100_000))
                if got:
                    clock.start()
                seen += got
            await consumer.commit()


async def aiokafka_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=url.removeprefix("kafka://"), linger_ms=LINGER_MS, max_batch_size=BATCH_BYTES, acks="all"
    )
    await producer.start()
    try:
        await (await producer.send(topic, value))
        clock.start()
        futures = await enqueue_all(lambda v: producer.send(topic, v), count, value, lat)
        await producer.flush()
        for future in futures:
            future.result()
    finally:
        await producer.stop()


async def aiokafka_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=url.removeprefix("kafka://"), auto_offset_reset="earliest")
    await consumer.start()
    try:
        seen = 0
        while seen < count:
            batches = await consumer.getmany(timeout_ms=1000, max_records=100_000)
            got = sum(len(b) for b in batches.values())
            if got:
                clock.start()
            seen += got
    finally:
        await consumer.stop()


async def kafka_python_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=url.removeprefix("kafka://"), linger_ms=LINGER_MS, batch_size=BATCH_BYTES, acks="all"
    )
    try:
        producer.send(topic, value).get(timeout=60)
        clock.start()
        futures = []
        for i in range(count):
            future = producer.send(topic, value)
            callback = lat.track(i)
            if callback is not None:
                future.add_callback(callback)
            futures.append(future)
        producer.flush()
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close()


async def kafka_python_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=url.removeprefix("kafka://"), auto_offset_reset="earliest", group_id=None,
        max_poll_records=100_000,
    )
    try:
        seen = 0
        while seen < count:
            got = sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
            if got:
                clock.start()
            seen += got
    finally:
        consumer.close()


async def confluent_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": url.removeprefix("kafka://"), "linger.ms": LINGER_MS, "acks": "all"})
    producer.produce(topic, value)
    producer.flush()
    clock.start()
    failed: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(error)

    for i in range(count):
        callback = lat.track(i)
        report = delivered if callback is None else (lambda e, m, cb=callback: (delivered(e, m), cb()))
        while True:
            try:
                producer.produce(topic, value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush()
    if failed:
        raise RuntimeError(f"{len(failed)} confluent-kafka deliveries failed: {failed[0]}")


async def confluent_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": url.removeprefix("kafka://"), "group.id": f"bench-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        seen = 0
        while seen < count:
            got = len([m for m in consumer.consume(10_000, 1.0) if m.error() is None])
            if got:
                clock.start()
            seen += got
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------- Pulsar
async def pulsarwire_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    import pulsarwire

    async with pulsarwire.connect(url) as client, client.producer(
        topic, batching_max_messages=1000, max_pending_messages=10_000
    ) as producer:
        await producer.send(value)
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat)
        await producer.flush()
        for future in futures:
            future.result()


async def pulsarwire_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    import pulsarwire

    async with pulsarwire.connect(url) as client, client.consumer(
        topic, subscription="bench", start="earliest"
    ) as consumer:
        for _ in range(count):
            message = await consumer.receive()
            clock.start()
            await consumer.ack(message)


async def pulsar_client_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                          max_pending_messages=10_000, block_if_queue_full=True)
        producer.send(value)
        clock.start()
        failed: list[Any] = []

        def sent(result: Any, _id: Any) -> None:
            if result != pulsar.Result.Ok:
                failed.append(result)

        for i in range(count):
            callback = lat.track(i)
            producer.send_async(value, sent if callback is None else (lambda r, m, cb=callback: (sent(r, m), cb())))
        producer.flush()
        producer.close()
        if failed:
            raise RuntimeError(f"{len(failed)} pulsar-client sends failed: {failed[0]}")
    finally:
        client.close()


async def pulsar_client_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(topic, "bench", initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(count):
            message = consumer.receive()
            clock.start()
            consumer.acknowledge(message)
        consumer.close()
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------- TubeMQ


def tubemq_in_flight(size: int) -> int:
    """Sends in flight for TubeMQ, the same for both clients: 1000 small ones, about 1 MB of large ones
    (the Java client fails sends once its connection buffers ~10 MB)."""
    return max(16, min(1000, 1_000_000 // size))


async def tubemqwire_produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies) -> None:
    import tubemqwire

    in_flight = tubemq_in_flight(len(value))
    async with tubemqwire.connect(url) as client, client.producer(topic, max_in_flight=in_flight) as producer:
        await producer.send(value)
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat)
        await producer.flush()
        for future in futures:
            future.result()


async def tubemqwire_consume(url: str, topic: str, count: int, clock: Clock) -> None:
    import tubemqwire

    group = f"bench_{uuid.uuid4().hex[:8]}"
    async with tubemqwire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        for _ in range(count):
            message = await consumer.getone(timeout=120)
            clock.start()
            await consumer.ack(message)


CLIENTS: dict[str, dict[str, tuple[Produce, Consume]]] = {
    "kafka": {
        "kafkawire": (kafkawire_produce, kafkawire_consume),
        "kafkawire-group": (kafkawire_produce, kafkawire_group_consume),
        "kafkawire-share": (kafkawire_produce, kafkawire_share_consume),
        "aiokafka": (aiokafka_produce, aiokafka_consume),
        "kafka-python": (kafka_python_produce, kafka_python_consume),
        "confluent-kafka": (confluent_produce, confluent_consume),
    },
    "pulsar": {
        "pulsarwire": (pulsarwire_produce, pulsarwire_consume),
        "pulsar-client": (pulsar_client_produce, pulsar_client_consume),
    },
    "tubemq": {"tubemqwire": (tubemqwire_produce, tubemqwire_consume)},
}


def run(system: str, client: str, phase: str, url: str, topic: str, count: int, size: int) -> dict[str, Any]:
    """One client and phase; the measured figures as a JSON-ready dict."""
    produce, consume = CLIENTS[system][client]
    clock, lat = Clock(), Latencies()
    if phase == "produce":
        work = produce(url, topic, count, b"x" * size, clock, lat)
    else:
        work = consume(url, topic, count, clock)
    asyncio.run(work)
    clock.stop()
    p50, p99 = lat.percentile(0.5), lat.percentile(0.99)
    return {
        "records": count,
        "seconds": clock.seconds,
        "cpu_seconds": clock.cpu_used,
        "p50_ms": None if p50 is None else p50 * 1000,
        "p99_ms": None if p99 is None else p99 * 1000,
    }
