"""The first exchange with a TubeMQ master: register a producer, read the answer, close it again."""

from __future__ import annotations

import os
import socket
from typing import Any

from mqwire.common.urls import parse_service_url
from tubemqwire.connection import TubeConnection
from tubemqwire.protocol import producer
from tubemqwire.protocol.constants import Method, ServiceType

SCHEMES = {"tubemq": 8715}


async def tubemq_handshake(url: str, *, topic: str = "demo", timeout: float = 10.0) -> dict[str, Any]:
    """Register a producer for ``topic`` with the first master of ``url`` and report the master's answer."""
    address = parse_service_url(url, schemes=SCHEMES).addresses[0]
    host = socket.gethostbyname(address[0])
    client_id = f"{host}-{os.getpid()}-mqwire-handshake"
    connection = await TubeConnection.open(address, connect_timeout=timeout, request_timeout=timeout)
    try:
        request = producer.register_request(client_id, [topic], host, client_description="mqwire")
        data = await connection.call(ServiceType.MASTER, Method.MASTER_PRODUCER_REGISTER, request)
        answer = producer.parse_register_response(data)
        closed = await connection.call(
            ServiceType.MASTER, Method.MASTER_PRODUCER_CLOSE, producer.close_request(client_id)
        )
        return {
            "success": answer.success,
            "err_code": answer.err_code,
            "err_msg": answer.err_msg,
            "broker_checksum": answer.broker_checksum,
            "brokers": [f"{b.broker_id}@{b.host}:{b.port}" for b in answer.brokers],
            "max_message_size": answer.max_message_size,
            "closed": producer.parse_close_response(closed)[0],
        }
    finally:
        connection.close()
        await connection.wait_closed()
