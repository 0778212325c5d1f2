"""Produce then consume N messages with tubemqwire and with the Java TubeMQ client against one master+broker.

The Java side is benchmarks/java/TubeBench.java, compiled now against the tubemq-client class path that
`python -m brokers fetch` resolved from Maven Central. Both clients keep the same number of sends in
flight and time only the transfer: from the first send (after one warm-up send) to the last
acknowledgement, and from the first message received to the N-th. CPU seconds are each client's own
(the JVM's process CPU time over the same interval; this process's for tubemqwire).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import Result, cpu_now, report

import tubemqwire
from brokers import classpath
from brokers.java import find_java

JAVA_SOURCE = Path(__file__).with_name("java") / "TubeBench.java"
IN_FLIGHT = 1000


@contextmanager
def tubemq_with_topics(url: str | None, topics: list[str]) -> Iterator[str]:
    """The master URL: the given one (its topics must exist), or a TubeMQ started for this run."""
    if url is not None:
        yield url
        return
    state_dir = tempfile.mkdtemp(prefix="mqwire-bench-")
    cli = [sys.executable, "-m", "brokers", "--state-dir", state_dir]
    started = subprocess.run(
        [*cli, "start", "tubemq", *(arg for t in topics for arg in ("--tubemq-topic", f"{t}:1"))],
        check=True, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield str(json.loads(started.stdout)["tubemq"])
    finally:
        subprocess.run([*cli, "stop"], check=False)


# ------------------------------------------------------------------------------------------ tubemqwire
async def tubemqwire_produce(url: str, topic: str, count: int, value: bytes) -> Result:
    async with tubemqwire.connect(url) as client, client.producer(topic, max_in_flight=IN_FLIGHT) as producer:
        await producer.send(value)  # warm-up: connections and partitions ready, as on the Java side
        cpu, wall = cpu_now(), time.perf_counter()
        futures = [await producer.enqueue(value) for _ in range(count)]
        await producer.flush()
        for future in futures:
            future.result()  # every send acknowledged, none failed
        return Result("tubemqwire", "produce", count, time.perf_counter() - wall, cpu_now() - cpu)


async def tubemqwire_consume(url: str, topic: str, count: int) -> Result:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    async with tubemqwire.connect(url) as client, client.consumer(topic, group=group, start="earliest") as consumer:
        await consumer.ack(await consumer.getone(timeout=120))
        cpu, wall = cpu_now(), time.perf_counter()
        for _ in range(count - 1):
            await consumer.ack(await consumer.getone(timeout=60))
        return Result("tubemqwire", "consume", count, time.perf_counter() - wall, cpu_now() - cpu)


# ----------------------------------------------------------------------------------------- Java client
def compile_java(folder: Path) -> tuple[str, str]:
    java = find_java("tubemq").executable
    javac = str(Path(java).with_name("javac"))
    jars = classpath.classpath("tubemq")
    subprocess.run([javac, "-cp", jars, "-d", str(folder), str(JAVA_SOURCE)], check=True)
    return java, f"{folder}{os.pathsep}{jars}"


def java_run(java: str, class_path: str, *args: str) -> Result:
    done = subprocess.run(
        [java, "-cp", class_path, "TubeBench", *args], check=True, stdout=subprocess.PIPE, text=True, timeout=1800
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    _, phase, records, seconds, cpu = line.split()
    return Result("java-client", phase, int(records), float(seconds), float(cpu))


def run(url: str, topics: dict[str, str], records: int, size: int) -> list[Result]:
    value = os.urandom(size)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as folder:
        java, class_path = compile_java(Path(folder))
        results.append(asyncio.run(tubemqwire_produce(url, topics["tubemqwire"], records, value)))
        results.append(java_run(java, class_path, "produce", url.removeprefix("tubemq://"),
                                topics["java-client"], str(records), str(size), str(IN_FLIGHT)))
        # Each consumes what it produced (plus the warm-up message).
        results.append(asyncio.run(tubemqwire_consume(url, topics["tubemqwire"], records + 1)))
        results.append(java_run(java, class_path, "consume", url.removeprefix("tubemq://"),
                                topics["java-client"], f"bench-{uuid.uuid4().hex[:8]}", str(records + 1)))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--url", help="tubemq://host:port of a running master whose topics exist (see --topics)")
    parser.add_argument("--topics", default="bench_tubemqwire,bench_java",
                        help="the two topics, one per client (letters, digits, underscores)")
    args = parser.parse_args()
    ours, theirs = args.topics.split(",")
    topics = {"tubemqwire": ours, "java-client": theirs}
    with tubemq_with_topics(args.url, [ours, theirs]) as url:
        print(f"TubeMQ at {url}: {args.records:,} messages of {args.size} B per client", file=sys.stderr)
        report(run(url, topics, args.records, args.size), "tubemqwire")
    return 0


if __name__ == "__main__":
    sys.exit(main())
