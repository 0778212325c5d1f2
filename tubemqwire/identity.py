"""Who this client says it is: its IPv4 address and the ids of its producers and consumers."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import socket
import time

from mqwire.common.version import __version__
from tubemqwire.protocol.messages import ipv4_to_int32

CLIENT_NAME = "mqwire"
CLIENT_VERSION = __version__
# Free text the master logs for every registration (the Java client sends its JDK version here).
CLIENT_DESCRIPTION = f"{CLIENT_NAME}-python-{CLIENT_VERSION}"

_counter = itertools.count(1)


async def local_ipv4(toward: tuple[str, int]) -> str:
    """The local IPv4 address used to reach ``toward``; 127.0.0.1 when it cannot be told.

    A UDP socket "connected" to the peer makes the kernel pick the route without sending anything.
    """
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(toward[0], toward[1], family=socket.AF_INET, type=socket.SOCK_DGRAM)
    except OSError:
        return "127.0.0.1"
    for _family, _type, _proto, _name, address in infos:
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(address)
            host = str(probe.getsockname()[0])
            if host and host != "0.0.0.0":
                return host
    return "127.0.0.1"


def address_id(host: str) -> int:
    """SendMessageRequestP2B.sentAddr of an IPv4 address."""
    return ipv4_to_int32(host)


def _unique() -> str:
    return f"{os.getpid()}-{time.time_ns()}-{secrets.randbelow(2**31)}-{next(_counter)}"


def producer_id(host: str) -> str:
    """Like the Java client's: address, process id, clock, randomness; then the client name and version."""
    return f"{host}-{_unique()}-{CLIENT_NAME}-{CLIENT_VERSION}"


def consumer_id(group: str, host: str) -> str:
    # The id is embedded in subscribe-info strings, so it must hold none of "#:,@".
    return f"{group}_{host}-{_unique()}-Pull-{CLIENT_NAME}-{CLIENT_VERSION}"
