"""Run after a session with ``--brokers=testcontainers`` (``make test-containers`` does): the provider removed
every container and network it labelled, whether its tests passed, failed or were interrupted."""

from __future__ import annotations

import docker  # type: ignore[import-untyped]

from mqwire.testing.containers import LABEL


def test_no_container_or_network_is_left() -> None:
    engine = docker.from_env(timeout=30)
    try:
        found = engine.containers.list(all=True, filters={"label": LABEL})
        containers = [f"{c.name} ({c.status}, labels {c.labels})" for c in found]
        networks = [n.name for n in engine.networks.list(filters={"label": LABEL})]
    finally:
        engine.close()
    assert containers == [], f"containers left running or stopped: {containers}"
    assert networks == [], f"networks left: {networks}"
