"""The client, not the broker, decides how large a Pulsar frame may be.

A broker (or whatever answers in its place) that announces a huge ``max_message_size`` in CONNECTED and
then sends an 8-byte frame header made the client allocate what that header claimed.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

import pytest

from mqwire.common.errors import FrameTooLargeError
from mqwire.common.options import build_config
from pulsarwire.connection import DEFAULT_MAX_MESSAGE_SIZE, PulsarConnection
from pulsarwire.options import ClientConfig
from pulsarwire.protocol.frames import encode_command
from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand, CommandConnected
from pulsarwire.session import Session
from tests.unit.test_malicious_peers import BOUND, linger, peak_memory, read_sized, serve

MIB = 1024 * 1024


def connected(max_message_size: int) -> bytes:
    body = CommandConnected(server_version="rogue", protocol_version=21, max_message_size=max_message_size)
    return encode_command(BaseCommand(type=BaseCommand.CONNECTED, connected=body))


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def rogue_broker(announced: int, claimed: int) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_sized(reader)  # CONNECT
        writer.write(connected(announced))
        await writer.drain()
        # Let the handshake end before the frame header comes (refusing it during the handshake is right too).
        await asyncio.sleep(0.2)
        writer.write(struct.pack(">I", claimed))  # a frame header, nothing after it
        await linger(reader)
        writer.close()

    return handler


async def refused_frame(address: tuple[str, int], **options: int) -> int:
    """The connection's message size limit once the rogue frame header was refused."""
    connection = await asyncio.wait_for(PulsarConnection.open(address, **options), BOUND)
    await asyncio.wait_for(connection.wait_closed(), BOUND)
    assert isinstance(connection.channel.error, FrameTooLargeError)
    return connection.max_message_size


async def test_a_broker_announcing_a_huge_maximum_does_not_raise_the_frame_limit() -> None:
    claimed = 96 * MIB
    with peak_memory() as peak:
        async with serve(rogue_broker(announced=1 << 30, claimed=claimed)) as address:
            assert await refused_frame(address) == DEFAULT_MAX_MESSAGE_SIZE
    # Before, the claimed 96 MiB buffer was allocated and the connection waited for it to fill.
    assert peak[0] < 16 * MIB


async def test_the_client_limit_is_an_option_and_a_lower_broker_value_lowers_it() -> None:
    async with serve(rogue_broker(announced=1 * MIB, claimed=3 * MIB)) as address:
        assert await refused_frame(address, max_message_size=2 * MIB) == 1 * MIB
    async with serve(rogue_broker(announced=64 * MIB, claimed=3 * MIB)) as address:
        assert await refused_frame(address, max_message_size=2 * MIB) == 2 * MIB


def test_the_session_passes_a_checked_limit() -> None:
    config = build_config(ClientConfig, "connect", {"max_message_size": 2 * MIB})
    assert Session("pulsar://localhost:6650", config).max_message_size == 2 * MIB
    with pytest.raises(ValueError, match="max_message_size"):
        build_config(ClientConfig, "connect", {"max_message_size": 0})
