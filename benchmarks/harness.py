"""What every throughput benchmark shares: timing with CPU seconds, the table, and a broker to run on."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Result:
    client: str
    phase: str
    records: int
    seconds: float
    cpu_seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(client: str, phase: str, records: int, work: Awaitable[None]) -> Result:
    cpu, wall = cpu_now(), time.perf_counter()
    await work
    return Result(client, phase, records, time.perf_counter() - wall, cpu_now() - cpu)


def report(results: list[Result], ours: str) -> None:
    print(f"{'client':<16}{'phase':<9}{'records/s':>12}{'seconds':>9}{'cpu s':>8}")
    for r in results:
        print(f"{r.client:<16}{r.phase:<9}{r.rate:>12,.0f}{r.seconds:>9.2f}{r.cpu_seconds:>8.2f}")
    mine = {r.phase: r for r in results if r.client == ours}
    print(f"\nratios ({ours} / peer, records/s):")
    for r in results:
        if r.client != ours and r.rate:
            print(f"  {r.phase:<8} vs {r.client:<16} {mine[r.phase].rate / r.rate:5.2f}x")


@contextmanager
def local_broker(name: str, url: str | None) -> Iterator[dict[str, str]]:
    """The URLs of a broker: the given one, or one started with the project's launcher for this run."""
    if url is not None:
        yield {name: url}
        return
    state_dir = tempfile.mkdtemp(prefix="mqwire-bench-")
    started = subprocess.run(
        [sys.executable, "-m", "brokers", "--state-dir", state_dir, "start", name],
        check=True, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield json.loads(started.stdout)
    finally:
        subprocess.run([sys.executable, "-m", "brokers", "--state-dir", state_dir, "stop"], check=False)
