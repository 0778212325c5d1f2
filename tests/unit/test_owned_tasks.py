"""No client starts a task of its own: every one goes through ``OwnedTasks`` (``mqwire.common.lifecycle``), which
names it, keeps it until it ends, cancels it at close and logs a failure nobody awaited."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kafkawire", "pulsarwire", "tubemqwire", "sparkwire", "mqwire/otel.py", "mqwire/registry", "mqwire/cli")
TASK_MAKERS = {"create_task", "ensure_future"}


def _task_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TASK_MAKERS
    ]


def _sources() -> list[Path]:
    found: list[Path] = []
    for name in PACKAGES:
        place = ROOT / name
        found.extend([place] if place.is_file() else sorted(place.rglob("*.py")))
    return found


def test_the_scan_sees_the_client_sources() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert {"kafkawire/producer.py", "pulsarwire/consumer.py", "tubemqwire/fetcher.py"} <= names
    assert _task_calls(ROOT / "common" / "lifecycle.py"), "the scan must find the one place tasks are made"


def test_every_task_of_the_clients_is_started_through_owned_tasks() -> None:
    raw = [call for path in _sources() for call in _task_calls(path)]
    assert raw == [], "tasks started outside OwnedTasks.spawn:\n" + "\n".join(raw)
