"""The container tests run only when named (``make test-containers`` or ``pytest tests/containers``): most of
them need a Docker engine and the images built here (``python -m mqwire.testing images build``), which
``make test`` does not set up."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _named(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(str(arg).split("::", 1)[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return None if _named(config) else True
