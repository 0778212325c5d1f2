"""Where the launcher keeps its caches and its run state."""

from __future__ import annotations

import os
from pathlib import Path

POM_ROOT = Path(__file__).resolve().parent / "maven"
BROKER_NAMES = ("kafka", "pulsar", "tubemq", "kafka3", "registry")
# What ``start`` and ``broker_urls`` bring up when no names are given; kafka3 and the schema registry only run
# when asked.
DEFAULT_BROKERS = ("kafka", "pulsar", "tubemq")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mqwire"


def classpath_cache_dir() -> Path:
    return Path(os.environ.get("MQWIRE_CLASSPATH_DIR") or cache_root() / "classpath")


def default_state_dir() -> Path:
    return Path(os.environ.get("MQWIRE_STATE_DIR") or cache_root() / "run")


def pom_path(name: str) -> Path:
    return POM_ROOT / name / "pom.xml"
