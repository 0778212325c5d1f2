"""Run the launcher's brokers in containers of the images built here (:mod:`mqwire.testing.images`).

Each broker gets the local launcher's own plan (its configuration files, ports, certificates and
``java`` command lines) written into a work folder that is mounted into the container at the same path;
the command lines run in the container with the image's ``java`` and class path. Inside a container the
servers listen on every address of its own network namespace (so the engine can forward to them), and
each port is published on the host's loopback address only, under the same number, since the brokers
advertise ``127.0.0.1:<port>`` to their clients.

Every container carries two labels: ``mqwire.testing`` (the session) and ``mqwire.testing.owner``
(``host:pid`` of the interpreter). Whatever is left by an interpreter that was killed is removed by the
next session on the same host.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from mqwire.testing import images, kafka_wire, rest, tubemq_admin
from mqwire.testing.endpoints import Endpoint
from mqwire.testing.errors import BrokerError
from mqwire.testing.net import LOOPBACK
from mqwire.testing.plan import Plan
from mqwire.testing.procs import log_tails

LABEL = "mqwire.testing"
OWNER_LABEL = "mqwire.testing.owner"
# The host folder of a session's work folders: removed with the containers of a session that was killed.
ROOT_LABEL = "mqwire.testing.root"
ROOT_PREFIX = "mqwire-containers-"
ANYWHERE = "0.0.0.0"
# The plan ports a client never dials: Kafka's PROXIED listener is advertised on ``proxy``, a port that a
# test's fault proxy opens on the host.
UNPUBLISHED = {"proxy"}
LOG_LINES = 40
POLL_SECONDS = 0.5
# The container of a TubeMQ waits for this file (in its work folder) before starting the broker: the
# master must know the broker and the topics first.
BROKER_GO = "start-broker"


class ContainerError(BrokerError):
    """The engine refused a container, or a container did not become ready."""


def session_id() -> str:
    """A fresh id for the label of one session's containers."""
    return uuid.uuid4().hex[:12]


def owner() -> str:
    """``host:pid`` of this interpreter, the owner label of its containers."""
    return f"{socket.gethostname()}:{os.getpid()}"


def labels(session: str, root: Path | None = None) -> dict[str, str]:
    """The labels of every container (and network) a session makes; ``root``, its work folders' folder."""
    out = {LABEL: session, OWNER_LABEL: owner()}
    if root is not None:
        out[ROOT_LABEL] = str(root)
    return out


def _remove_root(value: str) -> None:
    # Only a folder this module's sessions make, whatever a label says.
    root = Path(value)
    if value and root.name.startswith(ROOT_PREFIX) and root.is_dir():
        shutil.rmtree(root, ignore_errors=True)


def _owner_alive(value: str) -> bool:
    host, _, pid = value.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's, or not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_labelled(engine: Any, session: str | None = None, dead_owners_only: bool = False) -> list[str]:
    """Remove the containers and networks labelled by ``session`` (every session's when None).

    ``dead_owners_only`` keeps those whose owner process on this host still runs (another session's), and
    removes the work folders of the dead ones. Returns the names removed.
    """
    label = f"{LABEL}={session}" if session else LABEL
    removed: list[str] = []
    for container in engine.containers.list(all=True, filters={"label": label}):
        if dead_owners_only and _owner_alive(container.labels.get(OWNER_LABEL, "")):
            continue
        with contextlib.suppress(Exception):  # already gone: removed by another cleanup meanwhile
            container.remove(force=True, v=True)
            removed.append(container.name)
        if dead_owners_only:
            _remove_root(container.labels.get(ROOT_LABEL, ""))
    for network in engine.networks.list(filters={"label": label}):
        if dead_owners_only and _owner_alive(network.attrs.get("Labels", {}).get(OWNER_LABEL, "")):
            continue
        with contextlib.suppress(Exception):
            network.remove()
            removed.append(network.name)
    return removed


# ------------------------------------------------------------------------------------------ the plan inside
def container_argv(argv: Sequence[str], found: images.Layout) -> list[str]:
    """A launcher command line as the image runs it: its ``java``, its class path, wildcard listeners.

    The loopback preload (``env LD_PRELOAD=... MQWIRE_BIND_ADDRESS=...``) is left out: a container has its
    own loopback, and the engine forwards to its other address.
    """
    out = list(argv)
    while out and (out[0] == "env" or "=" in out[0]):
        out.pop(0)
    if not out:
        raise ContainerError(f"no command in {list(argv)}")
    out[0] = "java"
    for flag in ("-cp", "-jar"):
        if flag in out:
            out[out.index(flag) + 1] = found.classpath
    return [arg.replace(f"quarkus.http.host={LOOPBACK}", f"quarkus.http.host={ANYWHERE}") for arg in out]


def _rewrite(path: Path, edit: Callable[[str], str | None]) -> None:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        changed = edit(line)
        if changed is not None:
            lines.append(changed)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def listen_anywhere(plan: Plan) -> None:
    """Make the plan's servers listen on every address of the container (advertised addresses unchanged)."""
    if plan.name in ("kafka", "kafka3"):
        _rewrite(
            plan.path("conf", "server.properties"),
            lambda line: line.replace(LOOPBACK, ANYWHERE) if line.startswith("listeners=") else line,
        )
    elif plan.name == "pulsar":

        def edit(line: str) -> str | None:
            if line.startswith("listeningInterface="):
                return None  # the host's loopback interface name means nothing in the container
            return f"bindAddress={ANYWHERE}" if line.startswith("bindAddress=") else line

        _rewrite(plan.path("conf", "standalone.conf"), edit)


def script(plan: Plan, found: images.Layout) -> str:
    """The container's bash command: the plan's JVMs, the container ending when any of them does."""
    specs = plan.procs
    if plan.name in ("kafka", "kafka3"):
        format_argv = shlex.join(container_argv(plan.settings["format_argv"], found))
        return f"{format_argv} && exec {shlex.join(container_argv(specs[0].argv, found))}"
    if plan.name == "tubemq":
        master, broker = (
            shlex.join(container_argv(plan.proc(role).argv, found)) for role in ("tubemq-master", "tubemq-broker")
        )
        go = shlex.quote(str(plan.path(BROKER_GO)))
        return (
            f"{master} & m=$!; "
            f"while [ ! -e {go} ]; do kill -0 $m 2>/dev/null || exit 1; sleep 0.2; done; "
            f"{broker} & b=$!; "
            "while kill -0 $m 2>/dev/null && kill -0 $b 2>/dev/null; do sleep 0.5; done; exit 1"
        )
    return f"exec {shlex.join(container_argv(specs[0].argv, found))}"


def published_ports(plan: Plan) -> list[int]:
    """The plan's ports a client on the host dials."""
    return sorted({port for role, port in plan.ports.items() if role not in UNPUBLISHED})


# ------------------------------------------------------------------------------------------ one container
@dataclass
class Running:
    """A started container of one broker: ``container`` is testcontainers' ``DockerContainer``."""

    name: str
    tag: str
    container: Any
    plan: Plan

    @property
    def container_name(self) -> str:
        return str(self.container.get_wrapped_container().name)

    def logs(self, lines: int = LOG_LINES) -> str:
        """The container's last output lines, then the tails of the broker's own log files."""
        try:
            out = self.container.get_wrapped_container().logs(tail=lines).decode("utf-8", errors="replace")
        except Exception as err:  # gone, or the engine stopped answering
            out = f"(no container output: {err})"
        return f"--- last {lines} lines of container {self.container_name} ---\n{out}\n" + log_tails(
            self.plan.log_files, lines
        )

    def running(self) -> bool:
        wrapped = self.container.get_wrapped_container()
        try:
            wrapped.reload()
        except Exception:
            return False
        return bool(wrapped.status in ("created", "running"))

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self.container.stop()

    def wait(self, what: str, check: Callable[[], bool], deadline: float) -> None:
        """Poll ``check``; a container that exits or a deadline that passes is an error naming it."""
        while not check():
            if not self.running():
                raise ContainerError(
                    f"container {self.container_name} ({self.tag}) of {self.name} exited while waiting for "
                    f"{what}\n{self.logs()}"
                )
            if time.monotonic() >= deadline:
                raise ContainerError(
                    f"container {self.container_name} ({self.tag}) of {self.name}: timed out waiting for {what}; "
                    f"raise MQWIRE_START_TIMEOUT on a slow machine, or read why below\n{self.logs()}"
                )
            time.sleep(POLL_SECONDS)


def run(name: str, tag: str, plan: Plan, found: images.Layout, session: str) -> Running:
    """Start ``plan`` in a container of ``tag``, its work folder mounted at the same path."""
    from testcontainers.core.container import DockerContainer

    listen_anywhere(plan)
    container = DockerContainer(
        tag,
        command=shlex.join(["bash", "-c", script(plan, found)]),
        labels=labels(session, Path(plan.work_dir).parent),
        name=f"mqwire-{name}-{session}",
        user=f"{os.getuid()}:{os.getgid()}",
        working_dir=plan.work_dir,
        env={"HOME": plan.work_dir},
    )
    container.with_volume_mapping(plan.work_dir, plan.work_dir, "rw")
    ports = cast(dict[str, Any], container.ports)
    for port in published_ports(plan):
        ports[f"{port}/tcp"] = (LOOPBACK, port)
    try:
        container.start()
    except Exception as err:
        with contextlib.suppress(Exception):
            container.stop()
        raise ContainerError(f"the Docker engine refused the {name} container ({tag}): {err}") from err
    return Running(name, tag, container, plan)


# ------------------------------------------------------------------------------------------ readiness
def wait_ready(running: Running, topics: dict[str, int], timeout: float) -> None:
    """What the local launcher waits on for the same broker, through the published ports."""
    deadline = time.monotonic() + timeout
    plan, name = running.plan, running.name
    if name in ("kafka", "kafka3"):
        port = plan.ports["broker"]
        running.wait(f"ApiVersions on {LOOPBACK}:{port}", lambda: kafka_wire.is_ready(port), deadline)
    elif name == "pulsar":
        _wait_pulsar(running, f"http://{LOOPBACK}:{plan.ports['web']}", deadline)
    elif name == "tubemq":
        _wait_tubemq(running, topics, deadline)
    elif name == "registry":
        url = f"http://{LOOPBACK}:{plan.ports['http']}/apis/ccompat/v7/subjects"

        def answers() -> bool:
            reply = rest.answers(url)
            return reply is not None and reply.ok

        running.wait(f"schema registry API on {url}", answers, deadline)
    else:
        raise ContainerError(f"no readiness check for {name}")


def _wait_pulsar(running: Running, admin: str, deadline: float) -> None:
    from mqwire.testing import pulsar

    pulsar.wait_ready(admin, lambda what, check: running.wait(what, check, deadline))


def _wait_tubemq(running: Running, topics: dict[str, int], deadline: float) -> None:
    # Same steps as the local launcher's fresh start: the master first, the broker and topics registered
    # before the broker's first heartbeat, then the broker.
    from mqwire.testing import tubemq

    plan = running.plan
    admin = f"http://{LOOPBACK}:{plan.ports['master_web']}"
    running.wait(f"tubemq master web API on {admin}", lambda: tubemq_admin.master_ready(admin), deadline)
    tubemq.register_broker(admin, str(plan.settings["auth_token"]), plan, topics)
    plan.path(BROKER_GO).touch()
    tubemq.wait_broker_live(admin, list(topics), lambda what, check: running.wait(what, check, deadline))


def endpoint(running: Running) -> Endpoint:
    """The broker's endpoint, as the launcher describes the same plan."""
    from mqwire.testing.launcher import KINDS

    return KINDS[running.name].endpoint(running.plan)


__all__ = [
    "LABEL",
    "OWNER_LABEL",
    "ContainerError",
    "Running",
    "container_argv",
    "endpoint",
    "labels",
    "listen_anywhere",
    "owner",
    "published_ports",
    "remove_labelled",
    "run",
    "script",
    "session_id",
    "wait_ready",
]
