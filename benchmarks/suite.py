"""The benchmark suite (``make bench``): every client against the same brokers, records and run.

Kafka: kafkawire, aiokafka, kafka-python, confluent-kafka, and Kafka's own Java producer performance tool
(the broker's limit on this machine, produce only); kafkawire also consuming in a consumer group and in a
share group (KIP-932), for the cost of each. Pulsar: pulsarwire and pulsar-client. TubeMQ:
tubemqwire and the Java TubeMQ client. Messages of 100 B and 10 KB, topics of 1 and 8 partitions; for each
of those settings the clients take turns, in an order that rotates from one setting to the next, each in
a process of its own on a fresh topic: produce, then consume what it produced.

Reported per run: records/s, MB/s, CPU seconds over the measured interval (for the Kafka Java tool, the
whole process including the JVM's start), peak resident memory of the process, and p50/p99 of the time
from send to acknowledgement (a sample of every 50th send; the Java TubeMQ client does not report it).
The ratio table compares our client with each peer. Results go to build/bench/ as JSON and a PNG chart.

    .venv/bin/python benchmarks/suite.py [--scale 0.1] [--systems kafka,pulsar,tubemq]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from clients import tubemq_in_flight  # noqa: E402

from mqwire.testing import classpath, pulsar_admin  # noqa: E402
from mqwire.testing.java import find_java  # noqa: E402

SIZES = (100, 10_240)
PARTITIONS = (1, 8)
# Records per client and run at --scale 1, by system and message size.
RECORDS = {
    "kafka": {100: 500_000, 10_240: 20_000},
    "pulsar": {100: 200_000, 10_240: 10_000},
    "tubemq": {100: 60_000, 10_240: 6_000},
}
OURS = {"kafka": "kafkawire", "pulsar": "pulsarwire", "tubemq": "tubemqwire"}
PEERS = {
    # kafkawire-group and kafkawire-share: kafkawire itself in a consumer group and in a share group.
    "kafka": ["aiokafka", "kafka-python", "confluent-kafka", "kafka-java-perf", "kafkawire-group", "kafkawire-share"],
    "pulsar": ["pulsar-client"],
    "tubemq": ["tubemq-java"],
}
RUN_TIMEOUT = 1800.0
OUT = ROOT / "build" / "bench"


@dataclass
class Row:
    system: str
    size: int
    partitions: int
    client: str
    phase: str
    records: int
    seconds: float
    cpu_seconds: float
    rss_mb: float
    p50_ms: float | None = None
    p99_ms: float | None = None

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


# ------------------------------------------------------------------------------------------- processes
def run_process(argv: list[str], timeout: float = RUN_TIMEOUT) -> tuple[str, float, float]:
    """stdout, CPU seconds and peak RSS (MB) of a child process, which must succeed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
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


def python_run(system: str, client: str, phase: str, url: str, topic: str, records: int, size: int) -> Row:
    argv = [sys.executable, str(HERE / "worker.py"), system, client, phase, url, topic, str(records), str(size)]
    out, _cpu, rss = run_process(argv)
    figures = json.loads(out.strip().splitlines()[-1])
    return Row(system, size, 0, client, phase, records, figures["seconds"], figures["cpu_seconds"], rss,
               figures["p50_ms"], figures["p99_ms"])


_PERF = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def kafka_java_perf(bootstrap: str, topic: str, records: int, size: int) -> Row:
    java = find_java("kafka").executable
    argv = [java, "-Xmx1g", "-cp", classpath.classpath("kafka-tools"), "org.apache.kafka.tools.ProducerPerformance",
            "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5", "batch.size=262144"]
    out, cpu, rss = run_process(argv)
    found = _PERF.findall(out)
    if not found:
        raise RuntimeError(f"no summary line from ProducerPerformance:\n{out[-2000:]}")
    sent, rate, _avg, _max, p50, _p95, p99 = found[-1]
    return Row("kafka", size, 0, "kafka-java-perf", "produce", int(sent), int(sent) / float(rate), cpu, rss,
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
async def kafka_topic(url: str, partitions: int) -> str:
    import kafkawire

    topic = f"bench-{uuid.uuid4().hex[:10]}"
    async with kafkawire.connect(url) as client, client.admin() as admin:
        await admin.create_topic(topic, partitions=partitions)
    return topic


async def pulsar_topic(url: str, admin_url: str, partitions: int) -> str:
    import pulsarwire

    topic = f"persistent://public/default/bench-{uuid.uuid4().hex[:10]}"
    if partitions > 1:
        pulsar_admin.create_partitioned_topic(admin_url, topic, partitions)
    # Subscribed before producing, so that the messages are kept for the consume phase.
    async with pulsarwire.connect(url) as client, client.consumer(topic, subscription="bench"):
        pass
    return topic


def tubemq_topics(systems: list[str]) -> dict[tuple[str, int, int], str]:
    """TubeMQ topics are deployed when the broker starts (a later deployment waits ~30 s for each)."""
    if "tubemq" not in systems:
        return {}
    return {
        (client, size, parts): f"bench_{client.replace('-', '_')}_{size}_{parts}"
        for client in ("tubemqwire", "tubemq-java")
        for size in SIZES
        for parts in PARTITIONS
    }


# ---------------------------------------------------------------------------------------------- the run
def run_suite(
    urls: dict[str, str],
    systems: list[str],
    scale: float,
    tube: dict[tuple[str, int, int], str],
    failures: list[tuple[str, str]],
) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        tube_java = TubeJava(Path(folder)) if "tubemq" in systems else None
        turn = 0
        for size in SIZES:
            for parts in PARTITIONS:
                for system in systems:
                    clients = [OURS[system], *PEERS[system]]
                    # The order rotates from one setting to the next: no client always runs first or last.
                    shift = turn % len(clients)
                    turn += 1
                    records = max(100, int(RECORDS[system][size] * scale))
                    for client in clients[shift:] + clients[:shift]:
                        started = time.monotonic()
                        try:
                            done = run_client(urls, system, client, size, parts, records, tube, tube_java)
                        except (RuntimeError, subprocess.CalledProcessError, StopIteration) as exc:
                            # One client failing is a result to report, not a reason to drop the others'.
                            failures.append((client, f"{system} {size} B x{parts} {client}: {exc}"))
                            print(f"  {system} {size} B x{parts}: {client} FAILED", file=sys.stderr, flush=True)
                            continue
                        for row in done:
                            row.partitions = parts
                        rows += done
                        print(f"  {system} {size} B x{parts}: {client} in {time.monotonic() - started:.0f} s",
                              file=sys.stderr, flush=True)
    return rows


def run_client(
    urls: dict[str, str], system: str, client: str, size: int, parts: int, records: int,
    tube: dict[tuple[str, int, int], str], tube_java: TubeJava | None,
) -> list[Row]:
    if system == "kafka":
        topic = asyncio.run(kafka_topic(urls["kafka"], parts))
        if client == "kafka-java-perf":
            return [kafka_java_perf(urls["kafka"].removeprefix("kafka://"), topic, records, size)]
        url = urls["kafka"]
    elif system == "pulsar":
        topic = asyncio.run(pulsar_topic(urls["pulsar"], urls["pulsar_admin"], parts))
        url = urls["pulsar"]
    else:
        topic, url = tube[(client, size, parts)], urls["tubemq"]
        if client == "tubemq-java":
            assert tube_java is not None
            master = url.removeprefix("tubemq://")
            # The Java program sends one warm-up message first, as our producer does.
            return [tube_java.run("produce", master, topic, records, size),
                    tube_java.run("consume", master, topic, records, size)]
    return [python_run(system, client, phase, url, topic, records, size) for phase in ("produce", "consume")]


# ------------------------------------------------------------------------------------------- reporting
def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_tables(rows: list[Row]) -> None:
    print(f"{'system':<7}{'size':>7}{'parts':>6} {'client':<17}{'phase':<8}{'records/s':>11}{'MB/s':>8}"
          f"{'cpu s':>7}{'rss MB':>8}{'p50 ms':>8}{'p99 ms':>8}")
    for r in rows:
        print(f"{r.system:<7}{r.size:>7}{r.partitions:>6} {r.client:<17}{r.phase:<8}{r.rate:>11,.0f}"
              f"{r.rate * r.size / 1e6:>8.1f}{r.cpu_seconds:>7.2f}{r.rss_mb:>8.0f}{_ms(r.p50_ms):>8}{_ms(r.p99_ms):>8}")
    print("\nratios, records/s of ours / peer:")
    index = {(r.system, r.size, r.partitions, r.client, r.phase): r for r in rows}
    for r in rows:
        ours = index.get((r.system, r.size, r.partitions, OURS[r.system], r.phase))
        if r.client == OURS[r.system] or ours is None or not r.rate:
            continue
        print(f"  {r.system:<7}{r.size:>6} B x{r.partitions} {r.phase:<8} {OURS[r.system]} / {r.client:<16}"
              f"{ours.rate / r.rate:6.2f}x")


def write_outputs(rows: list[Row], stamp: str) -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    data_file = OUT / f"bench-{stamp}.json"
    data_file.write_text(json.dumps([asdict(r) | {"rate": r.rate} for r in rows], indent=1), encoding="utf-8")
    written = [data_file]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart", file=sys.stderr)
        return written
    systems = sorted({r.system for r in rows})
    figure, axes = plt.subplots(len(systems), 1, figsize=(13, 4.5 * len(systems)), squeeze=False)
    for axis, system in zip(axes[:, 0], systems, strict=True):
        mine = [r for r in rows if r.system == system]
        groups = sorted({(r.phase, r.size, r.partitions) for r in mine}, key=lambda g: (g[0] != "produce", *g[1:]))
        present = {r.client for r in mine}
        clients = [c for c in (OURS[system], *PEERS[system]) if c in present]  # ours first, same colours
        width = 0.8 / len(clients)
        for i, client in enumerate(clients):
            by_group = {(r.phase, r.size, r.partitions): r.rate for r in mine if r.client == client}
            rates = [by_group.get(group, 0.0) for group in groups]
            axis.bar([g + i * width for g in range(len(groups))], rates, width, label=client)
        axis.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
        axis.set_xticklabels([f"{p}\n{s} B x{n}" for p, s, n in groups])
        axis.set_yscale("log")
        axis.set_ylabel("records/s")
        axis.set_title(system)
        axis.legend(fontsize="small")
    figure.tight_layout()
    chart = OUT / f"bench-{stamp}.png"
    figure.savefig(chart, dpi=90)
    written.append(chart)
    return written


# ---------------------------------------------------------------------------------------------- brokers
def start_brokers(state_dir: str, systems: list[str], tube: dict[tuple[str, int, int], str]) -> dict[str, str]:
    topics = [arg for (_client, _size, parts), name in tube.items() for arg in ("--tubemq-topic", f"{name}:{parts}")]
    started = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "start", *systems, *topics],
        check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    urls: dict[str, str] = json.loads(started.stdout)
    return urls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every record count")
    parser.add_argument("--systems", default="kafka,pulsar,tubemq")
    args = parser.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - set(OURS)
    if unknown or not systems:
        parser.error(f"--systems takes some of {', '.join(OURS)}")
    tube = tubemq_topics(systems)
    state_dir = tempfile.mkdtemp(prefix="mqwire-bench-")
    started = time.monotonic()
    failures: list[tuple[str, str]] = []
    try:
        urls = start_brokers(state_dir, systems, tube)
        rows = run_suite(urls, systems, args.scale, tube, failures)
    finally:
        stop = [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "stop"]
        subprocess.run(stop, check=False, cwd=ROOT)
    print_tables(rows)
    for path in write_outputs(rows, time.strftime("%Y%m%d-%H%M%S")):
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"suite ran {time.monotonic() - started:.0f} s")
    for _client, failure in failures:
        print(f"FAILED: {failure}")
    # A peer that cannot finish against these brokers is a result (printed above); one of ours is an error.
    return 1 if any(client in OURS.values() for client, _ in failures) else 0


if __name__ == "__main__":
    sys.exit(main())
