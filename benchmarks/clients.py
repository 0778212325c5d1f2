"""Produce and consume loops of every Python client the suite compares, one pair per client.

Each produce loop sends ``count`` copies of ``value`` and returns once all are acknowledged, every delivery
checked (a future's result or a delivery callback's error); it calls ``clock.start()`` once connected (so
connection set-up is not timed) and hands a sample of the sends to ``latencies`` (enqueue to
acknowledgement). With a ``pace`` of a fixed rate it sends no faster than that rate (the latency a
service sees), without one as fast as it can (saturation). Each consume loop reads ``count`` messages
from the start of the topic (as the member of ``group``, or with the subscription ``group`` in Pulsar);
it calls ``clock.start()`` once connected, before it is assigned the topic, so that what a client fetches
ahead before handing over its first message is measured too (TubeMQ's and the group and share consumers,
whose group must form first, start the clock at their first message). The loops use each client as its users would for
throughput: lingering batches, many sends in flight, batch getters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from measure import LINGER_MS, Clock, Latencies, Pace, batch_option, pulsar_producer_options


async def enqueue_all(
    enqueue: Callable[[bytes], Awaitable[Any]], count: int, value: bytes, lat: Latencies, pace: Pace
) -> list[Any]:
    """``count`` enqueues of ``value`` at the pace's rate; returns the futures, every ``lat.every``-th one timed."""
    futures = []
    every = lat.every
    sent = 0
    while sent < count:
        due = pace.due(sent, count)
        if due == sent:
            await asyncio.sleep(pace.idle)
            continue
        for i in range(sent, due):
            future = await enqueue(value)
            if i % every == 0:  # the same sampling test as the other clients' loops, inline
                callback = lat.track(i)
                assert callback is not None
                future.add_done_callback(callback)
            futures.append(future)
        sent = due
    return futures


def blocking_enqueue_all(
    enqueue: Callable[[bytes], concurrent.futures.Future[Any]], count: int, value: bytes, lat: Latencies, pace: Pace
) -> list[concurrent.futures.Future[Any]]:
    """``enqueue_all`` for the blocking clients: each ``enqueue`` returns a ``concurrent.futures.Future``."""
    futures = []
    every = lat.every
    sent = 0
    while sent < count:
        due = pace.due(sent, count)
        if due == sent:
            time.sleep(0.0005)
            continue
        for i in range(sent, due):
            future = enqueue(value)
            if i % every == 0:
                callback = lat.track(i)
                assert callback is not None
                future.add_done_callback(callback)
            futures.append(future)
        sent = due
    return futures


def blocking_send_all(producer: Any, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace) -> None:
    """A blocking producer's run: a warm-up send, then ``count`` enqueues (the clock started), a flush, and every
    delivery checked."""
    producer.send(value)
    clock.start()
    futures = blocking_enqueue_all(producer.enqueue, count, value, lat, pace)
    producer.flush()
    for future in futures:
        future.result()


Produce = Callable[[str, str, int, bytes, Clock, Latencies, Pace], Coroutine[Any, Any, None]]
Consume = Callable[[str, str, int, Clock, str], Coroutine[Any, Any, None]]


# ----------------------------------------------------------------------------------------------- Kafka
async def kafkawire_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    import kafkawire

    async with (
        kafkawire.connect(url) as client,
        client.producer(topic, linger_ms=LINGER_MS, **batch_option()) as producer,
    ):
        await producer.send(value)  # warm-up: metadata and connection ready
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat, pace)
        await producer.flush()
        for future in futures:
            future.result()


# Records per enqueue_many call: what a batch job or a Spark task hands over at once.
BULK = 10_000


async def kafkawire_bulk_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """kafkawire's bulk path: records already in memory, ``enqueue_many`` of up to BULK (or a
    millisecond's worth at a fixed rate) at a time, one future per call."""
    import kafkawire

    async with (
        kafkawire.connect(url) as client,
        client.producer(topic, linger_ms=LINGER_MS, **batch_option()) as producer,
    ):
        await producer.send(value)
        clock.start()
        futures = []
        sent = 0
        while sent < count:
            due = min(pace.due(sent, count), sent + BULK)
            if due == sent:
                await asyncio.sleep(pace.idle)
                continue
            future = await producer.enqueue_many([value] * (due - sent))
            callback = lat.track(0)  # every call timed: one future covers all of its records
            assert callback is not None
            future.add_done_callback(callback)
            futures.append(future)
            sent = due
        await producer.flush()
        got = sum(len(future.result()) for future in futures)
        if got != count:
            raise RuntimeError(f"enqueue_many acknowledged {got} of {count} records")


async def kafkawire_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import kafkawire

    async with kafkawire.connect(url) as client:
        clock.start()  # connected: from here on, assignment, fetching and decoding are all measured
        async with client.consumer(topic, start="earliest") as consumer:
            seen = 0
            while seen < count:
                seen += len(await consumer.getmany(timeout_ms=1000, max_records=100_000))


async def kafkawire_group_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    """kafkawire in a consumer group of its own (the share consumer's comparison)."""
    import kafkawire

    async with kafkawire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        seen = 0
        while seen < count:
            got = len(await consumer.getmany(timeout_ms=1000, max_records=100_000))
            if got:
                clock.start()
            seen += got


async def kafkawire_share_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    """kafkawire as the one member of a share group of its own (implicit acknowledgement), started at the
    beginning of the topic."""
    import kafkawire

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


async def kafkawire_sync_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """kafkawire's blocking API (``kafkawire.sync``), as a script or a Flask worker would send."""
    import kafkawire.sync

    with (
        kafkawire.sync.connect(url) as client,
        client.producer(topic, linger_ms=LINGER_MS, **batch_option()) as producer,
    ):
        blocking_send_all(producer, count, value, clock, lat, pace)


async def kafkawire_sync_bulk_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """The blocking producer's bulk path: ``enqueue_many`` of up to BULK records (or a millisecond's worth at a
    fixed rate) per call, one future per call, as a batch script holding its records would send."""
    import kafkawire.sync

    with (
        kafkawire.sync.connect(url) as client,
        client.producer(topic, linger_ms=LINGER_MS, **batch_option()) as producer,
    ):
        producer.send(value)
        clock.start()
        futures = []
        sent = 0
        while sent < count:
            due = min(pace.due(sent, count), sent + BULK)
            if due == sent:
                time.sleep(0.0005)
                continue
            future = producer.enqueue_many([value] * (due - sent))
            callback = lat.track(0)  # every call timed: one future covers all of its records
            assert callback is not None
            future.add_done_callback(callback)
            futures.append(future)
            sent = due
        producer.flush()
        got = sum(len(future.result()) for future in futures)
        if got != count:
            raise RuntimeError(f"enqueue_many acknowledged {got} of {count} records")


async def kafkawire_sync_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import kafkawire.sync

    with kafkawire.sync.connect(url) as client:
        clock.start()
        with client.consumer(topic, start="earliest") as consumer:
            seen = 0
            while seen < count:
                seen += len(consumer.getmany(timeout=1, max_records=100_000))


async def aiokafka_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=url.removeprefix("kafka://"), linger_ms=LINGER_MS, acks="all",
        **batch_option("max_batch_size"),
    )
    await producer.start()
    try:
        await (await producer.send(topic, value))
        clock.start()
        futures = await enqueue_all(lambda v: producer.send(topic, v), count, value, lat, pace)
        await producer.flush()
        for future in futures:
            future.result()
    finally:
        await producer.stop()


async def aiokafka_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(bootstrap_servers=url.removeprefix("kafka://"), auto_offset_reset="earliest")
    await consumer.start()
    try:
        clock.start()  # connected: assignment (without a group: every partition), fetching and decoding measured
        consumer.subscribe([topic])
        seen = 0
        while seen < count:
            batches = await consumer.getmany(timeout_ms=1000, max_records=100_000)
            seen += sum(len(b) for b in batches.values())
    finally:
        await consumer.stop()


async def kafka_python_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=url.removeprefix("kafka://"), linger_ms=LINGER_MS, acks="all", **batch_option()
    )
    try:
        producer.send(topic, value).get(timeout=60)
        clock.start()
        futures = []
        sent = 0
        while sent < count:
            due = pace.due(sent, count)
            if due == sent:
                time.sleep(0.0005)
                continue
            for i in range(sent, due):
                future = producer.send(topic, value)
                callback = lat.track(i)
                if callback is not None:
                    future.add_callback(callback)
                futures.append(future)
            sent = due
        producer.flush()
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close()


async def kafka_python_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=url.removeprefix("kafka://"),
        auto_offset_reset="earliest",
        group_id=None,
        max_poll_records=100_000,
    )
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        clock.start()
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        seen = 0
        while seen < count:
            seen += sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
    finally:
        consumer.close()


def confluent_write(
    url: str, topic: str, count: int, value: bytes, lat: Latencies, pace: Pace, ready: Callable[[], None]
) -> None:
    """confluent-kafka as its users produce: produce() with a delivery callback, poll(0) after each, poll on
    a full queue, flush at the end; every delivery's error checked."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": url.removeprefix("kafka://"), "linger.ms": LINGER_MS, "acks": "all"})
    producer.produce(topic, value)
    producer.flush()  # warm-up: metadata and connection ready
    ready()
    failed: list[Any] = []
    delivered_count = 0

    def delivered(error: Any, _message: Any) -> None:
        nonlocal delivered_count
        delivered_count += 1
        if error is not None:
            failed.append(error)

    lat_every = lat.every
    sent = 0
    while sent < count:
        due = pace.due(sent, count)
        if due == sent:
            producer.poll(0.0005)
            continue
        for i in range(sent, due):
            callback = lat.track(i) if i % lat_every == 0 else None
            report = delivered if callback is None else (lambda e, m, cb=callback: (delivered(e, m), cb()))
            while True:
                try:
                    producer.produce(topic, value, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        sent = due
    producer.flush()
    if failed or delivered_count != count:
        raise RuntimeError(f"confluent-kafka: {delivered_count} of {count} delivered, {len(failed)} failed")


async def confluent_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    confluent_write(url, topic, count, value, lat, pace, clock.start)


async def confluent_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": url.removeprefix("kafka://"),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            # librdkafka's default (1000 ms since 2.4) holds a partition's next fetch back a whole second
            # whenever its prefetch queue is full, which a reader taking 10,000 at a time hits at once: 500,000
            # x 100 B read at 0.22-0.36 million records/s with it, 1.25-1.5 million with 10 ms. Tuned as a
            # user reading for throughput would.
            "fetch.queue.backoff.ms": 10,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        # Connected, metadata known; assigned rather than subscribed, as the others read (no group to join).
        clock.start()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        seen = 0
        while seen < count:
            # Never more than what is left: consume(n) waits its whole timeout for n messages.
            got = consumer.consume(min(10_000, count - seen), 1.0)
            seen += len([m for m in got if m.error() is None])
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------- Pulsar
async def pulsarwire_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    import pulsarwire

    async with (
        pulsarwire.connect(url) as client,
        client.producer(topic, **pulsar_producer_options()) as producer,
    ):
        await producer.send(value)
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat, pace)
        await producer.flush()
        for future in futures:
            future.result()


async def pulsarwire_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import pulsarwire

    async with pulsarwire.connect(url) as client:
        clock.start()  # connected: subscribing, receiving and acknowledging are measured
        async with client.consumer(topic, subscription=group, start="earliest") as consumer:
            for _ in range(count):
                await consumer.ack(await consumer.receive())


async def pulsarwire_sync_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """pulsarwire's blocking API (``pulsarwire.sync``), pulsar-client's synchronous users' counterpart."""
    import pulsarwire.sync

    with (
        pulsarwire.sync.connect(url) as client,
        client.producer(topic, **pulsar_producer_options()) as producer,
    ):
        blocking_send_all(producer, count, value, clock, lat, pace)


async def pulsarwire_sync_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import pulsarwire.sync

    with pulsarwire.sync.connect(url) as client:
        clock.start()
        with client.consumer(topic, subscription=group, start="earliest") as consumer:
            for _ in range(count):
                consumer.ack(consumer.receive())


def pulsar_client_write(
    url: str, topic: str, count: int, value: bytes, lat: Latencies, pace: Pace, ready: Callable[[], None]
) -> None:
    """pulsar-client as its users produce: send_async with a callback whose result is checked, flush."""
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        # block_if_queue_full: its default (off) fails a send past max_pending_messages; users who send as fast
        # as they can turn it on.
        producer = client.create_producer(
            topic, batching_enabled=True, block_if_queue_full=True, **pulsar_producer_options()
        )
        producer.send(value)
        ready()
        failed: list[Any] = []
        acknowledged = 0

        def sent(result: Any, _id: Any) -> None:
            nonlocal acknowledged
            acknowledged += 1
            if result != pulsar.Result.Ok:
                failed.append(result)

        done = 0
        while done < count:
            due = pace.due(done, count)
            if due == done:
                time.sleep(0.0005)
                continue
            for i in range(done, due):
                callback = lat.track(i)
                producer.send_async(value, sent if callback is None else (lambda r, m, cb=callback: (sent(r, m), cb())))
            done = due
        producer.flush()
        producer.close()
        if failed or acknowledged != count:
            raise RuntimeError(f"pulsar-client: {acknowledged} of {count} acknowledged, {len(failed)} failed")
    finally:
        client.close()


async def pulsar_client_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    pulsar_client_write(url, topic, count, value, lat, pace, clock.start)


async def pulsar_client_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.get_topic_partitions(topic)  # connected
        clock.start()
        consumer = client.subscribe(topic, group, initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(count):
            consumer.acknowledge(consumer.receive())
        consumer.close()
    finally:
        client.close()


async def pulsar_client_asyncio_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """pulsar-client's asyncio API (``pulsar.asyncio``) as its users produce: a task per ``send``, at most the
    producer's ``max_pending_messages`` of them awaiting the broker at once (past that, with its default
    ``block_if_queue_full`` off, a send fails; turned on, it would block the event loop's thread), every
    result checked."""
    import pulsar
    import pulsar.asyncio

    options = pulsar_producer_options()
    window = asyncio.Semaphore(options.get("max_pending_messages", 1000))
    client = pulsar.asyncio.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = await client.create_producer(topic, batching_enabled=True, **options)
        await producer.send(value)
        clock.start()
        loop = asyncio.get_running_loop()

        def released(_: Any) -> None:
            window.release()

        async def enqueue(payload: bytes) -> asyncio.Task[Any]:
            await window.acquire()
            task = loop.create_task(producer.send(payload))
            task.add_done_callback(released)
            return task

        tasks = await enqueue_all(enqueue, count, value, lat, pace)
        # No producer.flush(): awaiting every send is the flush (a batch goes within its 10 ms delay), and
        # pulsar-client 3.13's flush on this API has held the event loop's thread in flush_async for good
        # (seen here at 50,000 sends, all acknowledged or not).
        await asyncio.gather(*tasks)  # every send's result: the first failure raises
        await producer.close()
    finally:
        await client.close()


async def pulsar_client_asyncio_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import pulsar
    import pulsar.asyncio

    client = pulsar.asyncio.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        await client.get_topic_partitions(topic)  # connected
        clock.start()
        consumer = await client.subscribe(topic, group, initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(count):
            await consumer.acknowledge(await consumer.receive())
        await consumer.close()
    finally:
        await client.close()


# ---------------------------------------------------------------------------------------------- TubeMQ


def tubemq_in_flight(size: int) -> int:
    """Sends in flight for TubeMQ, the same for both clients: 1000 small ones, about 1 MB of large ones
    (the Java client fails sends once its connection buffers ~10 MB)."""
    return max(16, min(1000, 1_000_000 // size))


async def tubemqwire_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    import tubemqwire

    in_flight = tubemq_in_flight(len(value))
    async with tubemqwire.connect(url) as client, client.producer(topic, max_in_flight=in_flight) as producer:
        await producer.send(value)
        clock.start()
        futures = await enqueue_all(producer.enqueue, count, value, lat, pace)
        await producer.flush()
        for future in futures:
            future.result()


async def tubemqwire_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import tubemqwire

    async with tubemqwire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        for _ in range(count):
            message = await consumer.getone(timeout=120)
            clock.start()
            await consumer.ack(message)


async def tubemqwire_sync_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    """tubemqwire's blocking API (``tubemqwire.sync``)."""
    import tubemqwire.sync

    in_flight = tubemq_in_flight(len(value))
    with tubemqwire.sync.connect(url) as client, client.producer(topic, max_in_flight=in_flight) as producer:
        blocking_send_all(producer, count, value, clock, lat, pace)


async def tubemqwire_sync_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import tubemqwire.sync

    with tubemqwire.sync.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        for _ in range(count):
            message = consumer.receive(timeout=120)
            clock.start()
            consumer.ack(message)


async def _none_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    raise RuntimeError("this client only consumes")


async def _none_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    raise RuntimeError("this client only produces")


async def kafka_ceiling_produce(
    url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace
) -> None:
    import ceiling

    await ceiling.produce(url, topic, count, value, clock, lat, pace)


async def kafka_ceiling_consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    import ceiling

    await ceiling.consume(url, topic, count, clock, group)


# Producer-only and consumer-only variants: the suite runs only the phase each one has.
PRODUCE_ONLY = {"kafkawire-bulk", "kafkawire-sync-bulk", "kafka-java-perf"}
CONSUME_ONLY = {"kafkawire-group", "kafkawire-share"}
# Sends without a pace (no fixed-rate runs): the ceiling writes its requests back to back.
UNPACED = {"kafka-ceiling"}
# The clients whose loops run on the caller's event loop: each is measured under every loop the suite is
# given (``--loops``), named ``CLIENT@LOOP`` under any loop but asyncio's own. The others (librdkafka's,
# the Pulsar C++ client's, the blocking APIs' threads, the Java tools) bring their own threads and run once.
ON_LOOPS = {"kafkawire", "kafkawire-bulk", "kafkawire-group", "kafkawire-share", "aiokafka", "pulsarwire",
            "pulsar-client-asyncio", "tubemqwire"}
LOOPS = ("asyncio", "uvloop")
# How long a paced sender on the loop sleeps when no send is due. uvloop's timers count whole milliseconds:
# there a 0.5 ms sleep is a timer of 0 ms, and the sender woke 440,000 times a second on a whole core where
# on asyncio's loop it woke 900 times on 2 % of one, which is what the fixed-rate runs measured under uvloop.
IDLE_SECONDS = {"asyncio": 0.0005, "uvloop": 0.001}


def client_loop(name: str) -> tuple[str, str]:
    """The client and the event loop a suite client name stands for: ``kafkawire@uvloop`` is kafkawire
    under uvloop, a name without ``@`` the client under asyncio's own loop."""
    client, _, loop = name.partition("@")
    return client, loop or "asyncio"


def on_loop(client: str, loop: str) -> str:
    """The suite's name of ``client`` under ``loop`` (asyncio's own loop keeps the plain name)."""
    return client if loop == "asyncio" else f"{client}@{loop}"


def run_on_loop(loop: str, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` to its end on a new event loop of the kind ``loop`` names."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(work)
    elif loop == "asyncio":
        asyncio.run(work)
    else:
        work.close()
        raise RuntimeError(f"unknown event loop {loop!r}: one of {', '.join(LOOPS)}")

CLIENTS: dict[str, dict[str, tuple[Produce, Consume]]] = {
    "kafka": {
        "kafkawire": (kafkawire_produce, kafkawire_consume),
        "kafkawire-bulk": (kafkawire_bulk_produce, _none_consume),
        "kafkawire-group": (_none_produce, kafkawire_group_consume),
        "kafkawire-share": (_none_produce, kafkawire_share_consume),
        "kafkawire-sync": (kafkawire_sync_produce, kafkawire_sync_consume),
        "kafkawire-sync-bulk": (kafkawire_sync_bulk_produce, _none_consume),
        "aiokafka": (aiokafka_produce, aiokafka_consume),
        "kafka-python": (kafka_python_produce, kafka_python_consume),
        "confluent-kafka": (confluent_produce, confluent_consume),
        "kafka-ceiling": (kafka_ceiling_produce, kafka_ceiling_consume),
    },
    "pulsar": {
        "pulsarwire": (pulsarwire_produce, pulsarwire_consume),
        "pulsarwire-sync": (pulsarwire_sync_produce, pulsarwire_sync_consume),
        "pulsar-client": (pulsar_client_produce, pulsar_client_consume),
        "pulsar-client-asyncio": (pulsar_client_asyncio_produce, pulsar_client_asyncio_consume),
    },
    "tubemq": {
        "tubemqwire": (tubemqwire_produce, tubemqwire_consume),
        "tubemqwire-sync": (tubemqwire_sync_produce, tubemqwire_sync_consume),
    },
}


def seed(system: str, url: str, topic: str, count: int, size: int) -> None:
    """Write the topic every consumer of a setting reads, once: with confluent-kafka for Kafka, with
    pulsar-client for Pulsar, with tubemqwire for TubeMQ (the Java client's large sends are refused)."""
    value, lat, pace = b"x" * size, Latencies(every=1 << 62), Pace(None)
    if system == "kafka":
        confluent_write(url, topic, count, value, lat, pace, lambda: None)
    elif system == "pulsar":
        pulsar_client_write(url, topic, count, value, lat, pace, lambda: None)
    else:
        asyncio.run(tubemqwire_produce(url, topic, count, value, Clock(), lat, pace))


def run(
    system: str,
    client: str,
    phase: str,
    url: str,
    topic: str,
    count: int,
    size: int,
    rate: float | None = None,
    group: str = "bench",
) -> dict[str, Any]:
    """One client and phase (``CLIENT@LOOP``: under that event loop); the measured figures as a JSON-ready dict."""
    client, loop = client_loop(client)
    produce, consume = CLIENTS[system][client]
    clock, lat = Clock(), Latencies()
    if phase == "seed":
        seed(system, url, topic, count, size)
        return {"records": count}
    if phase == "produce":
        work = produce(url, topic, count, b"x" * size, clock, lat, Pace(rate, IDLE_SECONDS.get(loop, 0.0005)))
    else:
        work = consume(url, topic, count, clock, group)
    run_on_loop(loop, work)
    clock.stop()
    p50, p99 = lat.percentile(0.5), lat.percentile(0.99)
    return {
        "records": count,
        "seconds": clock.seconds,
        "cpu_seconds": clock.cpu_used,
        "broker_cpu_seconds": clock.broker_cpu_used,
        "broker_jit_cpu_seconds": clock.broker_jit_cpu_used,
        "p50_ms": None if p50 is None else p50 * 1000,
        "p99_ms": None if p99 is None else p99 * 1000,
        "latency_bins": lat.histogram() if lat.samples else None,
    }
