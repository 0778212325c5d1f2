"""A transport callback that raises ends the connection at once with a typed error carrying the cause, on
whichever loop the run uses (asyncio's or uvloop's): never a request that waits for its timeout."""

from __future__ import annotations

import asyncio
import time

import pytest

from mqwire.common import transport
from mqwire.common.channel import Channel
from mqwire.common.errors import ConnectError, ConnectionLostError
from mqwire.common.framing import LengthPrefixedSplitter

from .test_common_transport import echo, frame, open_channel, request_id_of, serve


class BrokenBufferSplitter(LengthPrefixedSplitter):
    """Fails when asked where the next read goes, after ``good`` reads."""

    def __init__(self, good: int) -> None:
        super().__init__(1 << 20)
        self.good = good

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.good == 0:
            raise RuntimeError("no buffer")
        self.good -= 1
        return super().get_buffer(sizehint)


async def test_a_failure_in_connection_made_fails_the_open_with_connect_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Write limits that every loop refuses make set_write_buffer_limits raise inside connection_made.
    monkeypatch.setattr(transport, "_TRANSPORT_HIGH_WATER", -1)
    async for address in serve(echo):
        started = time.monotonic()
        with pytest.raises(ConnectError, match="connection_made failed") as caught:
            await open_channel(address, connect_timeout=120)
        assert isinstance(caught.value.__cause__, ValueError)
        # At once, not when the connect timeout ran out: liveness bound far below it and far above a
        # loaded machine's scheduling delay.
        assert time.monotonic() - started < 30


async def test_a_failure_in_get_buffer_fails_the_waiting_request_with_connection_lost() -> None:
    async for address in serve(echo):
        channel = await Channel.open(address, splitter=BrokenBufferSplitter(good=0), correlation_id_of=request_id_of)
        request_id = channel.next_id()
        with pytest.raises(ConnectionLostError, match="get_buffer failed") as caught:
            await asyncio.wait_for(channel.request(request_id, frame(request_id, b"x"), 30), 10)
        assert isinstance(caught.value.__cause__, RuntimeError)
        assert channel.closed


async def test_a_failing_frame_handler_fails_the_connection_with_its_cause() -> None:
    failures: list[BaseException] = []

    def on_unsolicited(_: bytearray) -> None:
        raise KeyError("handler bug")

    async def push(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frame(-1, b"push"))
        await writer.drain()
        await reader.read()

    async for address in serve(push):
        channel = await open_channel(address, on_unsolicited=on_unsolicited, on_close=failures.append)
        for _ in range(500):
            if failures:
                break
            await asyncio.sleep(0.01)
        assert len(failures) == 1
        assert isinstance(failures[0], ConnectionLostError)
        assert isinstance(failures[0].__cause__, KeyError)
        assert channel.closed
