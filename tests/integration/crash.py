"""A broker of a test's own, killed with SIGKILL and started again on the same ports with the same data.

It goes through ``python -m mqwire.testing`` (``start``, ``kill``, ``start``, ``stop``) in a state folder of its own,
exactly as a user rehearses a crash, so the session's shared brokers are never disturbed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

START_TIMEOUT = 240


class OwnBroker:
    def __init__(self, name: str, state_dir: Path, *start_options: str) -> None:
        self.name = name
        self.state_dir = state_dir
        self.start_options = start_options
        self.info: dict[str, Any] = {}

    def _cli(self, *args: str, timeout: float = START_TIMEOUT) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mqwire.testing", "--state-dir", str(self.state_dir), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"brokers {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def start(self) -> dict[str, Any]:
        self.info = json.loads(self._cli("start", *self.start_options, self.name))["brokers"][self.name]
        return self.info

    @property
    def url(self) -> str:
        return str(self.info["url"])

    def kill(self) -> None:
        self._cli("kill", self.name, timeout=60)

    def stop(self) -> None:
        self._cli("stop", timeout=120)

    def pids(self) -> list[int]:
        return [int(pid) for pid in self.info.get("pids", {}).values()]

    @contextlib.contextmanager
    def stalled(self) -> Iterator[None]:
        """The broker frozen with SIGSTOP: connections stay open, nothing is answered (a hung host)."""
        pids = self.pids()
        assert pids, f"no pids for {self.name}"
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    @classmethod
    @contextlib.contextmanager
    def for_module(cls, name: str, state_dir: Path, *start_options: str) -> Iterator[OwnBroker]:
        """One broker for a module's tests, stopped after the last: each test takes it with :meth:`revived`."""
        broker = cls(name, state_dir, *start_options)
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()

    def revived(self) -> OwnBroker:
        """This broker, up: a test that crashed it and failed before bringing it back leaves it down, and the
        next test must not inherit that (``start`` leaves a running broker alone)."""
        self.start()
        return self

    async def crash_and_restart(self, down_seconds: float) -> None:
        """SIGKILL, stay down a while, then start again with the same ports and data."""
        before = self.url
        await asyncio.to_thread(self.kill)
        await asyncio.sleep(down_seconds)
        await asyncio.to_thread(self.start)
        assert self.url == before, f"{self.name} came back at {self.url}, not {before}"
