"""The three client packages keep the same job under the same name, and docs/architecture.md names only
modules that exist: its table of jobs and its paths of a send and of a receive."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("kafkawire", "pulsarwire", "tubemqwire")
# The modules every package has, and the class each defines there (None: the module alone).
SHARED = {
    "client": "Client",
    "connection": None,
    "consumer": "Consumer",
    "errors": None,
    "handshake": None,
    "message": "Message",
    "options": None,
    "producer": "Producer",
    "session": "Session",
    "sync": "Client",
}
# A module in backticks: ``session.py``, ``protocol/records.py`` or a subpackage ``group/``.
MODULE = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py|[a-z_]+/)`")


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("module", sorted(SHARED))
def test_each_package_has_the_module_of_each_shared_job(package: str, module: str) -> None:
    imported = importlib.import_module(f"{package}.{module}")
    name = SHARED[module]
    if name is not None:
        assert isinstance(getattr(imported, name, None), type), f"{package}.{module} defines no class {name}"


def _table_modules() -> list[tuple[str, str]]:
    lines = ARCHITECTURE.read_text().splitlines()
    header = lines.index("| Job | kafkawire | pulsarwire | tubemqwire |")
    named = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == 4, line
        for package, cell in zip(PACKAGES, cells[1:], strict=True):
            named += [(package, module) for module in MODULE.findall(cell)]
    return named


def _path_modules() -> list[tuple[str, str]]:
    text = ARCHITECTURE.read_text()
    named = []
    for section in ("## The path of a send", "## The path of a receive"):
        body = text.split(section, 1)[1].split("\n## ", 1)[0]
        bullets = re.findall(r"^- \*\*(\w+)\*\*:(.*?)(?=^- |\Z)", body, flags=re.M | re.S)
        assert sorted(package for package, _ in bullets) == sorted(PACKAGES), section
        named += [(package, module) for package, bullet in bullets for module in MODULE.findall(bullet)]
    return named


def test_the_architecture_table_names_modules_that_exist() -> None:
    named = _table_modules()
    assert len(named) > 3 * len(SHARED)
    missing = [f"{package}/{module}" for package, module in named if not (ROOT / package / module).exists()]
    assert not missing


def test_the_paths_of_a_send_and_a_receive_name_modules_that_exist() -> None:
    named = _path_modules()
    assert {package for package, _ in named} == set(PACKAGES)
    missing = [f"{package}/{module}" for package, module in named if not (ROOT / package / module).exists()]
    assert not missing
