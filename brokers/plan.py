"""A launch plan: the fixed facts of one broker instance (ports, folders, commands).

A plan is written once, when a broker is first started, and stored with the run state; starting
it again later reuses the same ports and data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mqwire.testing.endpoints import Endpoint
from mqwire.testing.procs import ProcSpec


@dataclass
class Plan:
    name: str
    instance: str
    work_dir: str
    ports: dict[str, int]
    procs: list[ProcSpec]
    settings: dict[str, Any] = field(default_factory=dict)

    def path(self, *parts: str) -> Path:
        return Path(self.work_dir).joinpath(*parts)

    def proc(self, role: str) -> ProcSpec:
        for spec in self.procs:
            if spec.role == role:
                return spec
        raise KeyError(role)

    @property
    def log_files(self) -> tuple[str, ...]:
        return tuple(p for spec in self.procs for p in (spec.log_file, spec.stdout_file))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instance": self.instance,
            "work_dir": self.work_dir,
            "ports": dict(self.ports),
            "procs": [spec.to_json() for spec in self.procs],
            "settings": dict(self.settings),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(
            data["name"],
            data["instance"],
            data["work_dir"],
            {k: int(v) for k, v in data["ports"].items()},
            [ProcSpec.from_json(p) for p in data["procs"]],
            dict(data.get("settings", {})),
        )


class Spawner(Protocol):
    """Starts one JVM of a plan and records its pid before anything else can fail."""

    def __call__(self, spec: ProcSpec) -> int: ...


class BrokerKind(Protocol):
    """What each broker module provides to the launcher."""

    name: str

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan: ...

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None: ...

    def endpoint(self, plan: Plan) -> Endpoint: ...

    def create_topic(self, endpoint: Endpoint, topic: str, partitions: int, timeout: float) -> str: ...


Wait = Callable[[str, Callable[[], bool]], None]
"""``wait(what, check)``: poll ``check`` until it is true, failing with ``what`` when the broker's processes die or
time runs out (the launcher watches JVMs, the container provider a container): the same readiness steps run
either way."""


def marker(name: str, role: str, instance: str) -> str:
    """A JVM system property that identifies the process on its command line."""
    return f"-Dmqwire.instance={name}/{role}/{instance}"
