"""Start the real brokers, complete each protocol's first exchange, print the results, stop the brokers.

Run with `make demo`. Brokers already running (`python -m brokers start`) are used and left running.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from kafkawire.handshake import kafka_handshake
from pulsarwire.handshake import pulsar_handshake
from tubemqwire.handshake import tubemq_handshake


def brokers_cli(*args: str) -> dict[str, Any]:
    result = subprocess.run([sys.executable, "-m", "brokers", *args], check=True, stdout=subprocess.PIPE, text=True)
    parsed: dict[str, Any] = json.loads(result.stdout or "{}")
    return parsed


async def exchanges(urls: dict[str, Any]) -> None:
    for name, handshake, url in (
        ("Kafka", kafka_handshake, urls["kafka"]),
        ("Pulsar", pulsar_handshake, urls["pulsar"]),
        ("TubeMQ", tubemq_handshake, urls["tubemq"]),
    ):
        started = time.perf_counter()
        result = await handshake(url)
        elapsed = (time.perf_counter() - started) * 1000
        print(f"\n{name} at {url} ({elapsed:.0f} ms)")
        for key, value in result.items():
            print(f"  {key}: {value}")


def main() -> int:
    already_running = brokers_cli("status").get("brokers")
    started = time.perf_counter()
    urls = brokers_cli("start")
    print(f"brokers up in {time.perf_counter() - started:.1f} s")
    for key in ("kafka", "pulsar", "pulsar_admin", "tubemq", "tubemq_admin"):
        print(f"  {key}: {urls[key]}")
    try:
        asyncio.run(exchanges(urls))
    finally:
        if not already_running:
            brokers_cli("stop")
            print("\nbrokers stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
