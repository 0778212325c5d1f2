"""Apicurio Registry: a schema registry whose Confluent-compatible REST API the registry serializers use.

Apicurio Registry (Apache-2.0) runs from its distribution on Maven Central (brokers/maven/registry/pom.xml
unpacks it): a Quarkus runner jar started with ``java -jar``, storing schemas in an H2 database file in its
work folder, serving the registry API under ``/apis/ccompat/v7`` on a loopback port. It needs no broker.
"""

from __future__ import annotations

import time
from pathlib import Path

from mqwire.testing import rest
from mqwire.testing.endpoints import Endpoint, SchemaRegistry
from mqwire.testing.errors import BrokerError
from mqwire.testing.net import LOOPBACK, free_port
from mqwire.testing.plan import Plan, Spawner, marker
from mqwire.testing.procs import ProcSpec, wait_until

# The path of the registry API (the Confluent-compatible one) below the server's root.
API_PATH = "/apis/ccompat/v7"
JVM_FLAGS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError")


class RegistryKind:
    """The launcher's view of Apicurio Registry: one JVM, one HTTP port."""

    name = "registry"

    def build_plan(self, work_dir: Path, java: str, classpath: str, instance: str) -> Plan:
        """``classpath`` is the runner jar (the one entry the pom's unpacked distribution gives)."""
        port = free_port()
        logs, data = work_dir / "logs", work_dir / "data"
        for folder in (logs, data):
            folder.mkdir(parents=True, exist_ok=True)
        log_file = logs / "registry.log"
        mark = marker(self.name, "registry", instance)
        argv = (
            java,
            *JVM_FLAGS,
            mark,
            f"-Dquarkus.http.host={LOOPBACK}",
            f"-Dquarkus.http.port={port}",
            # A file, not the default in-memory database, so a registry restarted by the launcher keeps its ids.
            f"-Dapicurio.datasource.url=jdbc:h2:file:{data / 'registry'}",
            "-Dquarkus.log.file.enable=true",
            f"-Dquarkus.log.file.path={log_file}",
            "-jar",
            classpath,
        )
        spec = ProcSpec("registry", argv, str(work_dir), str(logs / "registry.stdout.log"), str(log_file), mark)
        return Plan(self.name, instance, str(work_dir), {"http": port}, [spec])

    def launch(self, plan: Plan, spawn: Spawner, fresh: bool, timeout: float) -> None:
        spec = plan.proc("registry")
        pid = spawn(spec)
        url = self.endpoint(plan).url
        deadline = time.monotonic() + timeout

        def answers() -> bool | None:
            reply = rest.answers(f"{url}/subjects")
            return True if reply is not None and reply.ok else None

        wait_until(f"schema registry API on {url}", answers, max(deadline - time.monotonic(), 1.0), [(pid, spec)])

    def endpoint(self, plan: Plan) -> SchemaRegistry:
        return SchemaRegistry.at(plan.ports["http"], log_files=plan.log_files, data_dir=plan.work_dir)

    def create_topic(self, endpoint: Endpoint, topic: str, partitions: int, timeout: float = 30.0) -> str:
        raise BrokerError("a schema registry has no topics")
