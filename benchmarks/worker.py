"""One client, one phase, in a process of its own: ``worker.py SYSTEM CLIENT PHASE URL TOPIC RECORDS SIZE``.

Prints one JSON line with the measured interval (see clients.py); the suite reads the process's peak
memory itself. A process per run keeps one client's memory, threads and imports out of the others' figures.
"""

from __future__ import annotations

import json
import sys

from clients import run


def main(argv: list[str]) -> int:
    system, client, phase, url, topic, records, size = argv
    print(json.dumps(run(system, client, phase, url, topic, int(records), int(size))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
