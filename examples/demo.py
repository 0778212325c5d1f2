"""Start the real brokers, then a produce and consume round trip on each system through the `mqwire` tool.

Run with `make demo`. Brokers already running (`python -m mqwire.testing start`) are used and left running;
otherwise they are started for the demo and stopped at its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

MESSAGES = 20_000
TOPIC = "demo"
console = Console(stderr=True)


def brokers_cli(*args: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "mqwire.testing", *args]
    result = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    parsed: dict[str, Any] = json.loads(result.stdout or "{}")
    return parsed


def mqwire(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    # stderr is inherited: on a terminal the tool draws its progress bar and summary there.
    return subprocess.run([sys.executable, "-m", "mqwire", *args], input=stdin, stdout=subprocess.PIPE, check=False)


def round_trip(system: str, url: str, extra: tuple[str, ...]) -> tuple[str, int, int, float, bool]:
    console.rule(f"{system}  {url}")
    payload = b"".join(
        b'{"value": "demo message %d", "key": "k%d", "headers": {"n": "%d"}}\n' % (i, i % 8, i) for i in range(MESSAGES)
    )
    started = time.perf_counter()
    produced = mqwire("produce", url, TOPIC, "--input", "jsonl", stdin=payload)
    consumed = mqwire("consume", url, TOPIC, "--count", str(MESSAGES), "--format", "{value}", *extra)
    elapsed = time.perf_counter() - started
    lines = consumed.stdout.decode().splitlines()
    received = sum(1 for line in lines if line.startswith("demo message"))
    ok = produced.returncode == 0 and consumed.returncode == 0 and received == MESSAGES
    return system, MESSAGES if produced.returncode == 0 else 0, received, elapsed, ok


def main() -> int:
    already_running = brokers_cli("status").get("brokers")
    started = time.perf_counter()
    urls = brokers_cli("start", "--tubemq-topic", f"{TOPIC}:2")
    console.print(f"brokers up in {time.perf_counter() - started:.1f} s")
    for key in ("kafka", "pulsar", "tubemq"):
        console.print(f"  {key}: {urls[key]}")
    results = []
    try:
        if already_running:
            brokers_cli("create-topic", "tubemq", TOPIC, "--partitions", "2")
        run_id = str(int(time.time()))
        results.append(round_trip("Kafka", urls["kafka"], ("--group", f"demo-{run_id}")))
        results.append(round_trip("Pulsar", urls["pulsar"], ("--group", f"demo-{run_id}")))
        results.append(round_trip("TubeMQ", urls["tubemq"], ("--group", f"demo-{run_id}", "--idle-timeout", "15")))
    finally:
        if not already_running:
            brokers_cli("stop")
            console.print("brokers stopped")
    table = Table(title="mqwire demo: one round trip per system")
    for column in ("system", "produced", "consumed", "seconds", "ok"):
        table.add_column(column)
    for system, produced, consumed, seconds, ok in results:
        table.add_row(system, f"{produced:,}", f"{consumed:,}", f"{seconds:.1f}", "yes" if ok else "NO")
    console.print(table)
    return 0 if results and all(r[4] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
