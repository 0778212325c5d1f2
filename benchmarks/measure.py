"""What every run of the suite is measured with: the batch settings the Python clients share (under
``--defaults`` none: each client's own), the clock (wall time, the client's CPU time and the brokers'), the
send-to-acknowledgement latencies and the pace of fixed-rate runs. The produce and consume loops (clients.py)
and the Kafka ceiling (ceiling.py) both use them.
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

LINGER_MS = 5
BATCH_BYTES = 256 * 1024
# Set (to "1") by ``suite.py --defaults``: the Python clients then get no batch size, only LINGER_MS, and
# each batches as a user who sets nothing meets it.
DEFAULTS_VARIABLE = "BENCH_CLIENT_DEFAULTS"


def client_defaults() -> bool:
    """Whether this run measures the clients at their own batch sizes (``suite.py --defaults``)."""
    return os.environ.get(DEFAULTS_VARIABLE, "") == "1"


def batch_option(name: str = "batch_size") -> dict[str, int]:
    """The shared batch size as a producer keyword (``name``: the client's own), or nothing under ``--defaults``."""
    return {} if client_defaults() else {name: BATCH_BYTES}


# The Pulsar producers' shared settings: batches of up to 1000 messages and 10,000 awaiting the broker. Under
# ``--defaults`` none: pulsarwire at its own (1000 per partition, growing batches), pulsar-client at its own
# (1000 pending, 1000 messages or 128 KB a batch).
PULSAR_PENDING = 10_000


def pulsar_producer_options() -> dict[str, int]:
    """The Pulsar producers' shared batch and pending-message settings, or nothing under ``--defaults``."""
    return {} if client_defaults() else {"batching_max_messages": 1000, "max_pending_messages": PULSAR_PENDING}


# The broker processes (their pids, comma-separated) whose CPU time the suite reports next to the client's.
BROKER_PIDS_VARIABLE = "BENCH_BROKER_PIDS"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def broker_pids() -> list[int]:
    return [int(pid) for pid in os.environ.get(BROKER_PIDS_VARIABLE, "").split(",") if pid]


def cpu_ticks(stat_path: str) -> int:
    """User and system CPU time, in clock ticks, from a process's or thread's ``stat`` file (OSError if gone)."""
    with open(stat_path, encoding="ascii") as stat:
        # After the command's closing parenthesis: state is field 3, utime and stime fields 14 and 15.
        fields = stat.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def process_cpu_seconds(pids: list[int]) -> float | None:
    """User and system CPU time of the processes ``pids`` (all their threads), or None if one cannot be read."""
    total = 0
    for pid in pids:
        try:
            total += cpu_ticks(f"/proc/{pid}/stat")
        except OSError:
            return None
    return total / CLOCK_TICKS


# HotSpot's just-in-time compiler threads ("C1 CompilerThread0", "C2 CompilerThread1", ...; a thread's name in
# /proc keeps its first 15 characters). A broker compiling code competes with the client for this machine's
# cores, and unlike its work per record it depends on what ran before: the suite shows it apart.
JIT_THREAD_PREFIXES = ("C1 CompilerThre", "C2 CompilerThre")


def compiler_cpu_seconds(pids: list[int]) -> float | None:
    """User and system CPU time of the JIT compiler threads of the JVMs ``pids``, or None if one cannot be read."""
    total = 0
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        for thread in threads:
            try:
                with open(f"/proc/{pid}/task/{thread}/comm", encoding="utf-8") as comm:
                    if not comm.read().startswith(JIT_THREAD_PREFIXES):
                        continue
                total += cpu_ticks(f"/proc/{pid}/task/{thread}/stat")
            except OSError:
                continue  # a compiler thread may end between the listing and the read
    return total / CLOCK_TICKS


@dataclass
class Clock:
    """The measured interval: from ``start()`` (the first call counts) to ``stop()``; the brokers' CPU time
    over the same interval when the suite names their processes."""

    wall: float = 0.0
    cpu: float = 0.0
    broker_cpu: float | None = None
    seconds: float = 0.0
    cpu_used: float = 0.0
    broker_cpu_used: float | None = None
    broker_jit_cpu: float | None = None  # the part of broker_cpu spent compiling (compiler_cpu_seconds)
    broker_jit_cpu_used: float | None = None
    _started: bool = False
    _brokers: list[int] = field(default_factory=broker_pids)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self.wall, self.cpu = time.perf_counter(), cpu_seconds()
            self.broker_cpu = process_cpu_seconds(self._brokers) if self._brokers else None
            self.broker_jit_cpu = compiler_cpu_seconds(self._brokers) if self._brokers else None

    def stop(self) -> None:
        self.start()
        self.seconds = time.perf_counter() - self.wall
        self.cpu_used = cpu_seconds() - self.cpu
        if self.broker_cpu is not None:
            now = process_cpu_seconds(self._brokers)
            self.broker_cpu_used = None if now is None else now - self.broker_cpu
        if self.broker_jit_cpu is not None:
            compiling = compiler_cpu_seconds(self._brokers)
            self.broker_jit_cpu_used = None if compiling is None else compiling - self.broker_jit_cpu


@dataclass
class Latencies:
    """Send-to-acknowledgement times of every ``every``-th send, in seconds."""

    every: int = 10
    samples: list[float] = field(default_factory=list)

    def track(self, index: int) -> Callable[..., None] | None:
        """A callback to run on acknowledgement when send ``index`` is sampled, else None."""
        if index % self.every:
            return None
        begun = time.perf_counter()
        return lambda *_: self.samples.append(time.perf_counter() - begun)

    def percentile(self, q: float) -> float | None:
        if not self.samples:
            return None
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def histogram(self) -> dict[str, int]:
        """The samples counted in LATENCY_BIN-wide logarithmic bins (see ``latency_bin``), so that the suite
        can take percentiles over every round's samples together without keeping each sample."""
        counts: dict[str, int] = {}
        for seconds in self.samples:
            key = str(latency_bin(seconds * 1000))
            counts[key] = counts.get(key, 0) + 1
        return counts


# Latency histograms: bin k holds samples from LATENCY_FLOOR_MS * LATENCY_BIN**k up to the next bin's start.
LATENCY_FLOOR_MS = 0.01
LATENCY_BIN = 1.02


def latency_bin(ms: float) -> int:
    """The histogram bin of a latency in milliseconds (everything under the floor is bin 0)."""
    return max(0, int(math.log(max(ms, LATENCY_FLOOR_MS) / LATENCY_FLOOR_MS) / math.log(LATENCY_BIN)))


def latency_bin_top(index: int) -> float:
    """The upper edge (ms) of a histogram bin: a percentile read from bins is never under the true one."""
    return LATENCY_FLOOR_MS * LATENCY_BIN ** (index + 1)


class Pace:
    """How many sends are due so far: all of them at saturation (no rate), else ``rate`` per second from the
    first call on. Sends go out in the small bursts a timer-driven service makes (about a millisecond's worth);
    ``idle``: how long a sender sleeps when none is due (see clients.IDLE_SECONDS)."""

    def __init__(self, rate: float | None, idle: float = 0.0005) -> None:
        self.rate = rate
        self.idle = idle
        self._begun = 0.0

    def due(self, sent: int, count: int) -> int:
        if self.rate is None:
            return count
        now = time.perf_counter()
        if sent == 0 and not self._begun:
            self._begun = now
        return min(count, int((now - self._begun) * self.rate) + 1)
