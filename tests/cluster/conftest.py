"""The cluster tests run only when named (``make test-cluster`` or ``pytest tests/cluster``): each starts
clusters of several JVMs and kills their nodes, which takes far longer than the rest of the suite."""

from __future__ import annotations

from pathlib import Path

from tests.named_only import collected_only_when_named

HERE = Path(__file__).resolve().parent


pytest_ignore_collect = collected_only_when_named(HERE)
