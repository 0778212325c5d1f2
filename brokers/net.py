"""Loopback addresses and free ports."""

from __future__ import annotations

import contextlib
import random
import socket
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


# The lowest port chosen for a server outside the kernel's ephemeral range (below it: well-known services).
LOWEST_SERVER_PORT = 10_000
# Random ports tried per port wanted before the kernel is asked for one (bind to port 0).
_TRIES_PER_PORT = 20
_random = random.Random()


def ephemeral_range() -> tuple[int, int] | None:
    """The ports the kernel gives outgoing connections (Linux's ``ip_local_port_range``), if known."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return None
    return low, high


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports that were free on the loopback address a moment ago.

    They are drawn below the kernel's ephemeral range where it leaves room: a port from that range can be
    taken by a client's outgoing connection between this choice and the server's bind. All sockets stay bound
    until every port is chosen, so the same port is never handed out twice within one call.
    """
    sockets: list[socket.socket] = []
    try:
        span = ephemeral_range()
        if span is not None and span[0] - LOWEST_SERVER_PORT >= 1_000:
            for _ in range(_TRIES_PER_PORT * count):
                if len(sockets) == count:
                    break
                sock = _bound(_random.randrange(LOWEST_SERVER_PORT, span[0]))
                if sock is not None:
                    sockets.append(sock)
        while len(sockets) < count:  # no room below the range, or too many taken there: the kernel's choice
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _bound(port: int) -> socket.socket | None:
    """A socket bound to ``port`` on the loopback address, or None when the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((LOOPBACK, port))
    except OSError:
        sock.close()
        return None
    return sock


def free_port() -> int:
    return free_ports(1)[0]


def port_is_open(port: int, host: str = LOOPBACK, timeout: float = 1.0) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when ``port`` can be bound on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same option the JVM servers use, so a port in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def wait_ports_free(ports: list[int], timeout: float = 10.0) -> list[int]:
    """Wait until every port can be bound again; return the ones still busy at the deadline."""
    deadline = time.monotonic() + timeout
    busy = [p for p in ports if not port_is_free(p)]
    while busy and time.monotonic() < deadline:
        time.sleep(0.2)
        busy = [p for p in busy if not port_is_free(p)]
    return busy


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Read exactly ``size`` bytes or raise ``ConnectionError``."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(chunks)} of {size} bytes")
        chunks += chunk
    return bytes(chunks)


def close_quietly(sock: socket.socket | None) -> None:
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()


def loopback_interface() -> str | None:
    """Name of the loopback network interface ("lo" on Linux), if there is one."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((n for n in names if n == "lo" or n.startswith("lo")), None)
