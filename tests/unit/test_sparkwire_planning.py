"""sparkwire without brokers: minPartitions splits, subscribePattern, checkpoints of another source or topic,
and the bounded batches a reader hands over while it fetches."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from mqwire.common.errors import RequestTimeoutError
from pulsarwire.message import MessageId
from sparkwire import batches, pulsar_read
from sparkwire import options as opts
from sparkwire.kafka import KafkaBatchReader, split_ranges
from sparkwire.kafka_read import OffsetRange
from sparkwire.kafka_stream import capped
from sparkwire.kafka_stream import checked as kafka_checked
from sparkwire.pulsar_read import PulsarBatchReader
from sparkwire.pulsar_stream import checked as pulsar_checked
from sparkwire.tubemq_stream import TubeMQStreamReader


def test_min_partitions_splits_in_proportion_and_covers_every_offset() -> None:
    ranges = [OffsetRange("t", 0, 0, 900), OffsetRange("t", 1, 100, 200), OffsetRange("u", 0, 5, 5 + 1)]
    split = split_ranges(ranges, 10)
    assert len(split) >= 10
    for source in ranges:
        parts = [r for r in split if (r.topic, r.partition) == (source.topic, source.partition)]
        assert parts[0].start == source.start and parts[-1].end == source.end
        assert all(a.end == b.start for a, b in itertools.pairwise(parts))
        sizes = [r.end - r.start for r in parts]
        assert max(sizes) - min(sizes) <= 1
    assert len([r for r in split if r.partition == 0 and r.topic == "t"]) == 9  # 900 of 1001 records
    assert split_ranges(ranges, 2) == ranges  # already enough


def test_subscribe_and_subscribe_pattern_exclude_each_other() -> None:
    pattern = opts.pattern({"subscribepattern": "orders-.*"})
    assert pattern is not None and opts.matching(["orders-1", "x-orders-2", "orders-"], pattern) == [
        "orders-",
        "orders-1",
    ]
    with pytest.raises(ValueError, match="subscribe and subscribePattern"):
        opts.pattern({"subscribe": "a", "subscribePattern": "b"})
    with pytest.raises(ValueError, match="subscribePattern is not a regular expression"):
        opts.pattern({"subscribePattern": "("})
    with pytest.raises(ValueError, match="option subscribe"):
        KafkaBatchReader({"url": "kafka://h:1"})
    with pytest.raises(ValueError, match="option minPartitions must be positive"):
        KafkaBatchReader({"url": "kafka://h:1", "subscribe": "t", "minPartitions": "0"})
    with pytest.raises(ValueError, match="minPartitions is not supported by pulsarwire"):
        PulsarBatchReader({"url": "pulsar://h:1", "subscribe": "t", "minPartitions": "4"})
    with pytest.raises(ValueError, match="tenant and namespace must be literal"):
        PulsarBatchReader({"url": "pulsar://h:1", "subscribePattern": "persistent://public/.*/x"})


def test_a_checkpoint_of_another_source_or_topic_is_refused() -> None:
    kafka = {"url": "kafka://h:1", "subscribe": "a,b"}
    assert kafka_checked({"a": {"0": 5}}, kafka) == {"a": {"0": 5}}
    with pytest.raises(ValueError, match="topic 'c'"):
        kafka_checked({"c": {"0": 5}}, kafka)
    with pytest.raises(ValueError, match="not written by the kafkawire source"):
        kafka_checked({"persistent://public/default/a": "CAEQAQ=="}, kafka)
    assert kafka_checked({"a-1": {"0": 1}}, {"url": "kafka://h:1", "subscribePattern": "a-.*"})

    pulsar = {"url": "pulsar://h:1", "subscribe": "persistent://public/default/a"}
    assert pulsar_checked({"persistent://public/default/a-partition-1": "earliest"}, pulsar)
    with pytest.raises(ValueError, match="not written by the pulsarwire source"):
        pulsar_checked({"a": {"0": 1}}, pulsar)
    with pytest.raises(ValueError, match="does not subscribe"):
        pulsar_checked({"persistent://public/default/b": "earliest"}, pulsar)

    tubemq = TubeMQStreamReader({"url": "tubemq://h:1", "subscribe": "a"})
    assert tubemq.checked({"1:a:0": 4}) == {"1:a:0": 4}
    with pytest.raises(ValueError, match="topic 'b'"):
        tubemq.checked({"1:b:0": 4})
    with pytest.raises(ValueError, match="not written by the tubemqwire source"):
        tubemq.checked({"a": {"0": 1}})


def _to_batch(rows: Any) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"value": [r.value for r in rows]})


def test_batches_are_bounded_by_rows_and_bytes_and_handed_over_while_reading(monkeypatch: Any) -> None:
    monkeypatch.setattr(batches, "ROWS_PER_BATCH", 100)
    monkeypatch.setattr(batches, "BYTES_PER_BATCH", 1000)
    produced: list[int] = []
    closed: list[bool] = []

    async def read(sizes: list[int]) -> AsyncIterator[pa.RecordBatch]:
        rows = batches.Rows(_to_batch, batches.size_of)
        try:
            for i, size in enumerate(sizes):
                produced.append(i)
                rows.add(SimpleNamespace(value=b"x" * size, key=None))
                if rows.full:
                    yield rows.take()
            if len(rows):
                yield rows.take()
        finally:
            closed.append(True)

    got = batches.drive(lambda: read([1] * 250))
    first = next(got)
    assert first.num_rows == 100 and len(produced) == 100  # handed over before the rest was read
    assert [b.num_rows for b in got] == [100, 50]
    assert [b.num_rows for b in batches.drive(lambda: read([300] * 7))] == [4, 3]  # 1,200 bytes > 1,000

    early = batches.drive(lambda: read([1] * 1000))
    next(early)
    early.close()  # Spark stopped early (a limit): the reader is closed, its client with it
    assert closed[-1] is True and len(produced) < 1000 + 250 + 7


@pytest.mark.parametrize("seed", range(20))
def test_a_whole_fetch_held_at_once_is_cut_where_one_message_at_a_time_would_be(monkeypatch: Any, seed: int) -> None:
    monkeypatch.setattr(batches, "ROWS_PER_BATCH", 50)
    monkeypatch.setattr(batches, "BYTES_PER_BATCH", 1000)
    rng = random.Random(seed)
    fetches = [
        [
            SimpleNamespace(value=b"x" * rng.choice([0, 1, 7, 40, 300, 999, 1000, 2500]), key=None)
            for _ in range(rng.randrange(0, 130))
        ]
        for _ in range(rng.randrange(1, 8))
    ]

    def values(batch: pa.RecordBatch) -> list[bytes]:
        return list(batch.column("value").to_pylist())

    one_by_one = batches.Rows(_to_batch, batches.size_of)
    expected: list[list[bytes]] = []
    for fetch in fetches:
        for message in fetch:
            one_by_one.add(message)
            if one_by_one.full:
                expected.append(values(one_by_one.take()))
    bulk = batches.Rows(_to_batch, batches.size_of)
    got = [values(batch) for fetch in fetches for batch in bulk.extend(fetch)]
    assert got == expected
    assert len(bulk) == len(one_by_one)
    if len(bulk):
        assert values(bulk.take()) == values(one_by_one.take())


class _StubReader:
    """A reader whose last-id lookup fails as a held request does, ``failures`` times, then answers."""

    def __init__(self, outcomes: list[BaseException | MessageId]) -> None:
        self._outcomes = outcomes
        self._consumers = [self]

    async def __aenter__(self) -> _StubReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def get_last_message_id(self) -> MessageId:
        outcome = self._outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


@pytest.mark.parametrize("failures", [0, 1, 2, 3])
def test_the_last_message_id_lookup_is_tried_three_times(monkeypatch: Any, failures: int) -> None:
    monkeypatch.setattr(pulsar_read, "LAST_ID_RETRY_INTERVAL", 0.0)
    last = MessageId(5, 7, -1, 0)
    outcomes: list[BaseException | MessageId] = [RequestTimeoutError("held")] * failures + [last]
    readers: list[str] = []

    class Client:
        def reader(self, topic: str, start: str) -> _StubReader:
            readers.append(topic)
            return _StubReader(outcomes)

    lookup = pulsar_read.last_id(Client(), "t")  # type: ignore[arg-type]
    if failures < pulsar_read.LAST_ID_ATTEMPTS:
        assert asyncio.run(lookup) == last
    else:
        with pytest.raises(RequestTimeoutError):
            asyncio.run(lookup)
    assert len(readers) == min(failures + 1, pulsar_read.LAST_ID_ATTEMPTS)  # a new reader for each attempt


def test_available_now_holds_the_ends_at_the_target_taken_at_the_start() -> None:
    latest = {"t": {"0": 500, "1": 90, "2": 40}, "u": {"0": 7}}
    target = {"t": {"0": 300, "1": 120}}
    start = {"t": {"0": 100, "1": 80}, "u": {"0": 3}}
    # Partition 0 grew past the target: held. Partition 1 is behind it: as is. Partition t/2 and topic u appeared
    # after the target was taken: held where the start has them (0 for a partition it has never seen).
    assert capped(latest, target, start) == {"t": {"0": 300, "1": 90, "2": 0}, "u": {"0": 3}}
