"""How the examples find their broker: the first argument, MQWIRE_<SYSTEM>_URL, or `python -m mqwire.testing status`."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def broker_url(system: str) -> str:
    """The URL of ``system``'s broker: the first argument, else as ``configured_broker_url`` finds it."""
    if len(sys.argv) > 1:
        return sys.argv[1]
    return configured_broker_url(system)


def configured_broker_url(system: str) -> str:
    """The URL of ``system``'s broker from MQWIRE_<SYSTEM>_URL, else from the brokers running on this machine."""
    from_env = os.environ.get(f"MQWIRE_{system.upper()}_URL")
    if from_env:
        return from_env
    status = subprocess.run([sys.executable, "-m", "mqwire.testing", "status"], capture_output=True, text=True)
    url = json.loads(status.stdout or "{}").get(system)
    if not url:
        sys.exit(
            f"no {system} broker: pass its URL, set MQWIRE_{system.upper()}_URL"
            " or run `python -m mqwire.testing start`"
        )
    return str(url)


def argument(index: int, default: str) -> str:
    """The command line's argument at ``index``, or ``default`` when there is none."""
    return sys.argv[index] if len(sys.argv) > index else default
