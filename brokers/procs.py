"""Start JVMs in their own process group, watch them, and stop them without leaving any behind."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mqwire.testing.errors import BrokerStartError

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class ProcSpec:
    """Everything needed to (re)start one JVM: the same spec brings it back on the same ports and data."""

    role: str
    argv: tuple[str, ...]
    cwd: str
    stdout_file: str
    log_file: str
    marker: str

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "argv": list(self.argv),
            "cwd": self.cwd,
            "stdout_file": self.stdout_file,
            "log_file": self.log_file,
            "marker": self.marker,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcSpec:
        return cls(
            data["role"],
            tuple(data["argv"]),
            data["cwd"],
            data["stdout_file"],
            data["log_file"],
            data["marker"],
        )


# Children of this interpreter that must not outlive it (the in-process launcher used by tests).
_owned: dict[int, subprocess.Popen[bytes]] = {}
_owned_lock = threading.Lock()


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGKILL to the JVM if this
    # interpreter dies, even by SIGKILL, when atexit handlers never run.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(spec: ProcSpec, owned: bool) -> int:
    """Start ``spec``; with ``owned`` the JVM dies with this interpreter, otherwise it is detached."""
    Path(spec.stdout_file).parent.mkdir(parents=True, exist_ok=True)
    # The parent-death signal fires when the forking *thread* ends, so it is only safe from the main thread.
    tie = owned and threading.current_thread() is threading.main_thread()
    with open(spec.stdout_file, "ab") as out:
        popen = subprocess.Popen(
            spec.argv,
            cwd=spec.cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent if tie else None,
        )
    if owned:
        with _owned_lock:
            _owned[popen.pid] = popen
    return popen.pid


def alive(pid: int, marker: str) -> bool:
    """True when ``pid`` is still the JVM started with ``marker`` (pids get reused)."""
    with _owned_lock:
        popen = _owned.get(pid)
    if popen is not None and popen.poll() is not None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    if state in ("Z", "X"):
        return False
    # The kernel returns an empty command line when it cannot read the process memory at that
    # moment (seen while a JVM maps memory at start); that says nothing about who the pid is.
    return cmdline == [b""] or marker.encode() in cmdline


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _wait_gone(pid: int, marker: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid, marker):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop(pid: int, marker: str, timeout: float = 20.0) -> None:
    """SIGTERM the JVM's process group, then SIGKILL it if it is still there after ``timeout``."""
    if alive(pid, marker):
        _signal_group(pid, signal.SIGTERM)
        if not _wait_gone(pid, marker, timeout):
            _signal_group(pid, signal.SIGKILL)
            _wait_gone(pid, marker, 10.0)
    _forget(pid)


def kill(pid: int, marker: str) -> None:
    """SIGKILL at once, as a crash would."""
    if alive(pid, marker):
        _signal_group(pid, signal.SIGKILL)
        _wait_gone(pid, marker, 10.0)
    _forget(pid)


def _forget(pid: int) -> None:
    with _owned_lock:
        popen = _owned.pop(pid, None)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=1)


def _stop_owned_at_exit() -> None:
    with _owned_lock:
        pids = list(_owned)
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15.0
    for pid in pids:
        with _owned_lock:
            popen = _owned.get(pid)
        if popen is None:
            continue
        try:
            popen.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            _signal_group(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=5)
        _forget(pid)


atexit.register(_stop_owned_at_exit)


def tail(path: str | Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file ("" when it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(size - 256 * 1024, 0))
            data = f.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-lines:])


def log_tails(paths: Sequence[str], lines: int = 40) -> str:
    parts = []
    for path in paths:
        text = tail(path, lines)
        if text:
            parts.append(f"--- last {lines} lines of {path} ---\n{text}")
    return "\n".join(parts) if parts else "(no log output)"


def wait_until(
    what: str,
    check: Callable[[], T | None],
    timeout: float,
    watched: Sequence[tuple[int, ProcSpec]],
) -> T:
    """Poll ``check`` until it returns a value; fail early if a watched JVM dies, with its log tail."""
    deadline = time.monotonic() + timeout
    logs = [p for _, spec in watched for p in (spec.log_file, spec.stdout_file)]
    while True:
        result = check()
        if result is not None:
            return result
        for pid, spec in watched:
            if not alive(pid, spec.marker):
                raise BrokerStartError(
                    f"{spec.role} (pid {pid}) exited while waiting for {what}\n{log_tails(logs)}"
                )
        if time.monotonic() >= deadline:
            raise BrokerStartError(f"timed out after {timeout:.0f}s waiting for {what}\n{log_tails(logs)}")
        time.sleep(POLL_SECONDS)
