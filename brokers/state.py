"""Run state on disk: one JSON file per broker in the state folder, guarded by a lock file."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqwire.testing.plan import Plan


@dataclass
class Record:
    plan: Plan
    pids: dict[str, int] = field(default_factory=dict)
    # The work folder was made by the launcher and is deleted when the broker is stopped.
    owns_work_dir: bool = True
    java: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    # Set once the broker has been ready: from then on its data is initialised and a restart reuses it.
    ready_once: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_json(),
            "pids": dict(self.pids),
            "owns_work_dir": self.owns_work_dir,
            "java": dict(self.java),
            "started_at": self.started_at,
            "ready_once": self.ready_once,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(
            Plan.from_json(data["plan"]),
            {k: int(v) for k, v in data.get("pids", {}).items()},
            bool(data.get("owns_work_dir", True)),
            dict(data.get("java", {})),
            float(data.get("started_at", 0.0)),
            bool(data.get("ready_once", False)),
        )


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


class StateDir:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _file(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def load(self, name: str) -> Record | None:
        path = self._file(name)
        try:
            return Record.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError) as err:
            raise RuntimeError(f"unreadable broker state {path}: {err}") from err

    def save(self, name: str, record: Record) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._file(name)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(record.to_json(), indent=2), encoding="utf-8")
        tmp.replace(path)

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._file(name).unlink()

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json"))

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """Exclusive use of one broker's state, across threads and processes."""
        key = f"{self.root.resolve()}/{name}"
        with _thread_locks_guard:
            thread_lock = _thread_locks.setdefault(key, threading.Lock())
        self.root.mkdir(parents=True, exist_ok=True)
        with thread_lock, open(self.root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def end(
    state: StateDir,
    name: str,
    terminate: Callable[[Record, bool], None],
    *,
    graceful: bool,
    keep_data: bool = False,
) -> bool:
    """End what ``name`` runs (a broker or a cluster); False when the state knows no such name.

    Graceful: stop it and forget it, deleting the data folder it made unless ``keep_data``. Otherwise SIGKILL
    it and keep state and data, so that a later ``start`` finds them again.
    """
    with state.locked(name):
        record = state.load(name)
        if record is None:
            return False
        terminate(record, graceful)
        if graceful:
            state.remove(name)
            if record.owns_work_dir and not keep_data:
                shutil.rmtree(record.plan.work_dir, ignore_errors=True)
        return True

