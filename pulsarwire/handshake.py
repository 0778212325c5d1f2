"""The first exchange with a Pulsar broker: CONNECT -> CONNECTED, then PING -> PONG."""

from __future__ import annotations

from typing import Any

from mqwire.common.urls import parse_service_url
from pulsarwire.connection import PulsarConnection

SCHEMES = {"pulsar": 6650, "pulsar+ssl": 6651}


async def pulsar_handshake(url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Connect to the service URL and report what the broker announced."""
    address = parse_service_url(url, schemes=SCHEMES).addresses[0]
    connection = await PulsarConnection.open(address, connect_timeout=timeout)
    try:
        round_trip = await connection.ping(timeout)
        return {
            "server_version": connection.server_version,
            "protocol_version": connection.protocol_version,
            "max_message_size": connection.max_message_size,
            "ping_round_trip_ms": round(round_trip * 1000, 2),
        }
    finally:
        connection.close()
        await connection.wait_closed()
