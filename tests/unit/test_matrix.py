"""The runtime matrix's own decisions: an interpreter it cannot find fails the run, a build that fell back to
Python is caught, and the steps' environments come from pyproject.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import matrix


def fake_python(root: Path, version: str) -> Path:
    python = root / "versions" / version / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    return python


def test_a_missing_interpreter_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    fake_python(tmp_path, "3.11.7")
    with pytest.raises(matrix.MatrixError, match=r"no CPython 3\.13.*pyenv install 3\.13"):
        matrix.find_interpreter("3.13")


def test_the_newest_patch_release_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    for version in ("3.12.1", "3.12.10", "3.12.9", "3.12-dev", "3.13.0"):
        fake_python(tmp_path, version)
    assert matrix.find_interpreter("3.12") == tmp_path / "versions" / "3.12.10" / "bin" / "python"


def test_a_build_without_its_speedups_is_caught_and_so_is_a_pure_run_with_them() -> None:
    extensions = list(matrix.extension_modules(matrix.pyproject()))
    compiled = {"kafkawire.protocol.records": True, "kafkawire.partitioner": True, "loaded": extensions}
    assert matrix.compiled_problems(compiled, extensions) == []
    assert matrix.pure_problems(compiled) != []
    fallen_back = {**compiled, "kafkawire.partitioner": False, "loaded": extensions[1:]}
    assert matrix.compiled_problems(fallen_back, extensions) == [
        "kafkawire.partitioner runs its Python code",
        f"{extensions[0]} is not loaded",
    ]
    assert matrix.pure_problems({"kafkawire.partitioner": False, "loaded": []}) == []


def test_the_environments_follow_pyproject() -> None:
    project = matrix.pyproject()
    tools = matrix.dev_tools(project)
    assert [matrix.requirement_name(r) for r in tools] == list(matrix.DEV_TOOLS)
    assert set(matrix.EXTRAS) <= set(project["project"]["optional-dependencies"])
    assert "kafkawire._partitioner_speedups" in matrix.extension_modules(project)
    topics = matrix.contract_tubemq_topics(project)
    for suffix in ("_py312", "_py313", "_pure"):
        assert {f"contract_{name}{suffix}" for name in ("readme", "seek", "group")} <= set(topics)
    assert topics[next(iter(matrix.ROUND_TRIP_TUBEMQ_TOPICS))] == 3


def test_the_classifiers_name_exactly_the_versions_tested() -> None:
    # make test runs 3.11; the matrix adds its own versions. A classifier for anything else would be a claim.
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    listed = {c.removeprefix("Programming Language :: Python :: ") for c in pyproject["project"]["classifiers"]}
    versions = {v for v in listed if v.startswith("3.")}
    assert versions == {"3.11", *matrix.VERSIONS}
