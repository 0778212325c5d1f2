"""The token of a Pulsar CONNECT (and of an AUTH_RESPONSE) reaches the broker and nothing else.

The CONNECT command's protobuf repr shows ``auth_data``; no log line at DEBUG, error message, repr or stats
the client writes over a token-authenticated connection, a credentials refresh and a refused handshake may
include the token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

import pulsarwire
from mqwire.common.errors import MqwireError
from pulsarwire.protocol.frames import decode_frame, encode_command
from pulsarwire.protocol.pulsar_api_pb2 import (
    AuthData,
    BaseCommand,
    CommandAuthChallenge,
    CommandConnected,
    CommandError,
    ServerError,
)
from tests.unit.test_malicious_peers import BOUND, linger, read_sized, serve

TOKEN = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXN1YmplY3Q.s3cr3t-s1gnature-7f3a9c"
FRESH = "eyJhbGciOiJIUzI1NiJ9.ZnJlc2gtc3ViamVjdA.fr3sh-s1gnature-19be02"

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def connected() -> bytes:
    body = CommandConnected(server_version="fake", protocol_version=21, max_message_size=5 * 1024 * 1024)
    return encode_command(BaseCommand(type=BaseCommand.CONNECTED, connected=body))


def broker(seen: list[bytes], *, refuse: bool = False, challenge: bool = False) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connect = decode_frame(await read_sized(reader)).command.connect
        seen.append(connect.auth_data)
        if refuse:
            error = CommandError(request_id=0, error=ServerError.AuthenticationError, message="token refused")
            writer.write(encode_command(BaseCommand(type=BaseCommand.ERROR, error=error)))
        else:
            writer.write(connected())
            if challenge:
                ask = CommandAuthChallenge(server_version="fake", protocol_version=21,
                                           challenge=AuthData(auth_method_name="token", auth_data=b"refresh"))
                writer.write(encode_command(BaseCommand(type=BaseCommand.AUTH_CHALLENGE, authChallenge=ask)))
                await writer.drain()
                response = decode_frame(await read_sized(reader)).command.authResponse
                seen.append(response.response.auth_data)
        await writer.drain()
        await linger(reader)
        writer.close()

    return handler


def everything_written(client: pulsarwire.Client, caplog: pytest.LogCaptureFixture, *more: object) -> str:
    parts = [caplog.text, repr(client), str(client.stats())]
    parts += [f"{record.getMessage()} {record.exc_text or ''}" for record in caplog.records]
    parts += [f"{thing!r} {thing}" for thing in more]
    return "\n".join(parts)


async def test_the_token_goes_to_the_broker_and_into_no_log_repr_or_stats(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[bytes] = []
    fresh = iter([TOKEN, FRESH])

    async def token() -> str:
        return next(fresh)

    async with serve(broker(seen, challenge=True)) as (host, port):
        client = pulsarwire.Client(f"pulsar://{host}:{port}", auth_token=token, operation_timeout=BOUND)
        await asyncio.wait_for(client.start(), BOUND)
        for _ in range(100):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.02)
        written = everything_written(client, caplog)
        await client.close()
    assert seen == [TOKEN.encode(), FRESH.encode()]
    assert TOKEN not in written and FRESH not in written
    assert TOKEN not in caplog.text and FRESH not in caplog.text


async def test_a_refused_token_is_not_in_the_error_or_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[bytes] = []
    async with serve(broker(seen, refuse=True)) as (host, port):
        client = pulsarwire.Client(f"pulsar://{host}:{port}", auth_token=TOKEN, operation_timeout=1)
        with pytest.raises(MqwireError) as caught:
            await asyncio.wait_for(client.start(), BOUND)
        written = everything_written(client, caplog, caught.value, caught.value.__cause__, caught.value.__context__)
        await client.close()
    assert seen and seen[0] == TOKEN.encode()
    assert TOKEN not in written
