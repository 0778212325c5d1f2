"""The container tests run only when named (``make test-containers`` or ``pytest tests/containers``): most of
them need a Docker engine and the images built here (``python -m mqwire.testing images build``), which
``make test`` does not set up."""

from __future__ import annotations

from pathlib import Path

from tests.named_only import collected_only_when_named

HERE = Path(__file__).resolve().parent


pytest_ignore_collect = collected_only_when_named(HERE)
