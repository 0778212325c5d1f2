"""OpenTelemetry for the three clients: spans for send, receive and process that carry W3C trace context in
message headers, and the statistics of ``stats()`` as OTel metrics. Needs the ``otel`` extra
(``pip install 'mqwire[otel]'``); nothing here is imported by the clients themselves.

::

    telemetry = mqwire.otel.Telemetry()              # the global tracer and meter providers by default
    producer = telemetry.producer(raw_producer)      # send / enqueue traced, ``traceparent`` in the headers
    consumer = telemetry.consumer(raw_consumer)      # one receive span per message, its producer's as parent
    telemetry.observe(client)                        # client.stats() read by the meter's reader
    async for message in consumer:
        with consumer.process(message):              # sends in here continue the message's trace
            await other_producer.send(message.value)

The trace context travels as the global propagator writes it (W3C ``traceparent`` and ``tracestate`` by
default), UTF-8 in Kafka headers, Pulsar properties and TubeMQ attributes: the names and encoding
opentelemetry-python-contrib's aiokafka and confluent-kafka instrumentations use, so traces cross between
them and these clients in both directions.

Spans are ended on a thread of their own, through a bounded queue: a span processor or exporter that raises
or blocks never slows or breaks sending and receiving. When the queue is full (an exporter stuck), spans are
dropped and counted (``dropped_spans``); an error ending one is counted (``span_errors``); each is logged
once. Spans that are not sampled cost no queueing at all.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import queue
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.context import Context
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.propagators.textmap import Getter, Setter
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("mqwire.otel needs OpenTelemetry: pip install 'mqwire[otel]'") from exc

from mqwire.common.errors import ConfigurationError
from mqwire.common.stats import ClientStats, ConsumerStats, LatencyHistogram, ProducerStats
from mqwire.common.version import __version__

__all__ = ["Telemetry", "TracedConsumer", "TracedProducer", "extract_context", "inject_context"]

log = logging.getLogger(__name__)

P = TypeVar("P")
C = TypeVar("C")

_Callback = Callable[[CallbackOptions], Iterable[Observation]]

_SYSTEMS = {"kafkawire": "kafka", "pulsarwire": "pulsar", "tubemqwire": "tubemq"}


def _current_context_reader() -> Callable[[], Mapping[str, object]]:
    """The cheapest way to read the current OTel context: the runtime's context variable itself when it is
    the default contextvars runtime (one C call), else the API's ``get_current``."""
    runtime = getattr(otel_context, "_RUNTIME_CONTEXT", None)
    var = getattr(runtime, "_current_context", None)
    if isinstance(var, contextvars.ContextVar):
        return var.get
    return otel_context.get_current


_current_context = _current_context_reader()


def _never_samples(sampler: Any) -> bool:
    if sampler is None:
        return False
    if getattr(sampler, "rate", None) == 0 and type(sampler).__name__ == "TraceIdRatioBased":
        return True
    return bool(sampler.get_description() == "AlwaysOffSampler")


def _system_of(obj: object) -> str:
    package = type(obj).__module__.partition(".")[0]
    return _SYSTEMS.get(package, package)


@functools.lru_cache(maxsize=4096)
def _destination(system: str, topic: str) -> str:
    """The one name a topic has in spans and metrics: for Pulsar its complete name
    (``persistent://public/default/orders`` for ``orders``), as producers report it, whatever form a consumer
    was given; other systems' names as they are."""
    if system != "pulsar" or not topic:
        return topic
    from pulsarwire.topics import complete_name

    try:
        return complete_name(topic)
    except Exception:  # a name the client would refuse never reaches here; telemetry never raises on one
        return topic


def _partition_id(partition: object) -> str | None:
    """The partition attribute's value; None for a topic without partitions (Pulsar's -1)."""
    if partition is None or (isinstance(partition, int) and partition < 0):
        return None
    return str(partition)


# ------------------------------------------------------------------------------------------- carriers
class _HeadersGetter(Getter[Mapping[str, bytes]]):
    """Reads a context from received headers (str -> bytes, as ``message.headers`` is in all three)."""

    def get(self, carrier: Mapping[str, bytes], key: str) -> list[str] | None:
        value = carrier.get(key)
        if value is None:
            return None
        return [value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)]

    def keys(self, carrier: Mapping[str, bytes]) -> list[str]:
        return list(carrier)


class _DictSetter(Setter[dict[str, bytes]]):
    def set(self, carrier: dict[str, bytes], key: str, value: str) -> None:
        carrier[key] = value.encode("utf-8")


_getter = _HeadersGetter()
_setter = _DictSetter()


def inject_context(headers: Any, context: Context | None = None) -> Any:
    """``headers`` with the trace context of ``context`` (default: the current one) added, as bytes.

    A mapping comes back as a new dict; a Kafka-style list of ``(name, value)`` pairs as a new list; None as a
    dict holding only the context. The caller's object is never changed."""
    fields: dict[str, bytes] = {}
    propagate.inject(fields, context=context, setter=_setter)
    if headers is None:
        return fields
    if isinstance(headers, Mapping):
        return {**headers, **fields}
    pairs = [(name, value) for name, value in headers if name not in fields]
    return [*pairs, *fields.items()]


def extract_context(headers: Mapping[str, bytes] | None) -> Context:
    """The trace context a received message carries in its headers (an empty one when it has none)."""
    return propagate.extract(headers or {}, getter=_getter)


# ------------------------------------------------------------------------------------------- span ending
class _SpanEnder:
    """Ends spans on a daemon thread, so that span processors and exporters run off the event loop."""

    def __init__(self, capacity: int) -> None:
        self._queue: queue.Queue[tuple[trace.Span, int] | None] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0
        self.errors = 0
        self._warned_drop = False
        self._warned_error = False

    def end(self, span: trace.Span) -> None:
        if not span.is_recording():
            span.end()  # a non-recording span's end does nothing: no processor runs
            return
        if self._thread is None:
            self._start()
        try:
            self._queue.put_nowait((span, time.time_ns()))
        except queue.Full:
            self.dropped += 1
            if not self._warned_drop:
                self._warned_drop = True
                log.warning("spans are dropped: the span processor or exporter does not keep up (or is stuck)")

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mqwire.otel span ender", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                span, end_time = item
                try:
                    span.end(end_time=end_time)
                except Exception:
                    self.errors += 1
                    if not self._warned_error:
                        self._warned_error = True
                        log.warning("ending a span failed; further failures are only counted", exc_info=True)
            finally:
                self._queue.task_done()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the queued spans are ended; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def stop(self) -> None:
        if self._thread is not None:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)


# ------------------------------------------------------------------------------------------- telemetry
class Telemetry:
    """Tracing wrappers for producers and consumers, and the OTel metrics of registered clients.

    ``tracer_provider`` and ``meter_provider`` default to the global ones. ``span_queue_size`` bounds the
    spans waiting to be ended (past it they are dropped and counted)."""

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        span_queue_size: int = 10_000,
    ) -> None:
        if isinstance(span_queue_size, bool) or not isinstance(span_queue_size, int) or span_queue_size < 1:
            raise ConfigurationError(f"option span_queue_size must be a positive int, got {span_queue_size!r}")
        self.tracer = trace.get_tracer("mqwire", __version__, tracer_provider)
        self._tracer_provider = tracer_provider
        self._ender = _SpanEnder(span_queue_size)
        self._sources: weakref.WeakSet[Any] = weakref.WeakSet()
        self.callback_errors = 0
        self._warned_callback = False
        meter = metrics.get_meter("mqwire", __version__, meter_provider=meter_provider)
        self._instruments = _Instruments(meter, self._collect)

    # ----------------------------------------------------------------------------------- tracing
    def producer(self, producer: P) -> TracedProducer[P]:
        """``producer`` with ``send`` and ``enqueue`` traced (every other attribute is the producer's own)."""
        return TracedProducer(self, producer)

    def consumer(self, consumer: C) -> TracedConsumer[C]:
        """``consumer`` with ``receive``, ``getmany`` and ``async for`` traced, and ``process(message)``."""
        return TracedConsumer(self, consumer)

    @property
    def never_samples(self) -> bool:
        """Whether the tracer provider's sampler samples nothing (the SDK's ``ALWAYS_OFF`` or a trace id ratio
        of 0): wrappers made then pass every call straight through, at no cost per message. They are made once,
        so a sampler changed later needs new wrappers."""
        return _never_samples(self._sampler())

    @property
    def never_samples_roots(self) -> bool:
        """Whether a span without a parent is never sampled: ``never_samples``, or the SDK's ``ParentBased``
        sampler whose root sampler samples nothing (its usual set-up at a ratio of 0). Wrappers made then look
        only at whether a context is current (or, receiving, whether the message carries one) and pass the call
        straight through when none is; a sampled parent still gets its child span and header."""
        sampler = self._sampler()
        if type(sampler).__name__ == "ParentBased":
            return _never_samples(getattr(sampler, "_root", None))
        return _never_samples(sampler)

    def _sampler(self) -> Any:
        provider = self._tracer_provider or trace.get_tracer_provider()
        return getattr(provider, "sampler", None)

    def end_span(self, span: trace.Span) -> None:
        """End ``span`` off the event loop (see the module's documentation)."""
        self._ender.end(span)

    @property
    def dropped_spans(self) -> int:
        """Spans dropped because the queue of spans to end was full."""
        return self._ender.dropped

    @property
    def span_errors(self) -> int:
        """Spans whose end raised (in a span processor or exporter)."""
        return self._ender.errors

    def flush(self, timeout: float | None = None) -> bool:
        """Wait (blocking) until the spans queued so far are ended; False if ``timeout`` seconds passed first."""
        return self._ender.flush(timeout)

    def close(self) -> None:
        """Stop the span thread after the spans queued so far, and forget the registered clients."""
        self._ender.stop()
        self._sources = weakref.WeakSet()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ----------------------------------------------------------------------------------- metrics
    def observe(self, source: Any) -> None:
        """Export the statistics of ``source`` (a client, producer or consumer: anything with ``stats()``)
        through the meter while it lives. A client covers its producers and consumers: register one or the
        other, not both."""
        if not callable(getattr(source, "stats", None)):
            raise TypeError(f"{type(source).__name__} has no stats()")
        self._sources.add(source)

    def _collect(self) -> tuple[list[ProducerStats], list[ConsumerStats], list[ClientStats]]:
        producers: list[ProducerStats] = []
        consumers: list[ConsumerStats] = []
        clients: list[ClientStats] = []
        for source in list(self._sources):
            try:
                stats = source.stats()
            except Exception:
                # Read on the meter's thread: a failure is the exporter's problem, never the application's.
                self.callback_errors += 1
                if not self._warned_callback:
                    self._warned_callback = True
                    log.warning("reading stats() for the meter failed; further failures only counted", exc_info=True)
                continue
            if isinstance(stats, ClientStats):
                clients.append(stats)
                producers.extend(stats.producers)
                consumers.extend(stats.consumers)
            elif isinstance(stats, ProducerStats):
                producers.append(stats)
            elif isinstance(stats, ConsumerStats):
                consumers.append(stats)
        return producers, consumers, clients


class _Instruments:
    """Observable instruments over the registered sources' statistics, read once per collection."""

    def __init__(
        self,
        meter: metrics.Meter,
        collect: Callable[[], tuple[list[ProducerStats], list[ConsumerStats], list[ClientStats]]],
    ) -> None:
        self._collect = collect
        self._cache: tuple[float, tuple[list[ProducerStats], list[ConsumerStats], list[ClientStats]]] | None = None
        self._lock = threading.Lock()
        counter, gauge = meter.create_observable_counter, meter.create_observable_gauge
        p = self._producer_values
        c = self._consumer_values
        counter("messaging.client.sent.messages", [p(lambda s: s.records_sent)], unit="{message}")
        counter("messaging.client.consumed.messages", [c(lambda s: s.records_received)], unit="{message}")
        counter("mqwire.producer.sent.bytes", [p(lambda s: s.bytes_sent)], unit="By")
        counter("mqwire.producer.sent.batches", [p(lambda s: s.batches_sent)], unit="{batch}")
        counter("mqwire.producer.requests", [p(lambda s: s.requests_sent)], unit="{request}")
        counter("mqwire.producer.retries", [p(lambda s: s.retries)], unit="{retry}")
        counter("mqwire.producer.failed.messages", [p(lambda s: s.records_failed)], unit="{message}")
        gauge("mqwire.producer.buffered.messages", [p(lambda s: s.buffered_records)], unit="{message}")
        gauge("mqwire.producer.buffered.bytes", [p(lambda s: s.buffered_bytes)], unit="By")
        gauge("mqwire.producer.requests.in_flight", [p(lambda s: s.requests_in_flight)], unit="{request}")
        # The send latency from the statistics' histogram (fixed buckets: a quantile is its bucket's bound).
        gauge("mqwire.producer.send_latency.mean", [self._latency(lambda h: h.mean_ms)], unit="ms")
        gauge("mqwire.producer.send_latency.p99", [self._latency(lambda h: h.quantile(0.99))], unit="ms")
        counter("mqwire.consumer.received.bytes", [c(lambda s: s.bytes_received)], unit="By")
        counter("mqwire.consumer.received.batches", [c(lambda s: s.batches_received)], unit="{batch}")
        counter("mqwire.consumer.requests", [c(lambda s: s.requests_sent)], unit="{request}")
        counter("mqwire.consumer.rebalances", [c(lambda s: s.rebalances)], unit="{rebalance}")
        gauge("mqwire.consumer.buffered.messages", [c(lambda s: s.buffered_records)], unit="{message}")
        gauge("mqwire.consumer.lag", [self._lag], unit="{message}")
        counter("mqwire.errors", [self._errors], unit="{error}")
        gauge("mqwire.client.connections", [self._client_values(lambda s: s.connections)], unit="{connection}")
        counter("mqwire.client.connects", [self._client_values(lambda s: s.connects)], unit="{connection}")
        counter("mqwire.client.reconnects", [self._client_values(lambda s: s.reconnects)], unit="{connection}")

    def _snapshot(self) -> tuple[list[ProducerStats], list[ConsumerStats], list[ClientStats]]:
        # One stats() per source per collection, shared by all the instruments read in it.
        with self._lock:
            now = time.monotonic()
            if self._cache is None or now - self._cache[0] > 0.5:
                self._cache = (now, self._collect())
            return self._cache[1]

    def _producer_values(self, value: Callable[[ProducerStats], int]) -> _Callback:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            totals: dict[tuple[str, str], int] = {}
            for stats in self._snapshot()[0]:
                key = (stats.system, _destination(stats.system, stats.topic or ""))
                totals[key] = totals.get(key, 0) + value(stats)
            return [Observation(v, _attributes(system, topic)) for (system, topic), v in totals.items()]

        return observe

    def _latency(self, value: Callable[[LatencyHistogram], float | None]) -> _Callback:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            out = []
            for stats in self._snapshot()[0]:
                latency = value(stats.send_latency)
                if latency is not None and latency != float("inf"):
                    topic = _destination(stats.system, stats.topic or "")
                    out.append(Observation(latency, _attributes(stats.system, topic)))
            return out

        return observe

    def _consumer_values(self, value: Callable[[ConsumerStats], int]) -> _Callback:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            totals: dict[tuple[str, str], int] = {}
            for stats in self._snapshot()[1]:
                key = (stats.system, ",".join(sorted(_destination(stats.system, t) for t in stats.topics)))
                totals[key] = totals.get(key, 0) + value(stats)
            return [Observation(v, _attributes(system, topic)) for (system, topic), v in totals.items()]

        return observe

    def _client_values(self, value: Callable[[ClientStats], int]) -> _Callback:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            totals: dict[str, int] = {}
            for stats in self._snapshot()[2]:
                totals[stats.system] = totals.get(stats.system, 0) + value(stats)
            return [Observation(v, {"messaging.system": system}) for system, v in totals.items()]

        return observe

    def _lag(self, options: CallbackOptions) -> Iterable[Observation]:
        out = []
        for stats in self._snapshot()[1]:
            for part in stats.lag:
                if part.lag is not None:
                    attributes = _attributes(stats.system, _destination(stats.system, part.topic))
                    partition = _partition_id(part.partition)
                    if partition is not None:
                        attributes["messaging.destination.partition.id"] = partition
                    out.append(Observation(part.lag, attributes))
        return out

    def _errors(self, options: CallbackOptions) -> Iterable[Observation]:
        totals: dict[tuple[str, str, str], int] = {}
        producers, consumers, clients = self._snapshot()
        sources: list[tuple[str, str, Mapping[str, int]]] = [
            *(("producer", s.system, s.errors) for s in producers),
            *(("consumer", s.system, s.errors) for s in consumers),
            *(("client", s.system, s.errors) for s in clients),
        ]
        for role, system, errors in sources:
            for name, count in errors.items():
                key = (role, system, name)
                totals[key] = totals.get(key, 0) + count
        return [
            Observation(v, {"messaging.system": system, "mqwire.role": role, "error.type": name})
            for (role, system, name), v in totals.items()
        ]


def _attributes(system: str, topic: str) -> dict[str, str]:
    return {"messaging.system": system, "messaging.destination.name": topic}


# ------------------------------------------------------------------------------------------- wrappers
class TracedProducer(Generic[P]):
    """A producer whose ``send`` and ``enqueue`` make a PRODUCER span ``send {topic}`` and carry its context
    in the message's headers. Every other attribute is the wrapped producer's (``.wrapped``)."""

    def __init__(self, telemetry: Telemetry, producer: P) -> None:
        self.wrapped = producer
        self._telemetry = telemetry
        self._system = _system_of(producer)
        if telemetry.never_samples:
            # Nothing would be recorded: the producer's own methods, without a span or a header per message.
            object.__setattr__(self, "send", producer.send)  # type: ignore[attr-defined]
            object.__setattr__(self, "enqueue", producer.enqueue)  # type: ignore[attr-defined]
        elif telemetry.never_samples_roots:
            # Only a message sent under a current context can be sampled: without one, straight through.
            object.__setattr__(self, "enqueue", self._enqueue_if_parent())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()  # type: ignore[attr-defined]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.wrapped.__aexit__(exc_type, exc, tb)  # type: ignore[attr-defined]

    async def send(self, value: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        """The wrapped ``send``, traced until the broker's acknowledgement."""
        future = await self.enqueue(value, *args, **kwargs)
        return await future

    def _enqueue_if_parent(self) -> Callable[..., Awaitable[Awaitable[Any]]]:
        """``enqueue`` for a sampler that never samples a root: a plain function (a closure, the fewest
        lookups per call) that hands back the wrapped producer's coroutine when no context is current, so no
        frame of ours runs while it does; under a context, the traced path."""
        raw: Callable[..., Awaitable[Awaitable[Any]]] = self.wrapped.enqueue  # type: ignore[attr-defined]
        traced = self._traced_enqueue
        current = _current_context

        def enqueue(value: Any = None, /, *args: Any, **kwargs: Any) -> Awaitable[Awaitable[Any]]:
            if current():
                return traced(value, *args, **kwargs)
            if args or kwargs:
                return raw(value, *args, **kwargs)
            return raw(value)

        return enqueue

    async def enqueue(self, value: Any = None, /, *args: Any, headers: Any = None, **kwargs: Any) -> Awaitable[Any]:
        """The wrapped ``enqueue``; the span ends when the returned future does."""
        return await self._traced_enqueue(value, *args, headers=headers, **kwargs)

    async def _traced_enqueue(
        self, value: Any = None, /, *args: Any, headers: Any = None, **kwargs: Any
    ) -> Awaitable[Any]:
        telemetry = self._telemetry
        topic = _destination(self._system, kwargs.get("topic") or _producer_topic(self.wrapped))
        span = telemetry.tracer.start_span(f"send {topic}", kind=trace.SpanKind.PRODUCER)
        if not span.is_recording():
            # Not sampled: no span to end; a context to pass on only when the message continues a trace.
            if trace.get_current_span().get_span_context().is_valid:
                headers = inject_context(headers, trace.set_span_in_context(span))
            unsampled: Awaitable[Any] = await self.wrapped.enqueue(value, *args, headers=headers, **kwargs)  # type: ignore[attr-defined]
            return unsampled
        span.set_attribute("messaging.system", self._system)
        span.set_attribute("messaging.destination.name", topic)
        span.set_attribute("messaging.operation.name", "send")
        span.set_attribute("messaging.operation.type", "send")
        headers = inject_context(headers, trace.set_span_in_context(span))
        try:
            future = await self.wrapped.enqueue(value, *args, headers=headers, **kwargs)  # type: ignore[attr-defined]
        except BaseException as exc:
            _fail(span, exc)
            telemetry.end_span(span)
            raise
        future.add_done_callback(lambda done: self._acknowledged(span, done))
        return future  # type: ignore[no-any-return]

    def _acknowledged(self, span: trace.Span, future: Any) -> None:
        if future.cancelled():
            _fail(span, None)
        elif future.exception() is not None:
            _fail(span, future.exception())
        else:
            receipt = future.result()
            partition = _partition_id(getattr(receipt, "partition", None))
            if partition is not None:
                span.set_attribute("messaging.destination.partition.id", partition)
            offset = getattr(receipt, "offset", None)
            if offset is not None and self._system == "kafka":
                span.set_attribute("messaging.kafka.offset", offset)
        self._telemetry.end_span(span)


class TracedConsumer(Generic[C]):
    """A consumer whose messages each make a CONSUMER span ``receive {topic}``, child of the producer's span
    their headers carry; ``process(message)`` makes the span of the application's work on one."""

    def __init__(self, telemetry: Telemetry, consumer: C) -> None:
        self.wrapped = consumer
        self._telemetry = telemetry
        self._system = _system_of(consumer)
        self._group: str | None = getattr(consumer, "group", None) or getattr(
            getattr(consumer, "options", None), "subscription", None
        )
        self._off = telemetry.never_samples
        # Without a sampled root, only a message carrying a context (or one received under a current context)
        # can make a recorded span: the names of the propagator's fields tell whether it carries one.
        self._roots_off = telemetry.never_samples_roots
        self._fields = frozenset(propagate.get_global_textmap().fields)
        if self._off:
            object.__setattr__(self, "receive", consumer.receive)  # type: ignore[attr-defined]
            object.__setattr__(self, "getmany", consumer.getmany)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()  # type: ignore[attr-defined]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.wrapped.__aexit__(exc_type, exc, tb)  # type: ignore[attr-defined]

    def __aiter__(self) -> AsyncIterator[Any]:
        return self.wrapped.__aiter__() if self._off else self._iterate()  # type: ignore[attr-defined]

    async def _iterate(self) -> AsyncIterator[Any]:
        async for message in self.wrapped:  # type: ignore[attr-defined]
            self._received(message)
            yield message

    async def receive(self, timeout: float | None = None) -> Any:
        """The wrapped ``receive``, with the message's receive span."""
        message = await self.wrapped.receive(timeout)  # type: ignore[attr-defined]
        self._received(message)
        return message

    async def getmany(self, *, timeout: float = 0, max_records: int | None = None) -> Sequence[Any]:
        """The wrapped ``getmany``, with a receive span per message."""
        messages: Sequence[Any] = await self.wrapped.getmany(timeout=timeout, max_records=max_records)  # type: ignore[attr-defined]
        for message in messages:
            self._received(message)
        return messages

    def _span(self, operation: str, message: Any) -> trace.Span:
        parent = extract_context(message.headers)
        topic = _destination(self._system, message.topic)
        span = self._telemetry.tracer.start_span(f"{operation} {topic}", context=parent, kind=trace.SpanKind.CONSUMER)
        if span.is_recording():
            span.set_attribute("messaging.system", self._system)
            span.set_attribute("messaging.destination.name", topic)
            partition = _partition_id(message.partition)
            if partition is not None:
                span.set_attribute("messaging.destination.partition.id", partition)
            span.set_attribute("messaging.operation.name", operation)
            span.set_attribute("messaging.operation.type", operation)
            if self._group is not None:
                span.set_attribute("messaging.consumer.group.name", self._group)
            offset = getattr(message, "offset", None)
            if offset is not None and self._system == "kafka":
                span.set_attribute("messaging.kafka.offset", offset)
        return span

    def _received(self, message: Any) -> None:
        if self._roots_off and not _current_context():
            headers = message.headers
            if not headers or not any(name in headers for name in self._fields):
                return
        span = self._span("receive", message)
        if span.is_recording():
            self._telemetry.end_span(span)

    @contextlib.contextmanager
    def process(self, message: Any) -> Iterator[trace.Span]:
        """A ``process {topic}`` span, child of the message's producer span, current while the block runs:
        messages sent inside carry it, so the trace goes on into the next system."""
        if self._off:
            yield trace.INVALID_SPAN
            return
        span = self._span("process", message)
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                yield span
        except BaseException as exc:
            _fail(span, exc)
            raise
        finally:
            self._telemetry.end_span(span)


def _producer_topic(producer: Any) -> str:
    topic = getattr(producer, "topic", None)
    if topic:
        return str(topic)
    topics = getattr(producer, "topics", None)
    if topics and len(topics) == 1:
        return str(topics[0])
    return "unknown"


def _fail(span: trace.Span, error: BaseException | None) -> None:
    if not span.is_recording():
        return
    if error is not None:
        span.record_exception(error)
        span.set_attribute("error.type", type(error).__name__)
    span.set_status(trace.Status(trace.StatusCode.ERROR, None if error is None else str(error)))
