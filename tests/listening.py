"""The TCP addresses processes listen on, read from /proc (Linux): for checking that what the launcher starts
listens on loopback only."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path

LISTEN = "0A"  # the TCP state in /proc/net/tcp*


def _socket_inodes(pids: Iterable[int]) -> set[str]:
    inodes: set[str] = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue  # closed meanwhile
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def listening(pids: Iterable[int]) -> list[tuple[str, int]]:
    """Every (address, port) the processes listen on with TCP, IPv4 and IPv6."""
    inodes = _socket_inodes(pids)
    found: list[tuple[str, int]] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and inode in inodes:
                hex_address, hex_port = local.split(":")
                found.append((str(_address(hex_address)), int(hex_port, 16)))
    return found


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped loopback address."""
    parsed = ipaddress.ip_address(address)
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return parsed.ipv4_mapped.is_loopback
    return parsed.is_loopback
