"""A finished batch's buffer is kept for the next batch (its memory already mapped) only when nothing else holds
it, and a batch written into a reused buffer is exactly the batch written into a new one."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from kafkawire.accumulator import SPARE_BUFFERS, Accumulator
from kafkawire.protocol import records
from kafkawire.protocol.messages import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from kafkawire.protocol.records import HEADER_SIZE, BatchBuilder, decode_batches
from kafkawire.sender import Sender, SenderConfig
from kafkawire.waker import Waker
from tests.unit.test_kafka_client_sender import FakeClient

needs_compiled = pytest.mark.skipif(
    not records.COMPILED, reason="the compiled _records_speedups is not in use (MQWIRE_PURE_PYTHON or no build)"
)


def filled(builder: BatchBuilder, count: int, size: int = 10_240) -> BatchBuilder:
    for index in range(count):
        builder.add(1_000 + index, b"k%d" % index, bytes([index % 251]) * size, [("h", b"%d" % index)])
    return builder


def decoded(batch: bytes | bytearray) -> list[tuple[Any, ...]]:
    (only,) = decode_batches(batch)
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in only.records]


@needs_compiled
def test_a_reclaimed_buffer_keeps_its_memory_and_the_next_batch_is_exact() -> None:
    first = filled(BatchBuilder(max_size=1 << 20), 40)
    first.build_in_place(0)
    allocated = sys.getsizeof(first._records.buffer)
    buffer = first.reclaim_buffer()
    assert buffer is not None and len(buffer) == HEADER_SIZE
    assert sys.getsizeof(buffer) == allocated  # cut back without giving its memory back
    reused = filled(BatchBuilder(max_size=1 << 20, buffer=buffer), 7, size=300)
    assert reused._records.buffer is buffer
    assert sys.getsizeof(buffer) == allocated  # the new records went into it in place
    fresh = filled(BatchBuilder(max_size=1 << 20), 7, size=300)
    assert bytes(reused.build_in_place(5)) == bytes(fresh.build_in_place(5))
    assert decoded(reused.build(5)) == decoded(fresh.build(5))


@needs_compiled
@pytest.mark.parametrize("holder", ["a view", "another reference"])
def test_a_buffer_anything_else_holds_is_not_reclaimed(holder: str) -> None:
    builder = filled(BatchBuilder(max_size=1 << 20), 5)
    encoded = builder.build_in_place(0)  # as a request written uncopied, or a transport's queue, holds it
    before = bytes(encoded)
    held: Any = memoryview(encoded) if holder == "a view" else [encoded]
    del encoded
    assert builder.reclaim_buffer() is None
    assert bytes(held[0] if isinstance(held, list) else held) == before
    if isinstance(held, memoryview):
        held.release()


def test_without_the_compiled_speedups_nothing_is_reclaimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "_RecordAppender", records.RecordAppenderPy)
    builder = filled(BatchBuilder(max_size=1 << 20), 3)
    builder.build_in_place(0)
    assert builder.reclaim_buffer() is None


@needs_compiled
async def test_the_sender_hands_acknowledged_batches_buffers_to_the_next_batches() -> None:
    # A connection that answers every request and keeps nothing of it (as a real one: written, then dropped).
    client = FakeClient()

    async def answer(body: Any, *, version: int | None = None, timeout: float | None = None) -> Any:
        await asyncio.sleep(0)
        topics = [
            TopicProduceResponse(
                name=topic.name,
                partition_responses=[
                    PartitionProduceResponse(index=p.index, error_code=0, base_offset=0) for p in topic.partition_data
                ],
            )
            for topic in body.topic_data
        ]
        return ProduceResponse(responses=topics)

    class Connection:
        address = ("fake", 1)

        def version_for(self, api_key: int, *, at_most: int | None = None) -> int:
            return 12 if at_most is None else min(12, at_most)

        request = staticmethod(answer)

    async def connection(node_id: int) -> Connection:
        return Connection()

    client.connection = connection  # type: ignore[method-assign, assignment]
    waker = Waker()
    accumulator = Accumulator(batch_size=16_384, linger=0.0, compression=None, buffer_memory=1 << 22,
                              delivery_timeout=5.0, max_request_size=1 << 20, on_ready=waker.wake)
    config = SenderConfig(acks=-1, request_timeout=1.0, retries=0, retry_backoff=0.001, retry_backoff_max=0.002,
                          max_in_flight=1, idempotent=False)
    sender = Sender(client, accumulator, config, waker)  # type: ignore[arg-type]
    sender.start()
    try:
        for _ in range(3):
            futures = [accumulator.append("t", 0, 1, None, b"v" * 10_000, ()) for _ in range(4)]
            await asyncio.wait_for(asyncio.gather(*futures), 5.0)  # type: ignore[arg-type]
        assert 1 <= len(accumulator._spare_buffers) <= SPARE_BUFFERS
        spare = accumulator._spare_buffers[-1]
        assert len(spare) == HEADER_SIZE
        future = accumulator.append("t", 0, 1, None, b"w", ())
        assert any(batch.builder._records.buffer is spare for batch in accumulator.queued())
        assert (await asyncio.wait_for(future, 5.0)).partition == 0  # type: ignore[arg-type]
    finally:
        await sender.stop()
