"""An async web service on Kafka, Pulsar and TubeMQ: FastAPI served by uvicorn on uvloop.

For each system it sends a message per HTTP request, and a task started by the app's lifespan consumes
the topic and keeps what it received. The lifespan's exit stops the consumers, then flushes and closes every
producer and client, so what ``/enqueue`` accepted reaches the brokers even when the service is stopped
(SIGTERM, Ctrl-C) right after.

    python examples/service.py [--port 8000] [--kafka URL] [--pulsar URL] [--tubemq URL] [--topic service]
    MQWIRE_KAFKA_URL=kafka://127.0.0.1:9092 ... uvicorn service:app --app-dir examples --loop uvloop

Broker URLs come from the options, else MQWIRE_KAFKA_URL, MQWIRE_PULSAR_URL and MQWIRE_TUBEMQ_URL, else
``python -m mqwire.testing status``. Topics: MQWIRE_SERVICE_TOPIC (``service``), or per system
MQWIRE_SERVICE_KAFKA_TOPIC etc.; the consumer group (Pulsar: subscription) is MQWIRE_SERVICE_GROUP.

    GET  /health                 the event loop running the service and whether each consumer still runs
    POST /{system}/messages      {"value": "...", "key": "...", "headers": {"name": "text"}}: sends, answers
                                 with the receipt (Kafka: partition and offset; Pulsar and TubeMQ: message id)
    POST /{system}/enqueue       a list of such messages: buffered into the producer's batches, 202 at once
    GET  /{system}/consumed      what the system's consumer received, oldest first
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from _common import configured_broker_url
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.contract import Client, Consumer, Producer, Receipt
from mqwire.common.errors import MqwireError, RetriableError

System = Literal["kafka", "pulsar", "tubemq"]
SYSTEMS: tuple[System, ...] = ("kafka", "pulsar", "tubemq")
CONNECT: dict[System, Callable[[str], Client[Any]]] = {
    "kafka": kafkawire.connect,
    "pulsar": pulsarwire.connect,
    "tubemq": tubemqwire.connect,
}
# How many consumed messages each system keeps for /consumed (the oldest go first).
KEPT = 100_000

# Logged through uvicorn's logger, so the lines come out as uvicorn formats its own.
log = logging.getLogger("uvicorn.error").getChild("service")


@dataclass(frozen=True)
class Settings:
    """Where the service's brokers are, the topic of each system, and its consumer group."""

    urls: Mapping[System, str]
    topics: Mapping[System, str]
    group: str = "service"

    @classmethod
    def from_environment(cls, urls: Mapping[System, str | None] | None = None) -> Settings:
        """Settings from the environment (see the module's docstring), with ``urls`` given taking precedence."""
        given = urls or {}
        topic = os.environ.get("MQWIRE_SERVICE_TOPIC", "service")
        return cls(
            urls={system: given.get(system) or configured_broker_url(system) for system in SYSTEMS},
            topics={system: os.environ.get(f"MQWIRE_SERVICE_{system.upper()}_TOPIC", topic) for system in SYSTEMS},
            group=os.environ.get("MQWIRE_SERVICE_GROUP", "service"),
        )


class OutgoingMessage(BaseModel):
    """A message to send: text value, optional text key, and headers of text values."""

    value: str
    key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


@dataclass
class Link:
    """One system's producer and consumer, what the consumer received, and the enqueued sends not yet acked."""

    system: System
    producer: Producer
    consumer: Consumer[Any]
    consumed: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=KEPT))
    unacknowledged: set[asyncio.Future[Receipt]] = field(default_factory=set)
    failed_sends: int = 0
    task: asyncio.Task[None] | None = None

    async def send(self, message: OutgoingMessage) -> Receipt:
        """Send and wait for the broker's acknowledgement."""
        return await self.producer.send(message.value.encode(), key=_key(message), headers=_headers(message))

    async def enqueue(self, message: OutgoingMessage) -> None:
        """Buffer the message; a failed send is logged and counted, since no request waits for it."""
        acknowledged: Awaitable[Receipt] = await self.producer.enqueue(
            message.value.encode(), key=_key(message), headers=_headers(message)
        )
        future = asyncio.ensure_future(acknowledged)
        self.unacknowledged.add(future)
        future.add_done_callback(self._acknowledged)

    def _acknowledged(self, future: asyncio.Future[Receipt]) -> None:
        self.unacknowledged.discard(future)
        if not future.cancelled() and (error := future.exception()) is not None:
            self.failed_sends += 1
            log.error("%s: an enqueued message was not stored: %r", self.system, error)

    async def consume(self) -> None:
        """Keep every message received (as JSON) and acknowledge it, until cancelled."""
        async for message in self.consumer:
            self.consumed.append(describe(message))
            await self.consumer.ack(message)


def _key(message: OutgoingMessage) -> bytes | None:
    return None if message.key is None else message.key.encode()


def _headers(message: OutgoingMessage) -> dict[str, bytes]:
    return {name: value.encode() for name, value in message.headers.items()}


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode(errors="replace")


def describe(message: Any) -> dict[str, Any]:
    """A received message as JSON: where it was stored, its key, value and headers as text."""
    position: dict[str, Any]
    if isinstance(message, kafkawire.Message):
        position = {"offset": message.offset}
    else:  # pulsarwire and tubemqwire messages carry the id their broker gave them
        position = {"message_id": str(message.message_id)}
    return {
        "topic": message.topic,
        "partition": message.partition,
        **position,
        "key": _text(message.key),
        "value": _text(message.value),
        "headers": {name: _text(value) for name, value in message.headers.items()},
        "timestamp": message.timestamp,
    }


def receipt_json(receipt: Receipt) -> dict[str, Any]:
    """What the broker acknowledged, as JSON: Kafka's partition and offset, the others' message id."""
    answer: dict[str, Any] = {"topic": receipt.topic, "partition": receipt.partition}
    if isinstance(receipt, kafkawire.RecordMetadata):
        answer["offset"] = receipt.offset
    elif isinstance(receipt, pulsarwire.Receipt | tubemqwire.Receipt):
        answer["message_id"] = str(receipt.message_id)
    return answer


async def stop_consumers(links: Mapping[System, Link]) -> None:
    """Cancel the consumer tasks and wait for them, before their consumers close."""
    tasks = [link.task for link in links.values() if link.task is not None]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _consumer_ended(link: Link) -> Callable[[asyncio.Task[None]], None]:
    def ended(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("%s: the consumer stopped: %r", link.system, error)

    return ended


def status_for(error: Exception) -> int:
    """The HTTP status for a failed send."""
    if isinstance(error, ValueError):  # a ConfigurationError is one too
        return 422  # a message the system cannot carry as given: the caller's to fix
    if isinstance(error, RetriableError):
        return 503  # the broker busy, a timeout: worth trying again later
    return 502


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service; without ``settings`` they are read from the environment when it starts."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        chosen = settings or Settings.from_environment()
        links: dict[System, Link] = {}
        # Leaving the stack undoes it in reverse: consumer tasks stop, then per system (TubeMQ, Pulsar, Kafka)
        # the consumer closes, the producer flushes what is buffered and closes, and the client closes.
        async with AsyncExitStack() as stack:
            for system in SYSTEMS:
                client = await stack.enter_async_context(CONNECT[system](chosen.urls[system]))
                topic = chosen.topics[system]
                producer = await stack.enter_async_context(client.producer(topic))
                consumer = await stack.enter_async_context(client.consumer(topic, group=chosen.group, start="earliest"))
                links[system] = Link(system, producer, consumer)
            stack.push_async_callback(stop_consumers, links)
            for link in links.values():
                link.task = asyncio.create_task(link.consume(), name=f"consume {link.system}")
                link.task.add_done_callback(_consumer_ended(link))
            app.state.links = links
            log.info("serving %s", ", ".join(f"{s} topic {chosen.topics[s]}" for s in SYSTEMS))
            yield
            log.info("stopping: flushing %d enqueued messages", sum(len(x.unacknowledged) for x in links.values()))
        log.info("stopped: every producer and client closed")

    app = FastAPI(title="mqwire service example", lifespan=lifespan)

    def link_for(request: Request, system: System) -> Link:
        links: dict[System, Link] = request.app.state.links
        return links[system]

    async def send_failed(request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=status_for(error))

    app.add_exception_handler(MqwireError, send_failed)
    app.add_exception_handler(ValueError, send_failed)

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        loop = type(asyncio.get_running_loop())
        links: dict[System, Link] = request.app.state.links
        return {
            "loop": f"{loop.__module__}.{loop.__qualname__}",
            "consuming": {system: link.task is not None and not link.task.done() for system, link in links.items()},
            "failed_sends": {system: link.failed_sends for system, link in links.items()},
        }

    @app.post("/{system}/messages")
    async def send(request: Request, system: System, message: OutgoingMessage) -> dict[str, Any]:
        return receipt_json(await link_for(request, system).send(message))

    @app.post("/{system}/enqueue", status_code=202)
    async def enqueue(request: Request, system: System, messages: list[OutgoingMessage]) -> dict[str, int]:
        link = link_for(request, system)
        for message in messages:
            await link.enqueue(message)
        return {"enqueued": len(messages)}

    @app.get("/{system}/consumed")
    async def consumed(request: Request, system: System) -> list[dict[str, Any]]:
        return list(link_for(request, system).consumed)

    return app


app = create_app()
"""The service configured from the environment: ``uvicorn service:app --app-dir examples --loop uvloop``."""


def main() -> None:
    """Parse the command line and serve with uvicorn on uvloop until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    for system in SYSTEMS:
        parser.add_argument(f"--{system}", metavar="URL", help=f"default: MQWIRE_{system.upper()}_URL")
    parser.add_argument("--topic", help="the topic on every system (default: MQWIRE_SERVICE_TOPIC or service)")
    parser.add_argument("--group", help="the consumer group (default: MQWIRE_SERVICE_GROUP or service)")
    args = parser.parse_args()
    if args.topic:
        os.environ["MQWIRE_SERVICE_TOPIC"] = args.topic
    if args.group:
        os.environ["MQWIRE_SERVICE_GROUP"] = args.group
    settings = Settings.from_environment({system: getattr(args, system) for system in SYSTEMS})
    uvicorn.run(create_app(settings), host=args.host, port=args.port, loop="uvloop")


if __name__ == "__main__":
    main()
