"""The blocking client, producer and consumer written once in ``mqwire.common.blocking_clients``, over a fake
async client (the real ones are run against brokers in tests/integration/test_sync_clients.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest

from mqwire.common.blocking_clients import BlockingClient, BlockingConsumer, BlockingProducer, CallerSerializers
from mqwire.common.errors import ClosedError, RequestTimeoutError, SerializationError

LIVENESS = 30.0  # a liveness bound only: every wait below ends long before it unless hung


class FakeProducer:
    def __init__(self, log: list[str], *, acknowledges: bool = True) -> None:
        self.log = log
        self.gate: asyncio.Event | None = None  # when set up, enqueue waits for it: a hand-over that takes long
        self.values: list[bytes] = []
        self.loop_thread = 0
        self.acknowledges = acknowledges
        self.pending: list[asyncio.Future[int]] = []

    async def __aenter__(self) -> FakeProducer:
        self.loop_thread = threading.get_ident()
        return self

    async def enqueue(self, value: Any, /, *, key: Any = None) -> asyncio.Future[int]:
        if not isinstance(value, bytes):
            raise SerializationError("value is not bytes and no value_serializer was given")
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        self.values.append(value)
        future = asyncio.get_running_loop().create_future()
        if self.acknowledges:
            asyncio.get_running_loop().call_later(0.001, future.set_result, len(self.values) - 1)
            self.pending.append(future)
        return future

    async def flush(self, timeout: float | None = None) -> None:
        self.log.append(f"flush {len(self.values)}")

    async def close(self) -> None:
        await asyncio.gather(*self.pending)  # as a real producer flushes on close
        self.log.append(f"producer close {len(self.values)}")


class FakeConsumer:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.stalls = False
        self.release = threading.Event()

    async def __aenter__(self) -> FakeConsumer:
        return self

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> list[bytes]:
        if self.stalls:
            self.release.wait(LIVENESS)  # holds the loop thread past the call's timeout: a stalled loop
            return [b"late 1", b"late 2"]
        return [b"m"]

    async def close(self) -> None:
        self.log.append("consumer close")


class FakeClient:
    def __init__(self) -> None:
        self.log: list[str] = []

    async def __aenter__(self) -> FakeClient:
        self.log.append("connected")
        return self

    async def close(self) -> None:
        self.log.append("client close")


class Producer(BlockingProducer[int]):
    def enqueue(self, value: Any) -> concurrent.futures.Future[int]:
        return self._enqueue((value,), {})


class Client(BlockingClient[FakeClient]):
    def producer(self, *, acknowledges: bool = True) -> Producer:
        made = self._start(lambda client: FakeProducer(client.log, acknowledges=acknowledges))
        return self._adopt(Producer(self.bridge, made, "fake producer"))

    def consumer(self) -> BlockingConsumer[bytes]:
        made = self._start(lambda client: FakeConsumer(client.log))
        return self._adopt(BlockingConsumer(self.bridge, made))


def test_close_sends_what_producers_hold_then_closes_consumers_client_and_thread() -> None:
    before = set(threading.enumerate())
    client = Client(FakeClient, what="fake")
    fake = client._async
    producer = client.producer()
    consumer = client.consumer()
    assert producer._async.loop_thread == client.bridge.thread_id  # made and started on the loop thread
    futures = [producer.enqueue(b"%d" % i) for i in range(100)]
    client.close()
    assert [future.result(LIVENESS) for future in futures] == list(range(100))
    assert fake.log == ["connected", "consumer close", "producer close 100", "client close"]
    assert producer.closed and consumer.closed and client.closed
    assert set(threading.enumerate()) == before
    with pytest.raises(ClosedError):
        producer.enqueue(b"late")
    client.close()  # idempotent


def test_records_never_acknowledged_fail_when_the_client_closes_instead_of_waiting_forever() -> None:
    client = Client(FakeClient, what="fake")
    producer = client.producer(acknowledges=False)
    futures = [producer.enqueue(b"%d" % i) for i in range(10)]
    client.close()
    for future in futures:
        with pytest.raises(ClosedError):
            future.result(LIVENESS)


def test_a_refused_record_fails_its_own_future_and_the_next_ones_go_on() -> None:
    with Client(FakeClient, what="fake") as client, client.producer() as producer:
        refused = producer.enqueue("not bytes")
        accepted = producer.enqueue(b"ok")
        with pytest.raises(SerializationError):
            refused.result(LIVENESS)
        assert accepted.result(LIVENESS) == 0
        producer.flush(timeout=LIVENESS)


def test_a_flush_timeout_counts_the_hand_over_too() -> None:
    with Client(FakeClient, what="fake") as client, client.producer() as producer:
        producer.enqueue(b"first").result(LIVENESS)
        producer.flush(timeout=0)  # nothing queued, everything acknowledged: returns at once
        fake = producer._async
        gate = client.bridge.run_sync(asyncio.Event)
        fake.gate = gate
        late = producer.enqueue(b"held")
        # The timer stands in for a producer whose buffer frees up later; a flush that waited for the hand-over
        # would return then, without the timeout it was given.
        opener = threading.Timer(5.0, client.bridge.run_sync, (gate.set,))
        opener.start()
        try:
            # Ended by the flush itself at its timeout, not by the bridge's bound for a stalled loop.
            with pytest.raises(RequestTimeoutError, match="handed over"):
                producer.flush(timeout=0.2)
            with pytest.raises(RequestTimeoutError, match="handed over"):
                producer.flush(timeout=0)
        finally:
            opener.cancel()
            client.bridge.run_sync(gate.set)
        assert late.result(LIVENESS) == 1  # the hand-over went on after the timeouts


def test_serializers_run_in_the_callers_thread_and_refuse_at_the_call() -> None:
    threads: list[int] = []

    def json_bytes(value: Any) -> bytes:
        threads.append(threading.get_ident())
        return repr(value).encode()

    options: dict[str, Any] = {"value_serializer": json_bytes, "key_serializer": str.encode, "linger_ms": 5}
    serializers = CallerSerializers(options)
    assert options == {"linger_ms": 5}  # the async producer is made without them: it gets bytes
    assert serializers.apply(({"n": 1},), {"key": "k"}) == ((b"{'n': 1}",), {"key": b"k"})
    assert threads == [threading.get_ident()]
    with pytest.raises(SerializationError, match="key_serializer raised"):
        serializers.apply((b"v",), {"key": 42})
    assert serializers.apply_many(([{"n": 1}, None],), {"keys": ["a", None]}) == (
        ([b"{'n': 1}", None],), {"keys": [b"a", None]}
    )
    plain = CallerSerializers({})
    assert plain.apply((b"v",), {}) == ((b"v",), {})
    with pytest.raises(SerializationError, match="value_serializer"):
        plain.apply_many(([b"fine", "text"],), {})
    with pytest.raises(SerializationError, match="value_serializer"):
        plain.apply(("text",), {})
    # A value the async producer encodes itself (a Pulsar schema) passes through; a non-callable serializer
    # stays in the options for the async producer to refuse with its own error.
    schema_options: dict[str, Any] = {"value_serializer": "json", "schema": object()}
    assert CallerSerializers(schema_options, values=False).apply(({"n": 1},), {}) == (({"n": 1},), {})
    assert schema_options["value_serializer"] == "json"
    with Client(FakeClient, what="fake") as client:
        made = client._start(lambda c: FakeProducer(c.log))
        producer = client._adopt(Producer(client.bridge, made, "fake producer", CallerSerializers({})))
        with pytest.raises(SerializationError):
            producer.enqueue("not bytes")  # at the call, not in a future
        assert producer.enqueue(b"ok").result(LIVENESS) == 0


def test_getmany_on_a_stalled_loop_returns_nothing_once_its_bound_passed() -> None:
    with Client(FakeClient, what="fake") as client, client.consumer() as consumer:
        assert consumer.getmany(timeout=5) == [b"m"]
        consumer._async.stalls = True
        assert consumer.getmany(timeout=0) == []  # the loop did not answer within timeout + GRACE: not waited for
        consumer._async.stalls = False
        consumer._async.release.set()
        for _ in range(1000):  # until the loop, free again, finished the call given up on
            if consumer._late:
                break
            client.bridge.call(asyncio.sleep, 0)
        # What the given-up call took is not lost: the next calls hand it out first.
        assert consumer.getmany(timeout=5, max_records=1) == [b"late 1"]
        assert consumer.receive(timeout=5) == b"late 2"
        assert consumer.getmany(timeout=5) == [b"m"]
