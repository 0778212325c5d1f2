"""TLS through the same transport: a certificate made for the test, verified by default."""

from __future__ import annotations

import asyncio
import ssl
import struct
import subprocess
from pathlib import Path

import pytest

from mqwire.common.channel import Channel
from mqwire.common.errors import ConnectError
from mqwire.common.framing import LengthPrefixedSplitter


def make_certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            (size,) = struct.unpack(">I", await reader.readexactly(4))
            data = await reader.readexactly(size)
            writer.write(struct.pack(">I", size) + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def open_tls(port: int, context: ssl.SSLContext, hostname: str) -> Channel[bytearray]:
    return await Channel.open(
        ("127.0.0.1", port),
        splitter=LengthPrefixedSplitter(1 << 20),
        correlation_id_of=lambda data: int.from_bytes(data[:4], "big"),
        ssl=context,
        server_hostname=hostname,
        connect_timeout=5,
    )


async def test_tls_round_trip_and_verification(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        channel = await open_tls(port, trusting, "localhost")
        reply = await channel.request(7, struct.pack(">Ii", 8, 7) + b"tls!", 5)
        assert reply == struct.pack(">i", 7) + b"tls!"
        channel.close()

        # Default verification: an unknown issuer and a wrong host name are both refused.
        with pytest.raises(ConnectError, match="TLS"):
            await open_tls(port, ssl.create_default_context(), "localhost")
        with pytest.raises(ConnectError):
            await open_tls(port, trusting, "not-this-host.example")
    finally:
        server.close()
