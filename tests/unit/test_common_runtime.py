"""Where the clients cannot run, the first call says so: no asyncio loop running (a bare coroutine, trio), or a
loop that lacks what the connections need, gets ``UnsupportedRuntimeError`` naming it, never a bare
``RuntimeError`` from deep inside asyncio or a request that waits for its timeout."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.errors import ConfigurationError, UnsupportedRuntimeError
from mqwire.common.framing import LengthPrefixedSplitter
from mqwire.common.transport import Connection

SYSTEMS = ("kafka", "pulsar", "tubemq")


def make_client(system: str, port: int = 9) -> Any:
    if system == "kafka":
        return kafkawire.connect(f"kafka://127.0.0.1:{port}")
    if system == "pulsar":
        return pulsarwire.connect(f"pulsar://127.0.0.1:{port}")
    return tubemqwire.connect(f"tubemq://127.0.0.1:{port}")


def drive_once(coroutine: Coroutine[Any, Any, Any]) -> None:
    """Run ``coroutine`` up to its first suspension with no event loop at all, as a foreign runner would."""
    try:
        coroutine.send(None)
    finally:
        coroutine.close()


def test_the_error_is_a_configuration_error_and_a_runtime_error_of_every_package() -> None:
    assert issubclass(UnsupportedRuntimeError, ConfigurationError)
    assert issubclass(UnsupportedRuntimeError, RuntimeError)  # what asyncio raised before: old handlers still catch it
    for package in (kafkawire, pulsarwire, tubemqwire):
        assert package.UnsupportedRuntimeError is UnsupportedRuntimeError
        assert "UnsupportedRuntimeError" in package.__all__


@pytest.mark.parametrize("system", SYSTEMS)
def test_connecting_with_no_asyncio_loop_running_says_so(system: str) -> None:
    client = make_client(system)
    with pytest.raises(UnsupportedRuntimeError, match="no asyncio event loop is running") as caught:
        drive_once(client.start())
    assert "asyncio.run" in str(caught.value) and "uvloop" in str(caught.value)


@pytest.fixture
def under_trio(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """sniffio answering "trio", as it does inside a trio task (trio imports sniffio and reports itself)."""
    sniffio = types.ModuleType("sniffio")

    class AsyncLibraryNotFoundError(RuntimeError):
        pass

    sniffio.AsyncLibraryNotFoundError = AsyncLibraryNotFoundError  # type: ignore[attr-defined]
    sniffio.current_async_library = lambda: "trio"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sniffio", sniffio)
    yield


@pytest.mark.parametrize("system", SYSTEMS)
def test_under_trio_connect_and_the_factories_name_trio_and_the_bridges(system: str, under_trio: None) -> None:
    client = make_client(system)
    with pytest.raises(UnsupportedRuntimeError, match="trio is running here, not asyncio") as caught:
        drive_once(client.start())
    assert "trio-asyncio" in str(caught.value) and "anyio" in str(caught.value)
    with pytest.raises(UnsupportedRuntimeError, match="trio is running here"):
        client.producer("orders")


def test_sniffio_naming_asyncio_or_nothing_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    sniffio = types.ModuleType("sniffio")

    class AsyncLibraryNotFoundError(RuntimeError):
        pass

    def nothing() -> str:
        raise AsyncLibraryNotFoundError

    sniffio.AsyncLibraryNotFoundError = AsyncLibraryNotFoundError  # type: ignore[attr-defined]
    sniffio.current_async_library = nothing  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sniffio", sniffio)
    client = make_client("kafka")
    client.producer("orders")  # made outside any loop, as at import time: allowed
    with pytest.raises(UnsupportedRuntimeError, match="no asyncio event loop is running"):
        drive_once(client.start())


class NoConnectionsLoop(asyncio.SelectorEventLoop):
    """A loop that leaves create_connection to AbstractEventLoop (NotImplementedError)."""

    create_connection = asyncio.AbstractEventLoop.create_connection


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_loop_without_create_connection_is_named_at_connect(system: str) -> None:
    loop = NoConnectionsLoop()
    try:
        client = make_client(system)
        with pytest.raises(UnsupportedRuntimeError, match=r"NoConnectionsLoop.*create_connection"):
            loop.run_until_complete(asyncio.wait_for(client.start(), 10))

        async def connect_inside() -> None:
            make_client(system)

        with pytest.raises(UnsupportedRuntimeError, match="NoConnectionsLoop"):
            loop.run_until_complete(connect_inside())
    finally:
        loop.close()


# ------------------------------------------------------------------- a loop without BufferedProtocol support
class PlainProtocol(asyncio.Protocol):
    """What a loop without BufferedProtocol support talks to: reads arrive through data_received."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class NoBufferedProtocolLoop(asyncio.SelectorEventLoop):
    """A loop that calls data_received whatever the protocol, as one without BufferedProtocol support does."""

    async def create_connection(
        self, protocol_factory: Callable[[], Any], *args: Any, **kwargs: Any
    ) -> tuple[asyncio.Transport, Any]:
        made: list[Any] = []

        def plain() -> PlainProtocol:
            made.append(protocol_factory())
            return PlainProtocol(made[0])

        transport, _ = await super().create_connection(plain, *args, **kwargs)
        return transport, made[0]


def run_on(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Any]) -> Any:
    try:
        return loop.run_until_complete(work)
    finally:
        loop.close()


async def answer_anything(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server that answers each read with a few bytes (no protocol: the client must fail before parsing)."""
    try:
        while await reader.read(65536):
            writer.write(b"\x00\x00\x00\x04abcd")
            await writer.drain()
    finally:
        writer.close()


def test_a_loop_calling_data_received_fails_the_connection_naming_the_loop() -> None:
    async def work() -> None:
        server = await asyncio.start_server(answer_anything, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        closed: list[BaseException] = []
        try:
            connection = await Connection.open(
                ("127.0.0.1", port),
                splitter=LengthPrefixedSplitter(1 << 20),
                on_frame=lambda frame: None,
                on_close=closed.append,
            )
            connection.write(b"\x00\x00\x00\x01x")
            await asyncio.wait_for(connection.wait_closed(), 10)
            assert isinstance(connection.error, UnsupportedRuntimeError)
            assert "NoBufferedProtocolLoop" in str(connection.error)
            assert "BufferedProtocol" in str(connection.error)
            assert closed == [connection.error]
            with pytest.raises(UnsupportedRuntimeError):
                connection.write(b"more")
        finally:
            server.close()
            await server.wait_closed()

    run_on(NoBufferedProtocolLoop(), work())


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_client_on_a_loop_calling_data_received_fails_its_start_naming_the_loop(system: str) -> None:
    async def work() -> None:
        server = await asyncio.start_server(answer_anything, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = make_client(system, port)
        try:
            with pytest.raises(UnsupportedRuntimeError, match="NoBufferedProtocolLoop"):
                await asyncio.wait_for(client.start(), 20)
                # TubeMQ's start only opens a connection to a master: its first answer comes to a producer.
                await asyncio.wait_for(client.producer("orders").start(), 20)
        finally:
            await client.close()
            server.close()
            await server.wait_closed()

    run_on(NoBufferedProtocolLoop(), work())
