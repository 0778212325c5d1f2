"""README stays a short front door whose links lead somewhere, and the guides in docs/ hold their own text: no
page includes README, and every test the guarantees page names as its evidence exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# What "short" means for the front door: the guides take the rest.
README_LIMIT = 10_000


def test_readme_is_under_10_kb() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes: move the detail into a guide in docs/"


def test_readme_links_to_every_guide_and_to_files_that_exist() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = {t for t in targets if "://" not in t}
    missing = sorted(t for t in local if not (ROOT / t).exists())
    assert not missing, f"README.md links to files that do not exist: {missing}"
    guides = {p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md") if p.name != "index.md"}
    unlinked = sorted(guides - local)
    assert not unlinked, f"README.md does not lead to these guides: {unlinked}"


def test_no_guide_includes_readme() -> None:
    including = [p.name for p in DOCS.rglob("*.md") if "README.md" in "".join(_includes(p))]
    assert not including, f"these pages include README instead of holding their text: {including}"


def _includes(page: Path) -> list[str]:
    return re.findall(r"```\{include\}\s*(\S+)", page.read_text(encoding="utf-8"))


def test_every_test_the_guarantees_page_names_exists() -> None:
    text = (DOCS / "guarantees.md").read_text(encoding="utf-8")
    sources = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py")}
    named_files = re.findall(r"`((?:tests/[\w/]+/)?test_\w+\.py)(?:::\w+(?:\[\w+\])?)?`", text)
    named_tests = set(re.findall(r"`(?:[\w/]+\.py::)?(test_\w+)(?:\[\w+\])?`", text))
    assert len(named_files) >= 20 and len(named_tests) >= 20, "the guarantees page no longer names its tests"
    missing_files = sorted(
        {f for f in named_files if not any(path == f or path.endswith("/" + f) for path in sources)}
    )
    assert not missing_files, f"docs/guarantees.md names test files that do not exist: {missing_files}"
    missing_tests = sorted(
        name
        for name in named_tests
        if not any(re.search(rf"^(?:async )?def {name}\(", source, flags=re.MULTILINE) for source in sources.values())
    )
    assert not missing_tests, f"docs/guarantees.md names tests that do not exist: {missing_tests}"
