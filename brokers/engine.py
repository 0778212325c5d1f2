"""A Docker engine for the containerized brokers: found when one answers, otherwise installed and started.

``ensure`` is what ``make docker-engine`` runs: a user whose engine answers (Docker Desktop, a running
``dockerd``, ``DOCKER_HOST``) gets nothing done. Otherwise, as root on Debian, it installs Debian's
``docker.io`` and ``debootstrap`` when missing and starts ``dockerd`` in the background (overlay2, or vfs
where overlay2 cannot run), its pid and log in a folder of the run (``build/`` for the Makefile). ``stop``
stops only a ``dockerd`` that ``ensure`` started, found by its pid file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from mqwire.testing.errors import BrokerError

PACKAGES = {"dockerd": "docker.io", "debootstrap": "debootstrap"}
STORAGE_DRIVERS = ("overlay2", "vfs")
PING_TIMEOUT = 5.0
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


class EngineError(BrokerError):
    """No Docker engine answers, or one could not be installed or started."""


def answers(timeout: float = PING_TIMEOUT) -> str | None:
    """None when a Docker engine answers a ping within ``timeout``; otherwise why not."""
    try:
        import docker  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        return "the Docker SDK is not installed: pip install 'testcontainers>=4.7,<5' (it brings the SDK)"
    try:
        client = docker.from_env(timeout=max(int(timeout), 1))
        try:
            client.ping()
        finally:
            client.close()
    except Exception as err:  # the SDK raises requests', urllib3's and its own errors alike
        return f"{type(err).__name__}: {err}"
    return None


def _which(program: str) -> str | None:
    # dockerd and debootstrap live in sbin, which a non-login root shell may not have on PATH.
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin:/usr/local/sbin")


def install_missing() -> list[str]:
    """Install Debian's packages for ``dockerd`` and ``debootstrap`` when missing; returns what was installed."""
    wanted = [package for program, package in PACKAGES.items() if _which(program) is None]
    if not wanted:
        return []
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise EngineError(
            f"{', '.join(wanted)} missing and cannot be installed here (needs root and apt-get): install "
            "Docker (and debootstrap to build the images) yourself, or start an engine and set DOCKER_HOST"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *wanted],
    ):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise EngineError(f"`{' '.join(argv)}` failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return wanted


def _pid_file(run_dir: Path) -> Path:
    return run_dir / "dockerd.pid"


def _log_file(run_dir: Path) -> Path:
    return run_dir / "dockerd.log"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _start_dockerd(dockerd: str, driver: str, run_dir: Path, timeout: float) -> int | None:
    """Start one ``dockerd``; its pid once it answers, None when it exited (the driver cannot run here)."""
    log = _log_file(run_dir)
    with open(log, "ab") as out:
        out.write(f"--- dockerd --storage-driver={driver} ---\n".encode())
        out.flush()
        proc = subprocess.Popen(
            [dockerd, f"--storage-driver={driver}"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _pid_file(run_dir).write_text(f"{proc.pid}\n", encoding="utf-8")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _pid_file(run_dir).unlink(missing_ok=True)
            return None
        if answers(2.0) is None:
            return proc.pid
        time.sleep(0.5)
    stop(run_dir)
    raise EngineError(
        f"dockerd (storage driver {driver}) started but did not answer within {timeout:.0f}s; see {log}:\n"
        f"{_tail(log)}"
    )


def ensure(run_dir: Path, timeout: float = START_TIMEOUT) -> str:
    """Make a Docker engine answer: leave a running one alone, else install and start ``dockerd``.

    Returns a line saying what was done. Fails with :class:`EngineError` naming the log within ``timeout``
    per storage driver tried.
    """
    why = answers()
    if why is None:
        return "a Docker engine answers; nothing to do"
    if os.environ.get("DOCKER_HOST"):
        # A dockerd started here would listen on the default socket, which the client would not use.
        raise EngineError(f"DOCKER_HOST={os.environ['DOCKER_HOST']} does not answer ({why}); start that engine, "
                          "or unset DOCKER_HOST to have one started here")
    installed = install_missing()
    dockerd = _which("dockerd")
    if dockerd is None:
        raise EngineError("dockerd is not installed (Debian package docker.io)")
    if os.geteuid() != 0:
        raise EngineError("no Docker engine answers and dockerd needs root to start; start one, or set DOCKER_HOST")
    run_dir.mkdir(parents=True, exist_ok=True)
    for driver in STORAGE_DRIVERS:
        pid = _start_dockerd(dockerd, driver, run_dir, timeout)
        if pid is not None:
            extra = f" (installed {', '.join(installed)})" if installed else ""
            return f"dockerd started, pid {pid}, storage driver {driver}, log {_log_file(run_dir)}{extra}"
    log = _log_file(run_dir)
    raise EngineError(
        f"dockerd exited at start with every storage driver ({', '.join(STORAGE_DRIVERS)}); see {log}:\n{_tail(log)}"
    )


def stop(run_dir: Path, timeout: float = STOP_TIMEOUT) -> str:
    """Stop the ``dockerd`` that :func:`ensure` started (its pid file); nothing when there is none."""
    pid_file = _pid_file(run_dir)
    try:
        pid = int(pid_file.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return "no dockerd was started here; nothing to stop"
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    pid_file.unlink(missing_ok=True)
    return f"dockerd (pid {pid}) stopped"


__all__ = ["EngineError", "answers", "ensure", "install_missing", "stop"]
