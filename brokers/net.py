"""Loopback addresses and free ports."""

from __future__ import annotations

import contextlib
import socket
import time

LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports that were free on the loopback address a moment ago.

    All sockets stay bound until every port is chosen, so the kernel cannot hand out the same
    port twice within one call.
    """
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


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
