"""The benchmark suite (``make bench``): every client against the same brokers, records and run, fairly.

Kafka: kafkawire (per-record ``enqueue`` and the bulk ``enqueue_many``), aiokafka, kafka-python,
confluent-kafka and Kafka's own Java producer performance tool (produce only); kafkawire also consuming in a
consumer group and in a share group (KIP-932); and ``kafka-ceiling`` (ceiling.py: requests encoded once,
only batch headers read), what the broker itself takes and serves in the same run. Pulsar: pulsarwire and
pulsar-client (its threaded API and its asyncio one). TubeMQ: tubemqwire and the Java TubeMQ client. Messages
of 100 B and 10 KB, topics of 1 and 8 partitions.

Fairness: for each setting one topic is written once (by confluent-kafka, pulsar-client, tubemqwire) and
every consumer reads that same topic from its start, so that they read the same batches; every producer
writes a fresh topic and checks every delivery (futures, or a delivery callback's error); each client runs
in a process of its own; ``--rounds`` rounds (at least 3 for quoted figures), the clients' order changed
from one round and setting to the next (``round_order``: each client in every place and after different
clients), and the median of the rounds reported. Producers also run at fixed
rates (``FIXED_RATES``, records/s), the latency a service sending at that rate sees, as well as at
saturation.

Reported: records/s, CPU microseconds per record (the process's CPU time over the measured interval, all
threads: librdkafka's and the JVM's included; for the Kafka Java tool the whole process), peak resident
memory, and p50/p99 of the time from send to acknowledgement (a sample of every 10th send; the Java
TubeMQ client does not report it). Results go to benchmarks/results/ as text, JSON and a PNG chart;
``--defaults`` measures every client at its own batch size (the rows and files labelled so), as a user who
sets nothing meets it; without it the Python clients and the Java tool share one. ``--loops`` (default
asyncio,uvloop): each client that runs on its caller's event loop runs under each, as a client of its own
(``kafkawire@uvloop``) in the same rounds; the others run once. ``--readme FILE.json [...]`` rewrites the
speed table of docs/performance.md from such files, labelled with their settings and loops.

    .venv/bin/python benchmarks/suite.py [--quick] [--rounds 3] [--scale 1] [--systems kafka,pulsar,tubemq]
        [--sizes 100,10240] [--clients kafkawire,confluent-kafka,...] [--state-dir DIR] [--defaults]
        [--loops asyncio,uvloop]
    .venv/bin/python benchmarks/suite.py --readme benchmarks/results/bench-STAMP.json [...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from charts import Ratio, draw_all  # noqa: E402
from clients import (  # noqa: E402
    CONSUME_ONLY,
    LOOPS,
    ON_LOOPS,
    PRODUCE_ONLY,
    UNPACED,
    client_loop,
    on_loop,
    tubemq_in_flight,
)
from measure import (  # noqa: E402
    BATCH_BYTES,
    BROKER_PIDS_VARIABLE,
    DEFAULTS_VARIABLE,
    client_defaults,
    latency_bin_top,
)

from mqwire.testing import classpath, pulsar_admin  # noqa: E402
from mqwire.testing.java import find_java  # noqa: E402

SIZES = (100, 10_240)
PARTITIONS = (1, 8)
# Records per client and run at --scale 1, by system and message size.
# The counts give runs of 50 MB or more at --scale 0.25: a quarter of them made a consume run last a tenth
# of a second, and its rate mostly the start-up's.
RECORDS = {
    "kafka": {100: 2_000_000, 10_240: 80_000},
    "pulsar": {100: 200_000, 10_240: 40_000},
    "tubemq": {100: 60_000, 10_240: 6_000},
}
# Fixed send rates (records/s) at which producers' latency is measured, each for RATE_SECONDS; a rate whose
# bytes/s pass MAX_FIXED_BYTES for a message size is left out (no client here keeps it up).
FIXED_RATES = {"kafka": (5_000, 50_000), "pulsar": (5_000,), "tubemq": ()}
MAX_FIXED_BYTES = 60e6
OURS = {"kafka": "kafkawire", "pulsar": "pulsarwire", "tubemq": "tubemqwire"}
PEERS = {
    # kafkawire-bulk: kafkawire's enqueue_many (produce only); kafkawire-group and kafkawire-share:
    # kafkawire consuming in a consumer group and in a share group (consume only).
    # kafkawire-sync, pulsarwire-sync, tubemqwire-sync: the blocking API (the package's ``sync`` module);
    # kafkawire-sync-bulk: its enqueue_many (produce only).
    "kafka": ["kafkawire-bulk", "kafkawire-sync", "kafkawire-sync-bulk", "confluent-kafka", "aiokafka", "kafka-python",
              "kafka-java-perf", "kafkawire-group", "kafkawire-share", "kafka-ceiling"],
    # pulsar-client-asyncio: pulsar-client's asyncio API (pulsar.asyncio), on the caller's event loop.
    "pulsar": ["pulsarwire-sync", "pulsar-client", "pulsar-client-asyncio"],
    "tubemq": ["tubemqwire-sync", "tubemq-java"],
}
# The peers the ratio table and the documentation's speed table compare ours with.
REFERENCES = {
    "kafka": ("confluent-kafka", "aiokafka"),
    "pulsar": ("pulsar-client", "pulsar-client-asyncio"),
    "tubemq": ("tubemq-java",),
}
# What the broker itself takes and serves (ceiling.py): shown in the speed table, where "vs ours" is then the
# share of the broker's own rate that our client reaches.
CEILINGS = ("kafka-ceiling",)
RUN_TIMEOUT = 1800.0
RESULTS = HERE / "results"


@dataclass
class Row:
    system: str
    size: int
    partitions: int
    client: str
    phase: str  # produce, consume, or produce@RATE (fixed send rate, records/s)
    records: int
    seconds: float
    cpu_seconds: float
    rss_mb: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    round: int = 0
    # Send-to-acknowledgement samples in logarithmic bins (measure.latency_bin): pooled over the rounds.
    latency_bins: dict[str, int] | None = None
    # The brokers' CPU time over the measured interval (the Python clients' runs), with the client's it says
    # whether the machine's cores or the broker set the pace.
    broker_cpu_seconds: float | None = None
    broker_jit_cpu_seconds: float | None = None  # of it, the brokers' JIT compiler threads'
    # "tuned": the Python clients and the Java tool share one batch size (measure.BATCH_BYTES); "defaults":
    # every client at its own (``--defaults``).
    settings: str = "tuned"

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_us(self) -> float:
        """CPU microseconds per record."""
        return self.cpu_seconds / self.records * 1e6 if self.records else 0.0

    @property
    def broker_cpu_us(self) -> float | None:
        """The brokers' CPU microseconds per record."""
        if self.broker_cpu_seconds is None or not self.records:
            return None
        return self.broker_cpu_seconds / self.records * 1e6

    @property
    def broker_jit_us(self) -> float | None:
        """Of ``broker_cpu_us``, what the brokers' JIT compiler threads spent, per record."""
        if self.broker_jit_cpu_seconds is None or not self.records:
            return None
        return self.broker_jit_cpu_seconds / self.records * 1e6

    @property
    def cores_busy(self) -> float | None:
        """The client's and the brokers' CPU time over the interval: the cores they kept busy together."""
        if self.broker_cpu_seconds is None or self.seconds <= 0:
            return None
        return (self.cpu_seconds + self.broker_cpu_seconds) / self.seconds


def produces(client: str) -> bool:
    return client_loop(client)[0] not in CONSUME_ONLY


def consumes(client: str) -> bool:
    return client_loop(client)[0] not in PRODUCE_ONLY


def expand(clients: list[str], loops: tuple[str, ...]) -> list[str]:
    """``clients`` with each client that runs on the caller's event loop once for every loop of ``loops``
    (``kafkawire``, ``kafkawire@uvloop``), the others once."""
    return [on_loop(c, loop) for c in clients for loop in (loops if c in ON_LOOPS else ("asyncio",))]


def ours_variants(system: str) -> list[str]:
    """Our clients the ratio table compares with each peer, under every loop."""
    mine = [OURS[system], "kafkawire-bulk"] if system == "kafka" else [OURS[system]]
    return expand(mine, LOOPS)


# ------------------------------------------------------------------------------------------- processes
def run_process(
    argv: list[str], timeout: float = RUN_TIMEOUT, env: dict[str, str] | None = None
) -> tuple[str, float, float]:
    """stdout, CPU seconds and peak RSS (MB) of a child process, which must succeed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        # wait4 rather than Popen.wait: it also gives the child's own resource usage.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        killer.cancel()
    if proc.returncode != 0:
        shown = " ".join(arg if len(arg) < 200 else "<class path>" for arg in argv)
        raise RuntimeError(f"{shown} failed with exit code {proc.returncode}")
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def python_run(
    system: str, client: str, phase: str, url: str, topic: str, records: int, size: int,
    rate: float | None = None, group: str = "bench", brokers: list[int] | None = None,
) -> Row:
    argv = [sys.executable, str(HERE / "worker.py"), system, client, phase, url, topic, str(records), str(size),
            "-" if rate is None else str(rate), group]
    env = os.environ | {BROKER_PIDS_VARIABLE: ",".join(map(str, brokers or []))}
    out, _cpu, rss = run_process(argv, env=env)
    figures = json.loads(out.strip().splitlines()[-1])
    shown = phase if rate is None else f"{phase}@{rate:.0f}"
    return Row(system, size, 0, client, shown, records, figures.get("seconds", 0.0),
               figures.get("cpu_seconds", 0.0), rss, figures.get("p50_ms"), figures.get("p99_ms"),
               latency_bins=figures.get("latency_bins"), broker_cpu_seconds=figures.get("broker_cpu_seconds"),
               broker_jit_cpu_seconds=figures.get("broker_jit_cpu_seconds"))


_PERF = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def kafka_java_perf(bootstrap: str, topic: str, records: int, size: int, rate: float | None) -> Row:
    java = find_java("kafka").executable
    argv = [java, "-Xmx1g", "-cp", classpath.classpath("kafka-tools"), "org.apache.kafka.tools.ProducerPerformance",
            "--topic", topic, "--num-records", str(records), "--record-size", str(size),
            "--throughput", "-1" if rate is None else str(int(rate)),
            "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
            *([] if client_defaults() else ["batch.size=262144"])]
    out, cpu, rss = run_process(argv)
    found = _PERF.findall(out)
    if not found:
        raise RuntimeError(f"no summary line from ProducerPerformance:\n{out[-2000:]}")
    sent, got_rate, _avg, _max, p50, _p95, p99 = found[-1]
    phase = "produce" if rate is None else f"produce@{rate:.0f}"
    return Row("kafka", size, 0, "kafka-java-perf", phase, int(sent), int(sent) / float(got_rate), cpu, rss,
               float(p50), float(p99))


class TubeJava:
    """benchmarks/java/TubeBench.java, compiled once against the tubemq-client class path."""

    def __init__(self, folder: Path) -> None:
        self.java = find_java("tubemq").executable
        jars = classpath.classpath("tubemq")
        javac = str(Path(self.java).with_name("javac"))
        subprocess.run([javac, "-cp", jars, "-d", str(folder), str(HERE / "java" / "TubeBench.java")], check=True)
        self.class_path = f"{folder}{os.pathsep}{jars}"

    def run(self, phase: str, master: str, topic: str, records: int, size: int) -> Row:
        args = (
            ["produce", master, topic, str(records), str(size), str(tubemq_in_flight(size))]
            if phase == "produce"
            else ["consume", master, topic, f"bench_{uuid.uuid4().hex[:8]}", str(records)]
        )
        out, _cpu, rss = run_process([self.java, "-cp", self.class_path, "TubeBench", *args])
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        _, got_phase, count, seconds, cpu = line.split()
        return Row("tubemq", size, 0, "tubemq-java", got_phase, int(count), float(seconds), float(cpu), rss)


# ---------------------------------------------------------------------------------------------- topics
# The broker's default ``index.interval.bytes``: a partition's first index entry is written after it.
INDEX_INTERVAL_BYTES = 4096


async def kafka_topic(url: str, partitions: int, *, ready: bool = False) -> str:
    """A fresh topic; with ``ready``, each partition written to (twice, the first write longer than the
    broker's ``index.interval.bytes``) and acknowledged first.

    The broker takes the partitions of a topic just created a moment later than it answers the creation:
    a first produce to one it has not taken yet is refused (NOT_LEADER_OR_FOLLOWER) and retried after the
    client's backoff (100 ms). Seen with kafkawire on a broker that had run the suite: 4 of 8 partitions
    refused so, their first records acknowledged after 121 ms against 19 ms for the others; in a 3 s
    fixed-rate run that is enough to set the p99 of whichever client starts on the late partitions.

    Then a fresh partition's log writes its first offset index entry at the first append after 4 KB
    (``index.interval.bytes``), into an index file the broker has just made, and on this machine's broker
    that append took 40 ms longer than the others, with every client (kafkawire and confluent-kafka, the
    second 10 KB send to each partition of a fresh topic: 45 ms against 6 ms; with the topic's
    ``index.interval.bytes`` at 1 MB, 6 ms). A connection's requests are served one at a time, so at 10 KB
    over 8 partitions those eight waits in the first half second set the p99 of a 4 s run to 110-320 ms
    for either client, and to 3-10 ms once the partitions had been written past it.

    Producers are measured on partitions already written to, as a service's topic is.
    """
    import kafkawire

    topic = f"bench-{uuid.uuid4().hex[:10]}"
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=partitions)
        if ready:
            async with client.producer(topic, acks="all") as producer:
                for value in (b"w" * (INDEX_INTERVAL_BYTES + 100), b""):
                    for future in [await producer.enqueue(value, partition=p) for p in range(partitions)]:
                        await future
    return topic


async def kafka_drop_topic(url: str, topic: str) -> None:
    """Delete a producer's topic once its run is checked: every run writes a fresh one (800 MB at 10 KB and
    scale 1), and seven rounds of them filled this machine's disk."""
    import kafkawire

    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.delete_topics([topic])


async def pulsar_topic(url: str, admin_url: str, partitions: int, subscriptions: list[str]) -> str:
    import pulsarwire

    topic = f"persistent://public/default/bench-{uuid.uuid4().hex[:10]}"
    if partitions > 1:
        pulsar_admin.create_partitioned_topic(admin_url, topic, partitions)
    # Subscribed before producing, so that the messages are kept for every consumer that will read them.
    async with pulsarwire.connect(url) as client:
        for name in subscriptions or ["bench"]:
            async with client.consumer(topic, subscription=name):
                pass
    return topic


def tubemq_topics(systems: list[str]) -> dict[tuple[str, int, int], str]:
    """TubeMQ topics are deployed when the broker starts (a later deployment waits ~30 s for each): one per
    producer and setting, and the seed topic every consumer of a setting reads."""
    if "tubemq" not in systems:
        return {}
    return {
        (client, size, parts): f"bench_{client.replace('-', '_')}_{size}_{parts}"
        for client in ("tubemqwire", "tubemqwire-sync", "tubemq-java", "seed")
        for size in SIZES
        for parts in PARTITIONS
    }


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class Plan:
    """What one run of the suite does."""

    systems: list[str]
    clients: set[str] | None
    scale: float
    sizes: tuple[int, ...]
    rounds: int
    rate_seconds: float
    loops: tuple[str, ...] = LOOPS  # the event loops each client of ON_LOOPS runs under, each as a client of its own


def clients_of(system: str, plan: Plan) -> list[str]:
    """The system's clients in this run, each asyncio-based one under every loop of the plan; ``--clients``
    names a client under every loop (``kafkawire``) or under one (``kafkawire@uvloop``)."""
    every = expand([OURS[system], *PEERS[system]], plan.loops)
    return [c for c in every if plan.clients is None or c in plan.clients or client_loop(c)[0] in plan.clients]


def round_order(clients: list[str], turn: int) -> list[str]:
    """The clients' order in round ``turn``: rows of a balanced Latin square (Williams design), so that over the
    rounds every client runs in every place and after different clients. A plain rotation keeps each
    client's predecessor: at 10 KB one client always ran right after the broker had taken the heaviest write
    burst, and in every round met the broker at its slowest."""
    n = len(clients)
    # The first row runs 0, 1, n-1, 2, n-2, ...; row r adds r to each (mod n). An odd n needs each row reversed
    # as well for every client to follow every other; a row and its reversal go in turn, so that even a few
    # rounds give each client several predecessors.
    first = [0]
    low, high = 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    odd = n % 2 == 1
    row = [(place + (turn // 2 if odd else turn)) % n for place in first]
    if odd and turn % 2:
        row.reverse()
    return [clients[i] for i in row]


def run_suite(
    status: dict[str, Any], plan: Plan, tube: dict[tuple[str, int, int], str], failures: list[tuple[str, str]]
) -> list[Row]:
    urls: dict[str, str] = {name: url for name, url in status.items() if isinstance(url, str)}
    pids = broker_pids(status)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        tube_java = TubeJava(Path(folder)) if "tubemq" in plan.systems else None
        turn = 0
        for size in plan.sizes:
            for parts in PARTITIONS:
                for system in plan.systems:
                    clients = clients_of(system, plan)
                    records = max(100, int(RECORDS[system][size] * plan.scale))
                    setting = Setting(urls, system, size, parts, records, tube, tube_java, plan, pids.get(system, []))
                    try:
                        setting.seed()
                    except (RuntimeError, subprocess.CalledProcessError) as exc:
                        failures.append(("seed", f"{system} {size} B x{parts} seed: {exc}"))
                        continue
                    for number in range(plan.rounds):
                        order = round_order(clients, turn)
                        turn += 1
                        for client in order:
                            started = time.monotonic()
                            try:
                                done = setting.run(client, number)
                            except (RuntimeError, subprocess.CalledProcessError, StopIteration) as exc:
                                # One client failing is a result to report, not a reason to drop the others'.
                                failures.append((client, f"{system} {size} B x{parts} {client}: {exc}"))
                                print(f"  {system} {size} B x{parts}: {client} FAILED", file=sys.stderr, flush=True)
                                continue
                            for row in done:
                                row.partitions, row.round = parts, number
                                row.settings = "defaults" if client_defaults() else "tuned"
                            rows += done
                            print(f"  {system} {size} B x{parts} round {number + 1}: {client} in "
                                  f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


@dataclass
class Setting:
    """One system, message size and partition count: its seed topic and its clients' runs."""

    urls: dict[str, str]
    system: str
    size: int
    parts: int
    records: int
    tube: dict[tuple[str, int, int], str]
    tube_java: TubeJava | None
    plan: Plan
    brokers: list[int]  # the system's broker processes
    seed_topic: str = ""

    def group(self, client: str, number: int) -> str:
        return f"bench_{client.replace('-', '_').replace('@', '_')}_{number}_{uuid.uuid4().hex[:6]}"

    @staticmethod
    def subscription(client: str, number: int) -> str:
        """The Pulsar subscription a consumer reads the seed topic with (made before the seed is written)."""
        return f"bench-{client.replace('@', '-')}-{number}"

    def seed(self) -> None:
        system, url = self.system, self.urls[self.system]
        if system == "kafka":
            self.seed_topic = asyncio.run(kafka_topic(url, self.parts))
        elif system == "pulsar":
            self.subscriptions = [
                self.subscription(client, number)
                for client in clients_of(system, self.plan) if consumes(client)
                for number in range(self.plan.rounds)
            ]
            self.seed_topic = asyncio.run(pulsar_topic(url, self.urls["pulsar_admin"], self.parts, self.subscriptions))
        else:
            self.seed_topic = self.tube[("seed", self.size, self.parts)]
        python_run(system, OURS[system], "seed", url, self.seed_topic, self.records, self.size)

    def fixed_rates(self) -> list[float]:
        return [r for r in FIXED_RATES[self.system] if r * self.size <= MAX_FIXED_BYTES]

    def run(self, client: str, number: int) -> list[Row]:
        rows = []
        if produces(client):
            rows.append(self.produce(client, None, self.records))
            for rate in [] if client_loop(client)[0] in UNPACED else self.fixed_rates():
                rows.append(self.produce(client, rate, max(100, int(rate * self.plan.rate_seconds))))
        if consumes(client):
            rows.append(self.consume(client, number))
        return rows

    def produce(self, client: str, rate: float | None, records: int) -> Row:
        system, url, size = self.system, self.urls[self.system], self.size
        if system == "kafka":
            topic = asyncio.run(kafka_topic(url, self.parts, ready=True))
            try:
                if client == "kafka-java-perf":
                    return kafka_java_perf(url.removeprefix("kafka://"), topic, records, size, rate)
                return python_run(system, client, "produce", url, topic, records, size, rate, brokers=self.brokers)
            finally:
                asyncio.run(kafka_drop_topic(url, topic))
        if system == "pulsar":
            topic = asyncio.run(pulsar_topic(url, self.urls["pulsar_admin"], self.parts, []))
        else:
            topic = self.tube[(client_loop(client)[0], size, self.parts)]  # under each loop the same topic
            if client == "tubemq-java":
                assert self.tube_java is not None and rate is None
                # The Java program sends one warm-up message first, as our producer does.
                return self.tube_java.run("produce", url.removeprefix("tubemq://"), topic, records, size)
        return python_run(system, client, "produce", url, topic, records, size, rate, brokers=self.brokers)

    def consume(self, client: str, number: int) -> Row:
        system, url = self.system, self.urls[self.system]
        if client == "tubemq-java":
            assert self.tube_java is not None
            return self.tube_java.run("consume", url.removeprefix("tubemq://"), self.seed_topic, self.records,
                                      self.size)
        group = self.subscription(client, number) if system == "pulsar" else self.group(client, number)
        return python_run(
            system, client, "consume", url, self.seed_topic, self.records, self.size, None, group, self.brokers
        )


# ------------------------------------------------------------------------------------------- reporting
@dataclass
class Median:
    """The median of one client's rounds in one setting and phase."""

    system: str
    size: int
    partitions: int
    client: str
    phase: str
    rounds: int
    rate: float
    cpu_us: float
    rss_mb: float
    p50_ms: float | None
    # p99 over every round's samples together when all rounds kept them (the Python clients), else the
    # median of the rounds' p99s. A broker stall in one round sets that round's p99 whichever client ran;
    # pooled, each client's p99 is taken over the same number of rounds' worth of samples.
    p99_ms: float | None
    p99_rounds_ms: float | None  # the median of the rounds' p99s, for comparison
    broker_cpu_us: float | None = None
    cores_busy: float | None = None
    broker_jit_us: float | None = None


def pooled_percentile(histograms: list[dict[str, int]], q: float) -> float | None:
    """The ``q`` percentile (ms) of the samples in the histograms together: the top of the bin it falls in."""
    counts: dict[int, int] = {}
    for histogram in histograms:
        for key, count in histogram.items():
            counts[int(key)] = counts.get(int(key), 0) + count
    total = sum(counts.values())
    if not total:
        return None
    rank = min(total - 1, int(q * total))  # the same rank Latencies.percentile takes from sorted samples
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen > rank:
            return latency_bin_top(index)
    raise AssertionError("unreachable: the rank is below the total")


def medians(rows: list[Row]) -> list[Median]:
    groups: dict[tuple[str, int, int, str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.system, r.size, r.partitions, r.client, r.phase), []).append(r)

    def mid(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    out = []
    for key, runs in groups.items():
        rate, cpu, rss = (statistics.median(getattr(r, a) for r in runs) for a in ("rate", "cpu_us", "rss_mb"))
        p50, p99_rounds = mid([r.p50_ms for r in runs]), mid([r.p99_ms for r in runs])
        bins = [r.latency_bins for r in runs]
        pooled = pooled_percentile([b for b in bins if b], 0.99) if all(bins) else None
        broker, busy = mid([r.broker_cpu_us for r in runs]), mid([r.cores_busy for r in runs])
        out.append(Median(*key, len(runs), rate, cpu, rss, p50, p99_rounds if pooled is None else pooled, p99_rounds,
                          broker, busy, mid([r.broker_jit_us for r in runs])))
    return out


def _fixed(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    return _fixed(value, 1)


def report(rows: list[Row]) -> str:
    """The medians, then ours against each reference peer (records/s and CPU per record)."""
    lines = [f"{'system':<7}{'size':>7}{'parts':>6} {'client':<23}{'phase':<15}{'n':>2}{'records/s':>11}"
             f"{'MB/s':>8}{'cpu us/rec':>11}{'rss MB':>8}{'p50 ms':>8}{'p99 ms':>8}{'p99 rnd':>8}"
             f"{'broker us':>10}{'jit us':>7}{'cores':>6}"]
    table = medians(rows)
    for m in table:
        lines.append(f"{m.system:<7}{m.size:>7}{m.partitions:>6} {m.client:<23}{m.phase:<15}{m.rounds:>2}"
                     f"{m.rate:>11,.0f}{m.rate * m.size / 1e6:>8.1f}{m.cpu_us:>11.2f}{m.rss_mb:>8.0f}"
                     f"{_ms(m.p50_ms):>8}{_ms(m.p99_ms):>8}{_ms(m.p99_rounds_ms):>8}"
                     f"{_fixed(m.broker_cpu_us, 2):>10}{_fixed(m.broker_jit_us, 1):>7}{_fixed(m.cores_busy, 2):>6}")
    lines.append("\np99: over all rounds' samples pooled (Python clients), else the median of the rounds' p99s;"
                 " p99 rnd: the median of the rounds' p99s;\nbroker us: the brokers' CPU per record (jit us: the part"
                 " their JIT compiler threads spent); cores: the"
                 " client's and the brokers' CPU time over the interval (of the machine's cores), Python clients only")
    lines.append("\nratios of medians, ours / peer: records/s, CPU per record (and p99 at fixed rates)")
    index = {(m.system, m.size, m.partitions, m.client, m.phase): m for m in table}
    for m in table:
        peer, peer_loop = client_loop(m.client)
        if peer not in REFERENCES[m.system]:
            continue
        for mine in ours_variants(m.system):
            # A peer on the caller's loop is compared with ours on the same loop; one with threads of its own
            # (confluent-kafka) with ours on each loop.
            if peer in ON_LOOPS and client_loop(mine)[1] != peer_loop:
                continue
            ours = index.get((m.system, m.size, m.partitions, mine, m.phase))
            if ours is not None:
                lines.append(_ratio_line(m, mine, ours))
    uvloop = [m for m in table if client_loop(m.client)[1] != "asyncio"]
    if uvloop:
        lines.append("\nwhat uvloop gives each client, CLIENT@uvloop / CLIENT on asyncio's loop: records/s, CPU per"
                     " record")
    for m in uvloop:
        plain = index.get((m.system, m.size, m.partitions, client_loop(m.client)[0], m.phase))
        if plain is not None:
            lines.append(_ratio_line(plain, m.client, m))
    return "\n".join(lines)


def _ratio_line(peer: Median, mine: str, ours: Median) -> str:
    """One line of the ratio table: ``mine`` (its medians ``ours``) over ``peer``; empty figures shown as -."""
    def ratio(a: float | None, b: float | None) -> str:
        return "    -" if a is None or not b else f"{a / b:5.2f}x"

    extra = f"   p99 {ratio(ours.p99_ms, peer.p99_ms)}" if "@" in peer.phase and ours.p99_ms is not None else ""
    return (f"  {peer.system:<7}{peer.size:>6} B x{peer.partitions} {peer.phase:<14} {mine:<21}/ {peer.client:<22}"
            f"{ratio(ours.rate, peer.rate):>6}  cpu {ratio(ours.cpu_us, peer.cpu_us)}{extra}")


def write_outputs(rows: list[Row], text: str, stamp: str) -> list[Path]:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data_file = RESULTS / f"bench-{stamp}.json"
    # A row per line: the latency histograms would make an indented file very long.
    lines = [json.dumps(asdict(r) | {"rate": r.rate, "cpu_us": r.cpu_us}) for r in rows]
    data_file.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
    text_file = RESULTS / f"bench-{stamp}.txt"
    text_file.write_text(text + "\n", encoding="utf-8")
    written = [data_file, text_file]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart", file=sys.stderr)
        return written
    table = [m for m in medians(rows) if "@" not in m.phase]
    systems = sorted({m.system for m in table})
    figure, axes = plt.subplots(len(systems), 1, figsize=(13, 4.5 * len(systems)), squeeze=False)
    for axis, system in zip(axes[:, 0], systems, strict=True):
        mine = [m for m in table if m.system == system]
        groups = sorted({(m.phase, m.size, m.partitions) for m in mine}, key=lambda g: (g[0] != "produce", *g[1:]))
        present = {m.client for m in mine}
        # Ours first, same colours; each asyncio-based client under each loop beside each other.
        clients = [c for c in expand([OURS[system], *PEERS[system]], LOOPS) if c in present]
        width = 0.8 / len(clients)
        for i, client in enumerate(clients):
            by_group = {(m.phase, m.size, m.partitions): m.rate for m in mine if m.client == client}
            rates = [by_group.get(group, 0.0) for group in groups]
            axis.bar([g + i * width for g in range(len(groups))], rates, width, label=client)
        axis.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
        axis.set_xticklabels([f"{p}\n{s} B x{n}" for p, s, n in groups])
        axis.set_yscale("log")
        axis.set_ylabel("records/s (median)")
        axis.set_title(system)
        axis.legend(fontsize="small")
    figure.tight_layout()
    chart = RESULTS / f"bench-{stamp}.png"
    figure.savefig(chart, dpi=90)
    written.append(chart)
    return written


# ----------------------------------------------------------------------------------------------- README
README_BEGIN = "<!-- speed-table: generated by benchmarks/suite.py --readme; do not edit -->"
README_END = "<!-- /speed-table -->"
CHARTS = "_static"  # beside the performance page: where its charts are drawn


def _ours_against(
    index: dict[tuple[str, int, int, str, str], Median], peer: Median, loops: list[str]
) -> list[tuple[str, Median]]:
    """Our medians to compare with ``peer``'s, with the loop each ran on: ours on the peer's loop, or against a
    peer with threads of its own, ours on every loop of ``loops``."""
    client, loop = client_loop(peer.client)
    against = [loop] if client in ON_LOOPS else loops
    return [
        (on, ours) for on in against
        if (ours := index.get((peer.system, peer.size, peer.partitions, on_loop(OURS[peer.system], on), peer.phase)))
    ]


def headline_ratios(rows: list[Row]) -> list[Ratio]:
    """Ours over each reference peer at saturation (records/s and CPU per record), for every setting and loop of
    ``rows``: what the performance page's charts draw."""
    loops = [loop for loop in LOOPS if any(client_loop(r.client)[1] == loop for r in rows)]
    found = []
    for setting in sorted({r.settings for r in rows}):
        table = medians([r for r in rows if r.settings == setting])
        index = {(m.system, m.size, m.partitions, m.client, m.phase): m for m in table}
        for m in table:
            if "@" in m.phase or client_loop(m.client)[0] not in REFERENCES[m.system] or not m.rate:
                continue
            for on, ours in _ours_against(index, m, loops):
                cpu = ours.cpu_us / m.cpu_us if m.cpu_us else None
                found.append(Ratio(setting, m.system, m.size, m.partitions, m.phase, client_loop(m.client)[0], on,
                                   ours.rate / m.rate, cpu))
    return sorted(found, key=lambda r: (list(OURS).index(r.system), REFERENCES[r.system].index(r.peer)))


def readme_table(rows: list[Row]) -> str:
    """The speed table of docs/performance.md: for each setting, ours against the reference peers, medians of
    the rounds. Rows of one kind only (tuned, on asyncio's loop: every results file before ``--loops`` and
    ``--defaults``) keep the table's first form; rows of several settings or loops are labelled with both, and
    a peer with threads of its own is compared with ours on each loop."""
    settings = sorted({r.settings for r in rows})  # "defaults", the headline, before "tuned"
    loops = [loop for loop in LOOPS if any(client_loop(r.client)[1] == loop for r in rows)]
    labelled = settings != ["tuned"] or loops != ["asyncio"]
    if labelled:
        out = ["| settings | system | size | parts | phase | client | loop | records/s | CPU µs/rec | p99 ms "
               "| vs ours |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    else:
        out = ["| system | size | parts | phase | client | records/s | CPU µs/rec | p99 ms | vs ours |",
               "|---|---|---|---|---|---|---|---|---|"]
    for setting in settings:
        table = medians([r for r in rows if r.settings == setting])
        index = {(m.system, m.size, m.partitions, m.client, m.phase): m for m in table}
        for m in sorted(table, key=lambda m: (m.system, m.size, m.partitions, m.phase, m.client)):
            client, loop = client_loop(m.client)
            if client not in (OURS[m.system], "kafkawire-bulk", *REFERENCES[m.system], *CEILINGS):
                continue
            mine = client in (OURS[m.system], "kafkawire-bulk")
            against = [loop] if client in ON_LOOPS else loops
            versus = [] if mine or not m.rate else [
                (on, ours.rate / m.rate) for on, ours in _ours_against(index, m, loops)
            ]
            figures = f"{m.rate:,.0f} | {m.cpu_us:.2f} | {_ms(m.p99_ms)}"
            if not labelled:
                shown = "".join(f"{ratio:.2f}x" for _, ratio in versus)
                out.append(f"| {m.system} | {m.size} B | {m.partitions} | {m.phase} | {client} | {figures} | {shown} |")
                continue
            shown = ", ".join(f"{ratio:.2f}x" if len(against) == 1 else f"{on} {ratio:.2f}x" for on, ratio in versus)
            threads = client in REFERENCES[m.system] and client not in ON_LOOPS  # confluent-kafka's, the JVM's
            out.append(f"| {setting} | {m.system} | {m.size} B | {m.partitions} | {m.phase} | {client} | "
                       f"{'own threads' if threads else loop} | {figures} | {shown} |")
    return "\n".join(out)


SUMMARY_BEGIN = "<!-- speed-summary: generated by benchmarks/suite.py --readme; do not edit -->"
SUMMARY_END = "<!-- /speed-summary -->"
SYSTEM_NAMES = {"kafka": "Kafka", "pulsar": "Pulsar", "tubemq": "TubeMQ"}


def readme_summary(ratios: list[Ratio]) -> str:
    """README's short table: ours over each reference peer with every client at its defaults (the tuned
    ratios where a system has no defaults run), records/s at saturation, on asyncio's loop / under uvloop."""
    settings = "defaults" if any(r.settings == "defaults" for r in ratios) else "tuned"
    cases = [(phase, parts) for phase in ("produce", "consume") for parts in PARTITIONS]
    heads = " | ".join(f"{phase} x{parts}" for phase, parts in cases)
    out = [f"| system | size | ours over | {heads} |", "|---|---|---|" + "---|" * len(cases)]
    found = {(r.system, r.size, r.peer, r.phase, r.partitions, r.loop): r.rate for r in ratios
             if r.settings == settings}
    for system, size, peer in dict.fromkeys((r.system, r.size, r.peer) for r in sorted(
            ratios, key=lambda r: (list(OURS).index(r.system), r.size, REFERENCES[r.system].index(r.peer)))):
        cells = []
        for phase, parts in cases:
            shown = [f"{value:.2f}x" for loop in LOOPS
                     if (value := found.get((system, size, peer, phase, parts, loop))) is not None]
            cells.append(" / ".join(shown) or "-")
        shown_size = f"{size // 1024} KB" if size >= 1024 else f"{size} B"
        out.append(f"| {SYSTEM_NAMES[system]} | {shown_size} | {peer} | {' | '.join(cells)} |")
    return "\n".join(out)


def _replace_between(text: str, begin: str, end: str, body: str) -> str:
    start, stop = text.index(begin), text.index(end)
    return text[: start + len(begin)] + "\n" + body + "\n" + text[stop:]


def update_readme(
    results: list[Path], target: Path = ROOT / "docs" / "performance.md", summary: Path | None = ROOT / "README.md"
) -> None:
    """Rewrite the speed table and charts of ``target`` from these results files (a later file's rows of a
    setting, system and size replace an earlier one's), and the short table of ``summary`` (README.md)."""
    names = {f.name for f in fields(Row)}
    by_setting: dict[tuple[str, str, int], list[Row]] = {}
    source: dict[tuple[str, str, int], str] = {}
    for path in results:
        found: dict[tuple[str, str, int], list[Row]] = {}
        for item in json.loads(path.read_text(encoding="utf-8")):
            row = Row(**{k: v for k, v in item.items() if k in names})
            found.setdefault((row.settings, row.system, row.size), []).append(row)
        by_setting.update(found)
        source.update(dict.fromkeys(found, path.name))
    rows = [row for setting_rows in by_setting.values() for row in setting_rows]
    text = target.read_text(encoding="utf-8")
    rounds = {setting: max(r.round for r in setting_rows) + 1 for setting, setting_rows in by_setting.items()}
    several = len({settings for settings, _, _ in source}) > 1
    files = ", ".join(
        f"{system} {size} B{f' ({settings})' if several else ''} from `benchmarks/results/{name}` "
        f"({rounds[settings, system, size]} rounds)"
        for (settings, system, size), name in sorted(source.items(), key=lambda item: (item[0][1:], item[0][0]))
    )
    note = f"{files[0].upper()}{files[1:]}; medians of the rounds:\n\n"
    ratios = headline_ratios(rows)
    charts = draw_all(ratios, target.parent / CHARTS)
    pictures = "".join(f"![{c.stem.removeprefix('ratios-')}: ours over each peer]({CHARTS}/{c.name})\n\n"
                       for c in charts)
    text = _replace_between(text, README_BEGIN, README_END, pictures + note + readme_table(rows))
    target.write_text(text, encoding="utf-8")
    if summary is not None:
        short = summary.read_text(encoding="utf-8")
        summary.write_text(_replace_between(short, SUMMARY_BEGIN, SUMMARY_END, readme_summary(ratios)),
                           encoding="utf-8")


# ---------------------------------------------------------------------------------------------- brokers
def broker_pids(status: dict[str, Any]) -> dict[str, list[int]]:
    """The processes of each broker in ``mqwire.testing``'s status (a TubeMQ broker is its master and broker)."""
    found: dict[str, list[int]] = {}
    for name, broker in status.get("brokers", {}).items():
        if isinstance(broker, dict):
            found[name] = sorted({int(pid) for pid in broker.get("pids", {}).values()})
    return found


def start_brokers(state_dir: str, systems: list[str], tube: dict[tuple[str, int, int], str]) -> dict[str, Any]:
    """Start the brokers in ``state_dir``; their status (URLs and processes) as ``mqwire.testing start`` prints it."""
    topics = [arg for (_client, _size, parts), name in tube.items() for arg in ("--tubemq-topic", f"{name}:{parts}")]
    started = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "start", *systems, *topics],
        check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    status: dict[str, Any] = json.loads(started.stdout)
    return status


def running_brokers(state_dir: str, systems: list[str], tube: dict[tuple[str, int, int], str]) -> dict[str, Any]:
    """The status of the brokers already running in ``state_dir`` (their URLs and processes, as ``start``
    prints it); the TubeMQ topics created there if missing."""
    status = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "status"],
        check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    found: dict[str, Any] = json.loads(status.stdout)
    for (_client, _size, parts), name in tube.items():
        subprocess.run(
            [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "create-topic", "tubemq", name,
             "--partitions", str(parts)],
            check=False, stdout=subprocess.DEVNULL, cwd=ROOT,
        )
    missing = set(systems) - set(found)
    if missing:
        raise SystemExit(f"no {', '.join(sorted(missing))} running in {state_dir}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every record count")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every client (medians are quoted)")
    parser.add_argument("--rate-seconds", type=float, default=3.0, help="length of each fixed-rate run")
    parser.add_argument("--quick", action="store_true", help="a smoke test: --scale 0.01 --rounds 1 --rate-seconds 0.3")
    parser.add_argument("--systems", default="kafka,pulsar,tubemq")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help=f"message sizes, some of {SIZES}")
    parser.add_argument("--clients", default="", help="only these clients (comma-separated); default all")
    parser.add_argument("--state-dir", help="use the brokers running in this state folder instead of starting some")
    parser.add_argument("--defaults", action="store_true",
                        help="every client at its own batch size (only linger 5 ms set for all), as users meet them")
    parser.add_argument("--loops", default=",".join(LOOPS),
                        help="the event loops each asyncio-based client runs under, each as a client of its own "
                        "(CLIENT@uvloop); the clients with threads of their own run once")
    parser.add_argument("--readme", type=Path, nargs="+", help="rewrite docs/performance.md's table from these")
    args = parser.parse_args()
    if args.readme is not None:
        update_readme(args.readme)
        return 0
    if args.quick:
        args.scale, args.rounds, args.rate_seconds = 0.01, 1, 0.3
    if args.defaults:
        os.environ[DEFAULTS_VARIABLE] = "1"  # the client processes inherit it (measure.client_defaults)
    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - set(OURS)
    if unknown or not systems:
        parser.error(f"--systems takes some of {', '.join(OURS)}")
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)
    if not sizes or set(sizes) - set(SIZES):
        parser.error(f"--sizes takes some of {', '.join(map(str, SIZES))}")
    clients = {c for c in args.clients.split(",") if c} or None
    loops = tuple(dict.fromkeys(loop for loop in args.loops.split(",") if loop))
    if not loops or set(loops) - set(LOOPS):
        parser.error(f"--loops takes some of {', '.join(LOOPS)}")
    plan = Plan(systems, clients, args.scale, sizes, max(1, args.rounds), args.rate_seconds, loops)
    tube = tubemq_topics(systems)
    started = time.monotonic()
    failures: list[tuple[str, str]] = []
    if args.state_dir:
        rows = run_suite(running_brokers(args.state_dir, systems, tube), plan, tube, failures)
    else:
        state_dir = tempfile.mkdtemp(prefix="mqwire-bench-")
        try:
            rows = run_suite(start_brokers(state_dir, systems, tube), plan, tube, failures)
        finally:
            stop = [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "stop"]
            subprocess.run(stop, check=False, cwd=ROOT)
    load = os.getloadavg()
    settings = "defaults" if args.defaults else "tuned"
    shown = ("every client at its own batch size, linger 5 ms for all" if args.defaults
             else f"the Python clients and the Java tool at one batch size ({BATCH_BYTES} B), linger 5 ms")
    text = f"settings: {settings} ({shown}); event loops: {', '.join(plan.loops)}\n\n" + report(rows) + (
        f"\n\nscale {plan.scale}, {plan.rounds} rounds, fixed rates for {plan.rate_seconds} s; "
        f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    print(text)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-defaults" if args.defaults else "")
    for path in write_outputs(rows, text, stamp):
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"suite ran {time.monotonic() - started:.0f} s")
    for _client, failure in failures:
        print(f"FAILED: {failure}")
    # A peer that cannot finish against these brokers is a result (printed above); one of ours is an error.
    return 1 if any(client in (*OURS.values(), "kafkawire-bulk", "seed") for client, _ in failures) else 0


if __name__ == "__main__":
    sys.exit(main())
