"""The kafkawire Spark data source against a real Kafka broker."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql.functions import spark_partition_id

import kafkawire
from kafkawire.partitioner import partition_for_key
from mqwire.testing.endpoints import KafkaBroker
from sparkwire.kafka import KafkaBatchReader
from tests.integration.spark_session import local_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

# Spark's own Kafka source, resolved by Spark from Maven Central. 4.2.0 is the newest release there (the
# 4.3.0 connector is not published yet); it runs on the installed pyspark for the batch read compared here.
SPARK_KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"




@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session(
        "sparkwire-tests",
        # Packages are resolved when the JVM starts: whichever Spark test module runs first brings it up.
        **{"spark.jars.packages": SPARK_KAFKA_PACKAGE},
    )


async def _create(url: str, partitions: int) -> str:
    name = f"sw-{uuid.uuid4().hex[:10]}"
    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.create_topic(name, partitions=partitions)
    return name


async def _produce(url: str, topic: str, records: list[tuple[bytes, bytes, dict[str, bytes]]]) -> None:
    async with kafkawire.connect(url) as client:
        producer = client.producer(topic)
        try:
            for key, value, headers in records:
                await producer.enqueue(value, key=key, headers=headers)
            await producer.flush()
        finally:
            await producer.close()


async def _consume(url: str, topic: str, partitions: int, count: int) -> list[Any]:
    async with kafkawire.connect(url) as client:
        consumer = client.consumer(topic, partitions=list(range(partitions)), enable_auto_commit=False)
        try:
            await consumer.start()
            for p in range(partitions):
                consumer.seek((topic, p), 0)
            got: list[Any] = []
            for _ in range(60):
                got.extend(await consumer.getmany(timeout_ms=500))
                if len(got) >= count:
                    break
            return got
        finally:
            await consumer.close()


def records(count: int) -> list[tuple[bytes, bytes, dict[str, bytes]]]:
    return [(b"k%d" % (i % 17), b"value-%d" % i, {"i": str(i).encode()}) for i in range(count)]


def test_batch_read_counts_and_contents(spark: Any, kafka_broker: KafkaBroker) -> None:
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 3))
    sent = records(3000)
    asyncio.run(_produce(url, topic, sent))

    df = spark.read.format("kafkawire").option("url", url).option("subscribe", topic).load()
    rows = df.collect()

    assert len(rows) == len(sent)
    got = sorted((bytes(r.key), bytes(r.value), dict(r.headers)) for r in rows)
    want = sorted((k, v, h) for k, v, h in sent)
    assert [(k, v) for k, v, _ in got] == [(k, v) for k, v, _ in want]
    assert all({k: bytes(v) for k, v in g[2].items()} == w[2] for g, w in zip(got, want, strict=True))
    assert {r.partition for r in rows} == {0, 1, 2}
    assert all(r.topic == topic for r in rows)
    # Offsets per partition are the contiguous range the producer filled.
    for p in range(3):
        offsets = sorted(r.offset for r in rows if r.partition == p)
        assert offsets == list(range(len(offsets)))


def test_the_same_rows_as_sparks_own_kafka_source(spark: Any, kafka_broker: KafkaBroker) -> None:
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 3))
    asyncio.run(_produce(url, topic, records(2000)))

    theirs = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", url.removeprefix("kafka://"))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    ours = spark.read.format("kafkawire").option("url", url).option("subscribe", topic).load()

    def rows(df: Any) -> list[tuple[Any, ...]]:
        return sorted(
            (bytes(r.key), bytes(r.value), r.topic, r.partition, r.offset, r.timestamp)
            for r in df.select("key", "value", "topic", "partition", "offset", "timestamp").collect()
        )

    expected = rows(theirs)
    assert len(expected) == 2000
    assert rows(ours) == expected
    # Headers: Spark's source gives a list of (key, value) structs, ours a map.
    their_headers = sorted(
        (r.partition, r.offset, [(h.key, bytes(h.value)) for h in r.headers]) for r in theirs.collect()
    )
    our_headers = sorted((r.partition, r.offset, [(k, bytes(v)) for k, v in r.headers.items()]) for r in ours.collect())
    assert our_headers == their_headers


def test_batch_read_split_by_max_records(spark: Any, kafka_broker: KafkaBroker) -> None:
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 1))
    asyncio.run(_produce(url, topic, records(1000)))

    df = (
        spark.read.format("kafkawire")
        .option("kafka.bootstrap.servers", url.removeprefix("kafka://"))
        .option("subscribe", topic)
        .option("maxRecordsPerPartition", "300")
        .load()
    )
    ranges = KafkaBatchReader({"url": url, "subscribe": topic, "maxRecordsPerPartition": "300"}).partitions()
    bounds = [(r.partition, r.start, r.end) for r in ranges]
    assert bounds == [(0, 0, 300), (0, 300, 600), (0, 600, 900), (0, 900, 1000)]
    assert df.select(spark_partition_id()).distinct().count() == 4
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(1000))

    bounded = (
        spark.read.format("kafkawire")
        .option("url", url)
        .option("subscribe", topic)
        .option("startingOffsets", f'{{"{topic}": {{"0": 100}}}}')
        .option("endingOffsets", f'{{"{topic}": {{"0": 250}}}}')
        .load()
    )
    assert sorted(r.offset for r in bounded.select("offset").collect()) == list(range(100, 250))


def test_batch_write_read_back_with_client(spark: Any, kafka_broker: KafkaBroker) -> None:
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 2))
    data = [(b"key-%d" % i, b"payload-%d" % i) for i in range(2000)]
    df = spark.createDataFrame(data, "key binary, value binary").repartition(4)
    df.write.format("kafkawire").option("url", url).option("topic", topic).mode("append").save()

    got = asyncio.run(_consume(url, topic, 2, len(data)))
    assert sorted((m.key, m.value) for m in got) == sorted(data)


def _stream_to_parquet(spark: Any, url: str, topic: str, out: str, checkpoint: str) -> Any:
    """The query, not started: the topic from its start, 700 records per micro-batch at most, into parquet."""
    stream = (
        spark.readStream.format("kafkawire")
        .option("url", url)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "700")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
    )
    return stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)


def _run_stream(spark: Any, url: str, topic: str, out: str, checkpoint: str) -> None:
    query = _stream_to_parquet(spark, url, topic, out, checkpoint)
    running = query.trigger(processingTime="100 milliseconds").start()
    try:
        running.processAllAvailable()
    finally:
        running.stop()


def test_stream_restart_from_checkpoint_exactly_once(spark: Any, kafka_broker: KafkaBroker, tmp_path: Any) -> None:
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 2))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    first = [(b"k", b"first-%d" % i, {}) for i in range(1500)]
    asyncio.run(_produce(url, topic, first))
    _run_stream(spark, url, topic, out, checkpoint)
    assert spark.read.parquet(out).count() == 1500
    # maxOffsetsPerTrigger=700 splits 1500 records into three micro-batches.
    assert len([f for f in os.listdir(os.path.join(checkpoint, "offsets")) if f.isdigit()]) == 3

    second = [(b"k", b"second-%d" % i, {}) for i in range(1200)]
    asyncio.run(_produce(url, topic, second))
    _run_stream(spark, url, topic, out, checkpoint)

    values = [r.value for r in spark.read.parquet(out).collect()]
    assert sorted(values) == sorted(v.decode() for _, v, _ in first + second)


def test_available_now_reads_what_was_there_in_micro_batches_of_max_offsets_per_trigger(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Any
) -> None:
    # The ends are taken when the query starts; maxOffsetsPerTrigger still cuts the catch-up into micro-batches
    # (a source without availableNow support would be read in one batch, the limit ignored).
    url = kafka_broker.url
    topic = asyncio.run(_create(url, 2))
    sent = records(1500)
    asyncio.run(_produce(url, topic, sent))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    query = _stream_to_parquet(spark, url, topic, out, checkpoint)
    query.trigger(availableNow=True).start().awaitTermination(120)
    assert sorted(r.value for r in spark.read.parquet(out).collect()) == sorted(v.decode() for _, v, _ in sent)
    assert len([f for f in os.listdir(os.path.join(checkpoint, "offsets")) if f.isdigit()]) == 3


def test_batch_write_per_row_topics_keys_headers_read_back_exactly(spark: Any, kafka_broker: KafkaBroker) -> None:
    # More rows per task than one bulk call takes, two topics by column, some null keys, headers and values:
    # every record arrives once, with its key, value and headers, keyed ones on their key's partition.
    url = kafka_broker.url
    first, second = asyncio.run(_create(url, 3)), asyncio.run(_create(url, 2))
    rows = []
    for i in range(24_000):
        key = None if i % 5 == 0 else b"k%d" % (i % 101)
        value = None if i % 997 == 0 else b"v%d" % i
        headers = None if i % 3 == 0 else {"i": str(i).encode(), "h": b"x"}
        rows.append((key, value, first if i % 2 else second, i % 7, headers))
    schema = "key binary, value binary, topic string, partition int, headers map<string, binary>"
    df = spark.createDataFrame(rows, schema).repartition(2)
    df.write.format("kafkawire").option("url", url).mode("append").save()

    for topic, partitions in ((first, 3), (second, 2)):
        expected = Counter((k, v, tuple(sorted((h or {}).items()))) for k, v, t, _, h in rows if t == topic)
        got = asyncio.run(_consume(url, topic, partitions, sum(expected.values())))
        assert Counter((m.key, m.value, tuple(sorted(dict(m.headers).items()))) for m in got) == expected
        for m in got:
            if m.key is not None:
                assert m.partition == partition_for_key(m.key, partitions)


def test_batch_write_fails_the_task_when_a_delivery_fails(spark: Any, kafka_broker: KafkaBroker) -> None:
    # The broker refuses records over the topic's max.message.bytes: the write must fail, not report success.
    url = kafka_broker.url
    name = f"sw-{uuid.uuid4().hex[:10]}"

    async def create() -> None:
        async with kafkawire.connect(url) as client, client.admin() as admin:
            await admin.create_topic(name, partitions=1, configs={"max.message.bytes": "1000"})

    asyncio.run(create())
    df = spark.createDataFrame([(b"x" * 4000,)] * 20, "value binary").repartition(1)
    with pytest.raises(Exception, match="MessageTooLargeError"):
        df.write.format("kafkawire").option("url", url).option("topic", name).mode("append").save()


def test_stream_write_copies_keys_values_and_headers(spark: Any, kafka_broker: KafkaBroker, tmp_path: Any) -> None:
    # A stream from one topic into another (option topic wins over the rows' topic column): the stream writer
    # hands Rows, a chunk at a time, to the producer's bulk call.
    url = kafka_broker.url
    source, target = asyncio.run(_create(url, 2)), asyncio.run(_create(url, 3))
    sent = records(3000)
    asyncio.run(_produce(url, source, sent))
    stream = (
        spark.readStream.format("kafkawire")
        .option("url", url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "1000")
        .load()
    )
    query = (
        stream.writeStream.format("kafkawire")
        .option("url", url)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    got = asyncio.run(_consume(url, target, 3, len(sent)))
    assert Counter((m.key, m.value, tuple(dict(m.headers).items())) for m in got) == Counter(
        (k, v, tuple(h.items())) for k, v, h in sent
    )
    assert all(m.partition == partition_for_key(m.key, 3) for m in got)


def test_writer_tasks_in_one_worker_share_a_client_and_a_failed_task_drops_it(kafka_broker: KafkaBroker) -> None:
    # As Spark runs tasks one after another in a reused Python worker: the writer's write() called in turn.
    import pyarrow as pa  # type: ignore[import-untyped]

    from sparkwire import worker_session
    from sparkwire.kafka import KafkaDataSource

    url = kafka_broker.url
    topic = asyncio.run(_create(url, 2))
    writer = KafkaDataSource({"url": url, "topic": topic}).writer(None, False)  # type: ignore[arg-type]
    kept = worker_session.SESSION._kept

    def batch(start: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"value": [b"v%d" % i for i in range(start, start + 500)]})

    assert writer.write(iter([batch(0)])).written == 500  # type: ignore[attr-defined]
    (first,) = [entry.value for key, entry in kept.items() if url in key]
    assert writer.write(iter([batch(500), batch(1000)])).written == 1000  # type: ignore[attr-defined]
    (second,) = [entry.value for key, entry in kept.items() if url in key]
    assert second is first  # the second task used the client the first one left open

    def failing() -> Iterator[pa.RecordBatch]:
        yield batch(1500)
        raise RuntimeError("the task's input failed")

    with pytest.raises(RuntimeError, match="input failed"):
        writer.write(failing())
    assert not [key for key in kept if url in key]  # closed, not handed on
    assert first._client.closed  # type: ignore[attr-defined]
    assert writer.write(iter([batch(2000)])).written == 500  # type: ignore[attr-defined]
    (third,) = [entry.value for key, entry in kept.items() if url in key]
    assert third is not first
    got = asyncio.run(_consume(url, topic, 2, 2000))
    values = Counter(bytes(m.value) for m in got)
    # Every acknowledged row once; the failed task's rows may have gone out before it failed (at least once).
    assert all(values[b"v%d" % i] == 1 for i in [*range(1500), *range(2000, 2500)])
    worker_session.SESSION.close()
