"""One client, one phase, in a process of its own:
``worker.py SYSTEM CLIENT PHASE URL TOPIC RECORDS SIZE [RATE|-] [GROUP]``.

PHASE is produce, consume or seed (the topic every consumer of a setting reads, written once); RATE is a
fixed send rate in records/s ("-" or absent: as fast as the client goes); GROUP is the consumer group or
Pulsar subscription. Prints one JSON line with the measured interval (see clients.py); the suite reads the
process's peak memory itself. A process per run keeps one client's memory, threads and imports out of the
others' figures.
"""

from __future__ import annotations

import json
import sys

from clients import run


def main(argv: list[str]) -> int:
    system, client, phase, url, topic, records, size, *rest = argv
    rate = float(rest[0]) if rest and rest[0] != "-" else None
    group = rest[1] if len(rest) > 1 else "bench"
    figures = run(system, client, phase, url, topic, int(records), int(size), rate, group)
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
