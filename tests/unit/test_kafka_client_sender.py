"""The sender against a scripted broker: batching into requests, retries with the same sequence, errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from kafkawire import errors
from kafkawire.accumulator import Accumulator
from kafkawire.errors import DeliveryTimeoutError
from kafkawire.metadata import BrokerNode, ClusterMetadata, PartitionInfo
from kafkawire.protocol.messages import (
    InitProducerIdResponse,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from kafkawire.protocol.records import decode_batches
from kafkawire.sender import Sender, SenderConfig
from kafkawire.telemetry.measures import ClientMeasures
from kafkawire.waker import Waker
from mqwire.common.errors import ConnectionLostError

Responder = Callable[[ProduceRequest], Any]


class FakeConnection:
    def __init__(self, broker: FakeClient) -> None:
        self.broker = broker
        self.address = ("fake", 1)

    def version_for(self, api_key: int, *, at_most: int | None = None) -> int:
        return 12 if at_most is None else min(12, at_most)

    async def request(self, body: Any, *, version: int | None = None, timeout: float | None = None) -> Any:
        self.broker.requests.append(body)
        await asyncio.sleep(0)
        responder = self.broker.script.pop(0) if self.broker.script else ok
        result = responder(body)
        if isinstance(result, BaseException):
            raise result
        return result

    async def send(self, body: Any, *, version: int | None = None) -> None:
        self.broker.requests.append(body)


class FakeClient:
    def __init__(self, script: list[Responder] | None = None) -> None:
        self.metadata = ClusterMetadata()
        self.metadata.brokers = {1: BrokerNode(1, "fake", 1)}
        self.metadata.leaders = {"t": {0: 1, 1: 1}}
        self.metadata.partition_info = {"t": {p: PartitionInfo(1, 0, [1], [1]) for p in (0, 1)}}
        self.script = list(script or [])
        self.requests: list[ProduceRequest] = []
        self.updates = 0
        self.next_producer_id = 1000
        self.measures = ClientMeasures()

    async def connection(self, node_id: int) -> FakeConnection:
        return FakeConnection(self)

    def discard(self, connection: object, error: object = None) -> None:
        pass

    def request_update(self, topics: object = None) -> None:
        self.updates += 1
        self.metadata.leaders = {"t": {0: 1, 1: 1}}

    async def request_any(self, body: Any, *, timeout: float | None = None) -> Any:
        self.next_producer_id += 1
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=self.next_producer_id,
                                      producer_epoch=0)


def respond(code_for: Callable[[int], int], offset: int = 0) -> Responder:
    def responder(body: ProduceRequest) -> ProduceResponse:
        topics = []
        for topic in body.topic_data:
            partitions = [
                PartitionProduceResponse(index=p.index, error_code=code_for(p.index), base_offset=offset)
                for p in topic.partition_data
            ]
            topics.append(TopicProduceResponse(name=topic.name, partition_responses=partitions))
        return ProduceResponse(responses=topics)

    return responder


ok = respond(lambda _p: 0, offset=7)


def build(client: FakeClient, *, acks: int = -1, idempotent: bool = True, retries: int = 10,
          delivery_timeout: float = 5.0) -> tuple[Accumulator, Sender]:
    waker = Waker()
    accumulator = Accumulator(batch_size=16384, linger=0.0, compression=None, buffer_memory=1 << 20,
                              delivery_timeout=delivery_timeout, max_request_size=1 << 20, on_ready=waker.wake)
    config = SenderConfig(acks=acks, request_timeout=1.0, retries=retries, retry_backoff=0.001,
                          retry_backoff_max=0.002, max_in_flight=5, idempotent=idempotent)
    sender = Sender(client, accumulator, config, waker)  # type: ignore[arg-type]
    sender.start()
    return accumulator, sender


def two_batches_of_one_partition(client: FakeClient) -> tuple[Sender, list[Any]]:
    """An idempotent sender with two batches of partition 0 buffered (a batch holds one 60-byte record)."""
    waker = Waker()
    accumulator = Accumulator(batch_size=100, linger=0.0, compression=None, buffer_memory=1 << 20,
                              delivery_timeout=5.0, max_request_size=1 << 20, on_ready=waker.wake)
    config = SenderConfig(acks=-1, request_timeout=1.0, retries=10, retry_backoff=0.001, retry_backoff_max=0.002,
                          max_in_flight=5, idempotent=True)
    sender = Sender(client, accumulator, config, waker)  # type: ignore[arg-type]
    futures = [accumulator.append("t", 0, 1, None, b"x" * 60, ()) for _ in range(2)]
    sender.start()
    return sender, futures


def sequences(request: ProduceRequest) -> list[tuple[int, int, int]]:
    out = []
    for topic in request.topic_data:
        for partition in topic.partition_data:
            batch = decode_batches(partition.records)[0]
            out.append((partition.index, batch.producer_id, batch.base_sequence))
    return out


async def test_one_request_carries_one_batch_per_partition_and_resolves_all() -> None:
    client = FakeClient()
    accumulator, sender = build(client)
    futures = [accumulator.append("t", i % 2, 1, None, b"v", ()) for i in range(10)]
    results = await asyncio.wait_for(asyncio.gather(*futures), 2.0)  # type: ignore[arg-type]
    assert len(client.requests) == 1
    assert sorted(sequences(client.requests[0])) == [(0, 1001, 0), (1, 1001, 0)]
    assert sorted(r.offset for r in results if r.partition == 0) == [7, 8, 9, 10, 11]
    await sender.stop()


async def test_retriable_error_retries_with_the_same_sequence() -> None:
    client = FakeClient([respond(lambda _p: errors.NotLeaderOrFollowerError.error_code)])
    accumulator, sender = build(client)
    accumulator.append("t", 0, 1, None, b"first", ())
    await asyncio.sleep(0.05)
    future = accumulator.append("t", 0, 1, None, b"second", ())
    await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert client.updates >= 1
    first_try, retry = client.requests[0], client.requests[1]
    assert sequences(first_try) == sequences(retry) == [(0, 1001, 0)]
    assert sequences(client.requests[-1]) == [(0, 1001, 1)]
    await sender.stop()


async def test_fatal_error_fails_the_records_with_the_named_error() -> None:
    client = FakeClient([respond(lambda _p: errors.TopicAuthorizationFailedError.error_code)])
    accumulator, sender = build(client, idempotent=False)
    future = accumulator.append("t", 0, 1, None, b"v", ())
    with pytest.raises(errors.TopicAuthorizationFailedError):
        await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    await sender.stop()


async def test_duplicate_sequence_counts_as_delivered() -> None:
    client = FakeClient([respond(lambda _p: errors.DuplicateSequenceNumberError.error_code)])
    accumulator, sender = build(client)
    future = accumulator.append("t", 0, 1, None, b"v", ())
    result = await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert result.offset == -1
    await sender.stop()


async def test_lost_connection_is_retried() -> None:
    client = FakeClient([lambda _body: ConnectionLostError("gone")])
    accumulator, sender = build(client)
    future = accumulator.append("t", 1, 1, None, b"v", ())
    result = await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert result.offset == 7
    assert len(client.requests) == 2
    assert sequences(client.requests[0]) == sequences(client.requests[1])
    await sender.stop()


async def test_out_of_order_behind_a_failed_batch_is_retried_after_it() -> None:
    # Two batches in flight; the first fails retriably, so the broker refuses the second as out of order.
    calls = {"n": 0}

    def first_fails(body: ProduceRequest) -> ProduceResponse:
        calls["n"] += 1
        code = errors.NotEnoughReplicasError.error_code if calls["n"] == 1 else (
            errors.OutOfOrderSequenceNumberError.error_code)
        response: ProduceResponse = respond(lambda _p: code)(body)
        return response

    client = FakeClient([first_fails, first_fails])
    sender, futures = two_batches_of_one_partition(client)
    results = await asyncio.wait_for(asyncio.gather(*futures), 2.0)  # type: ignore[arg-type]
    assert len(results) == 2
    sent = [sequences(r)[0][2] for r in client.requests]
    assert sent[:2] == [0, 1]
    # The retries go out one at a time, lowest sequence first.
    assert sent[2:] == [0, 1]
    await sender.stop()


async def test_acks_zero_resolves_once_written() -> None:
    client = FakeClient()
    accumulator, sender = build(client, acks=0, idempotent=False)
    future = accumulator.append("t", 0, 1, None, b"v", ())
    result = await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert result.offset == -1
    assert client.requests[0].acks == 0
    await sender.stop()


async def test_records_fail_after_the_delivery_timeout() -> None:
    client = FakeClient()
    client.metadata.leaders = {"t": {0: -1}}  # no leader ever shows up
    client.request_update = lambda topics=None: None  # type: ignore[method-assign]
    accumulator, sender = build(client, delivery_timeout=0.05)
    future = accumulator.append("t", 0, 1, None, b"v", ())
    with pytest.raises(DeliveryTimeoutError):
        await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    await sender.stop()


class SlowFirstConnectionClient(FakeClient):
    """The first connection takes a while (a metadata refresh, a connection being opened); later ones do not."""

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0

    async def connection(self, node_id: int) -> FakeConnection:
        self.connections += 1
        if self.connections == 1:
            await asyncio.sleep(0.05)
        return FakeConnection(self)


async def test_a_later_request_never_overtakes_one_still_waiting_for_its_connection() -> None:
    # Two batches of one partition in two requests: the second must reach the broker second, or the broker
    # (which takes any first sequence from a new producer id) refuses the first one as out of order.
    client = SlowFirstConnectionClient()
    sender, futures = two_batches_of_one_partition(client)
    await asyncio.wait_for(asyncio.gather(*futures), 2.0)  # type: ignore[arg-type]
    assert [sequences(request)[0][2] for request in client.requests] == [0, 1]
    await sender.stop()


class SlowSecondConnectionClient(FakeClient):
    """The second connection takes a while (the first was lost and a new one is being opened)."""

    def __init__(self, script: list[Responder]) -> None:
        super().__init__(script)
        self.connections = 0

    async def connection(self, node_id: int) -> FakeConnection:
        self.connections += 1
        if self.connections == 2:
            await asyncio.sleep(0.05)
        return FakeConnection(self)


async def test_a_batch_whose_predecessor_failed_while_it_waited_is_written_after_the_retry() -> None:
    # The first batch's request is lost; the second batch, dispatched meanwhile, is still waiting for its
    # connection. Written then, it would reach the broker before the retry of the first.
    client = SlowSecondConnectionClient([lambda _body: ConnectionLostError("gone")])
    sender, futures = two_batches_of_one_partition(client)
    await asyncio.wait_for(asyncio.gather(*futures), 2.0)  # type: ignore[arg-type]
    written = [sequences(request)[0][2] for request in client.requests]
    assert written == [0, 0, 1]
    await sender.stop()
