"""Test folders collected only when named on the command line (``pytest tests/cluster``, a make target), for
suites that need minutes or an engine that ``make test`` does not set up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def collected_only_when_named(folder: Path) -> Callable[[Path, pytest.Config], bool | None]:
    """A ``pytest_ignore_collect`` hook for ``folder``'s conftest: ignore it unless a command-line argument is
    the folder or lies inside it."""

    def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
        for arg in config.args:
            path = Path(str(arg).split("::", 1)[0]).resolve()
            if path == folder or folder in path.parents:
                return None
        return True

    return pytest_ignore_collect
