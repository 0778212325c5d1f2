"""A blocking producer's ``enqueue`` compiled for a value of bytes alone (``BytesEnqueue`` of
``mqwire.common._enqueue_speedups``) answers every call as the Python ``enqueue`` does: each case runs with each."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from mqwire.common.blocking import Bridge
from mqwire.common.blocking_clients import BlockingProducer, CallerSerializers
from mqwire.common.errors import ClosedError, SerializationError

LIVENESS = 30.0  # a liveness bound only: every wait below ends long before it unless hung


class _Recorder:
    """An async producer that records each ``enqueue`` call as it came, and refuses a value that is not bytes."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    async def enqueue(self, *args: Any, **kwargs: Any) -> asyncio.Future[int]:
        value = args[0] if args else kwargs.get("value")
        if not isinstance(value, bytes):
            raise SerializationError(f"not bytes: {type(value).__name__}")
        self.calls.append((args, kwargs))
        future = asyncio.get_running_loop().create_future()
        future.set_result(len(self.calls) - 1)
        return future

    async def flush(self, timeout: float | None = None) -> None:
        return None

    async def close(self) -> None:
        return None


class _Producer(BlockingProducer[int]):
    def enqueue(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[int]:
        return self._enqueue(args, kwargs)


@pytest.fixture
def recorder() -> _Recorder:
    return _Recorder()


@pytest.fixture
def producer(enqueue_way: str, bridge: Bridge, recorder: _Recorder) -> Iterator[_Producer]:
    made = _Producer(bridge, recorder, "test producer")
    try:
        yield made
    finally:
        made.close()


class _Bytes(bytes):
    """A subclass of bytes: not the common way's exact type."""


def test_the_way_taken_is_the_one_asked_for(enqueue_way: str, producer: _Producer) -> None:
    compiled = type(producer.enqueue).__name__ == "BytesEnqueue"
    assert compiled is (enqueue_way == "compiled")


@pytest.mark.parametrize(
    ("args", "kwargs", "handed"),
    [
        pytest.param((b"v",), {}, ((b"v",), {}), id="bytes alone"),
        pytest.param((b"",), {}, ((b"",), {}), id="empty bytes"),
        pytest.param((), {"value": b"v"}, ((), {"value": b"v"}), id="value by name"),
        pytest.param((b"v",), {"key": b"k"}, ((b"v",), {"key": b"k"}), id="with a key"),
        pytest.param((b"v", b"second"), {}, ((b"v", b"second"), {}), id="two positional"),
        pytest.param((_Bytes(b"v"),), {}, ((b"v",), {}), id="a subclass of bytes"),
        pytest.param((None,), {}, None, id="None"),
        pytest.param(("text",), {}, None, id="a str"),
        pytest.param((bytearray(b"v"),), {}, None, id="a bytearray"),
    ],
)
def test_every_call_is_answered_as_the_python_enqueue_answers_it(
    producer: _Producer,
    recorder: _Recorder,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    handed: tuple[tuple[Any, ...], dict[str, Any]] | None,
) -> None:
    future = producer.enqueue(*args, **kwargs)
    if handed is None:  # refused by the async producer: the record's own future says why
        with pytest.raises(SerializationError, match="not bytes"):
            future.result(LIVENESS)
        assert recorder.calls == []
        return
    assert future.result(LIVENESS) == 0
    assert recorder.calls == [handed]
    assert [type(item) for item in recorder.calls[0][0]] == [type(item) for item in args]


def test_records_keep_their_order_across_both_ways(producer: _Producer, recorder: _Recorder) -> None:
    futures = [producer.enqueue(b"%d" % i) if i % 3 else producer.enqueue(value=b"%d" % i) for i in range(300)]
    assert [future.result(LIVENESS) for future in futures] == list(range(300))
    assert [call[0][0] if call[0] else call[1]["value"] for call in recorder.calls] == [b"%d" % i for i in range(300)]


def test_a_closed_producer_refuses_at_the_call(producer: _Producer) -> None:
    producer.close()
    with pytest.raises(ClosedError):
        producer.enqueue(b"late")
    with pytest.raises(ClosedError):
        producer.enqueue(b"late", key=b"k")


def test_a_value_serializer_is_never_passed_by(enqueue_way: str, bridge: Bridge, recorder: _Recorder) -> None:
    options: dict[str, Any] = {"value_serializer": lambda value: b"<" + bytes(value) + b">"}
    with _Producer(bridge, recorder, "test producer", CallerSerializers(options)) as producer:
        assert type(producer.enqueue).__name__ == "method"
        assert producer.enqueue(b"v").result(LIVENESS) == 0
    assert recorder.calls == [((b"<v>",), {})]


def test_a_key_serializer_alone_leaves_bytes_values_to_the_compiled_way(
    enqueue_way: str, bridge: Bridge, recorder: _Recorder
) -> None:
    options: dict[str, Any] = {"key_serializer": str.encode}
    with _Producer(bridge, recorder, "test producer", CallerSerializers(options)) as producer:
        assert (type(producer.enqueue).__name__ == "BytesEnqueue") is (enqueue_way == "compiled")
        assert producer.enqueue(b"v").result(LIVENESS) == 0
        assert producer.enqueue(b"w", key="k").result(LIVENESS) == 1
    assert recorder.calls == [((b"v",), {}), ((b"w",), {"key": b"k"})]


def test_a_dropped_producer_is_freed_without_the_collector(
    enqueue_way: str, bridge: Bridge, recorder: _Recorder
) -> None:
    # The compiled enqueue is stored on the producer: it must not refer back to it (or to its queue).
    made = _Producer(bridge, recorder, "test producer")
    assert made.enqueue(b"x").result(LIVENESS) == 0
    made.close()
    gone, queue_gone = weakref.ref(made), weakref.ref(made._queue)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del made
        assert gone() is None
        assert queue_gone() is None
    finally:
        if collecting:
            gc.enable()
