"""Minutes of load per system with bounded buffers, reporting peak memory against the configured bounds.

A producer writes as fast as its bounded buffer lets it while a deliberately slow consumer reads, so both
bounds are pressed the whole time. Every few seconds the resident memory is sampled. A system passes
when its peak RSS stays under the baseline plus a margin of the configured bounds and memory does not keep
growing after warm-up (the last third of the run against the first third after warm-up).

    python tests/soak/soak.py --seconds 600 [--systems kafka,pulsar,tubemq] [--<system>-url URL]

Brokers not given by URL are started for the run and stopped after it. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

VALUE = os.urandom(1_000)
PRODUCE_RATE = 5_000  # messages/s: 3 GB of log per system in ten minutes
SLOW_CONSUMER_PAUSE = 0.001  # per message: the application is slower than the producer
# Configured bounds.
KAFKA_BUFFER_MEMORY = 8 * 1024 * 1024
KAFKA_MAX_BUFFERED_RECORDS = 5_000
PULSAR_MAX_PENDING = 2_000
PULSAR_RECEIVER_QUEUE = 1_000
TUBEMQ_MAX_IN_FLIGHT = 2_000
# Allowed on top of the configured bounds: interpreter arenas, codec buffers, one fetch in flight.
MARGIN = 64 * 1024 * 1024


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Load:
    produced: int = 0
    enqueued: int = 0
    started: float = field(default_factory=time.monotonic)
    consumed: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)

    async def pace(self) -> None:
        """Hold the producer to PRODUCE_RATE (it still outruns the slow consumer by far)."""
        self.enqueued += 1
        if self.enqueued % 500 == 0:
            ahead = self.enqueued / PRODUCE_RATE - (time.monotonic() - self.started)
            await asyncio.sleep(max(0.0, ahead))

    def acknowledged(self, future: asyncio.Future[object]) -> None:
        if not future.cancelled() and future.exception() is None:
            self.produced += 1


async def sample(load: Load, stop: asyncio.Event, every: float) -> None:
    started = time.monotonic()
    while not stop.is_set():
        load.samples.append((time.monotonic() - started, rss()))
        await asyncio.sleep(every)


async def kafka_load(url: str, load: Load, stop: asyncio.Event) -> None:
    import kafkawire

    topic = f"soak-{os.getpid()}"
    async with kafkawire.connect(url) as client:
        async with client.admin() as admin:
            await admin.create_topic(topic, partitions=4)

        async def produce() -> None:
            async with client.producer(topic, buffer_memory=KAFKA_BUFFER_MEMORY, linger_ms=5) as producer:
                while not stop.is_set():
                    future = await producer.enqueue(VALUE)
                    future.add_done_callback(load.acknowledged)
                    await load.pace()

        async def consume() -> None:
            async with client.consumer(
                topic, group="soak", start="earliest", max_buffered_records=KAFKA_MAX_BUFFERED_RECORDS
            ) as consumer:
                while not stop.is_set():
                    for message in await consumer.getmany(timeout_ms=500, max_records=100):
                        await consumer.ack(message)
                        load.consumed += 1
                        await asyncio.sleep(SLOW_CONSUMER_PAUSE)

        await asyncio.gather(produce(), consume())


async def pulsar_load(url: str, load: Load, stop: asyncio.Event) -> None:
    import pulsarwire

    topic = f"persistent://public/default/soak-{os.getpid()}"
    async with pulsarwire.connect(url) as client:

        async def produce() -> None:
            async with client.producer(topic, max_pending_messages=PULSAR_MAX_PENDING) as producer:
                while not stop.is_set():
                    future = await producer.enqueue(VALUE)
                    future.add_done_callback(load.acknowledged)
                    await load.pace()

        async def consume() -> None:
            async with client.consumer(
                topic, subscription="soak", receiver_queue_size=PULSAR_RECEIVER_QUEUE
            ) as consumer:
                while not stop.is_set():
                    try:
                        message = await consumer.receive(timeout=0.5)
                    except TimeoutError:
                        continue
                    await consumer.ack(message)
                    load.consumed += 1
                    await asyncio.sleep(SLOW_CONSUMER_PAUSE)

        await asyncio.gather(produce(), consume())


async def tubemq_load(url: str, load: Load, stop: asyncio.Event) -> None:
    import tubemqwire

    async with tubemqwire.connect(url) as client:

        async def produce() -> None:
            async with client.producer("soak", max_in_flight=TUBEMQ_MAX_IN_FLIGHT) as producer:
                while not stop.is_set():
                    future = await producer.enqueue(VALUE)
                    future.add_done_callback(load.acknowledged)
                    await load.pace()

        async def consume() -> None:
            async with client.consumer("soak", group="soak", start="earliest") as consumer:
                while not stop.is_set():
                    try:
                        message = await consumer.getone(timeout=0.5)
                    except TimeoutError:
                        continue
                    await consumer.ack(message)
                    load.consumed += 1
                    await asyncio.sleep(SLOW_CONSUMER_PAUSE)

        await asyncio.gather(produce(), consume())


LOADS: dict[str, tuple[Callable[[str, Load, asyncio.Event], Awaitable[None]], int]] = {
    "kafka": (kafka_load, KAFKA_BUFFER_MEMORY + KAFKA_MAX_BUFFERED_RECORDS * len(VALUE)),
    "pulsar": (pulsar_load, (PULSAR_MAX_PENDING + PULSAR_RECEIVER_QUEUE) * len(VALUE)),
    "tubemq": (tubemq_load, TUBEMQ_MAX_IN_FLIGHT * len(VALUE)),
}


async def run_one(system: str, url: str, seconds: float) -> dict[str, object]:
    """The load of one system in this process (run by the parent, one process per system)."""
    work, bound = LOADS[system]
    load = Load()
    stop = asyncio.Event()
    baseline = rss()
    sampler = asyncio.create_task(sample(load, stop, every=2.0))
    task = asyncio.create_task(work(url, load, stop))
    await asyncio.sleep(seconds)
    stop.set()
    try:
        await asyncio.wait_for(task, 60)
        finished = True
    except TimeoutError:
        finished = False  # closing hung: a failure in itself
    await sampler
    values = [value for _, value in load.samples]
    after_warmup = values[len(values) // 6 :] or values
    third = max(1, len(after_warmup) // 3)
    early, late = max(after_warmup[:third]), max(after_warmup[-third:])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    limit = baseline + bound + MARGIN
    growing = late > early * 1.2 + 8 * 1024 * 1024
    return {
        "system": system,
        "seconds": seconds,
        "produced": load.produced,
        "consumed": load.consumed,
        "baseline_mb": round(baseline / 2**20, 1),
        "configured_bounds_mb": round(bound / 2**20, 1),
        "peak_rss_mb": round(peak / 2**20, 1),
        "limit_mb": round(limit / 2**20, 1),
        "early_mb": round(early / 2**20, 1),
        "late_mb": round(late / 2**20, 1),
        "closed_cleanly": finished,
        "ok": finished and peak <= limit and not growing and load.produced > 0 and load.consumed > 0,
    }


def start_broker(system: str, state_dir: str) -> str:
    options = ["--tubemq-topic", "soak:4"] if system == "tubemq" else []
    out = subprocess.run(
        [sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "start", *options, system],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return str(json.loads(out)[system])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--systems", default="kafka,pulsar,tubemq")
    for system in LOADS:
        parser.add_argument(f"--{system}-url")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        system, url = args.child.split("=", 1)
        print(json.dumps(asyncio.run(run_one(system, url, args.seconds))))
        return 0
    results = []
    for system in args.systems.split(","):
        url = getattr(args, f"{system}_url")
        state_dir = None if url else tempfile.mkdtemp(prefix="mqwire-soak-")
        try:
            if state_dir is not None:
                url = start_broker(system, state_dir)
            print(f"{system}: {args.seconds:.0f} s of load on {url}", file=sys.stderr)
            child = subprocess.run(
                [sys.executable, __file__, "--seconds", str(args.seconds), "--child", f"{system}={url}"],
                stdout=subprocess.PIPE,
                text=True,
            )
            results.append(json.loads(child.stdout) if child.returncode == 0 else {"system": system, "ok": False})
        finally:
            if state_dir is not None:
                subprocess.run([sys.executable, "-m", "mqwire.testing", "--state-dir", state_dir, "stop"], check=False)
    print(json.dumps(results, indent=2))
    print(f"\n{'system':8} {'produced':>10} {'consumed':>10} {'peak MB':>8} {'limit MB':>9} {'early/late MB':>14}  ok")
    for r in results:
        if "peak_rss_mb" in r:
            print(
                f"{r['system']:8} {r['produced']:>10,} {r['consumed']:>10,} {r['peak_rss_mb']:>8} {r['limit_mb']:>9} "
                f"{r['early_mb']:>6}/{r['late_mb']:<7}  {r['ok']}"
            )
        else:
            print(f"{r['system']:8} failed")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
