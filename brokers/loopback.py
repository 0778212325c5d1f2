"""Loopback-only listeners for servers that cannot be told where to listen.

TubeMQ's master and broker bind their RPC and TLS listeners to the wildcard address: the server's RPC
listener binds ``new InetSocketAddress(port)`` and takes no host, and ``hostName`` in its ini file is only the
address it announces. The launcher starts them with ``loopback_bind.c`` preloaded, which turns a bind() to
the wildcard address into a bind() to the loopback address. The shared object is built here, once per
version of the source, with the machine's C compiler into the launcher's cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

from mqwire.testing.errors import BrokerError
from mqwire.testing.paths import cache_root

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("loopback_bind.c")
COMPILERS = ("cc", "gcc", "clang")


def loopback_preload() -> Path | None:
    """The preloadable shared object, built if needed; None (with a warning) when there is no C compiler."""
    compiler = next((found for name in COMPILERS if (found := shutil.which(name))), None)
    if compiler is None:
        log.warning("no C compiler (%s): TubeMQ's listeners will bind every address, not loopback only",
                    ", ".join(COMPILERS))
        return None
    source = SOURCE.read_bytes()
    target = cache_root() / "preload" / f"loopback_bind-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]
    argv = [compiler, *flags, "-o", str(building), str(SOURCE), "-ldl"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        building.unlink(missing_ok=True)
        raise BrokerError(f"building {SOURCE.name} failed ({' '.join(argv)}): {done.stderr.strip()[-2000:]}")
    os.replace(building, target)  # atomic: a concurrent launcher finds a whole file or none
    return target


def loopback_only(argv: tuple[str, ...], preload: Path | None, address: str = "127.0.0.1") -> tuple[str, ...]:
    """``argv`` run with the shim preloaded (through ``env``, so the server keeps the process id), its
    wildcard binds made to ``address`` (a 127.0.0.0/8 address: a cluster node's own)."""
    if preload is None:
        return argv
    return ("env", f"LD_PRELOAD={preload}", f"MQWIRE_BIND_ADDRESS={address}", *argv)


__all__ = ["loopback_only", "loopback_preload"]
