"""Start, stop, kill and restart brokers, keeping their run state in a state folder."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mqwire.testing import classpath, procs
from mqwire.testing.endpoints import Endpoint
from mqwire.testing.errors import BrokerError, BrokerStartError, PortTakenError
from mqwire.testing.java import find_java
from mqwire.testing.kafka import KafkaKind, add_broker_config
from mqwire.testing.net import wait_ports_free
from mqwire.testing.parallel import each_in_parallel
from mqwire.testing.paths import BROKER_NAMES, default_state_dir
from mqwire.testing.plan import BrokerKind, Plan, Spawner
from mqwire.testing.procs import ProcSpec
from mqwire.testing.pulsar import PulsarKind
from mqwire.testing.registry import RegistryKind
from mqwire.testing.state import Record, StateDir, end
from mqwire.testing.tubemq import TubeMQKind, enable_tls, require_authentication

KINDS: dict[str, BrokerKind] = {
    "kafka": KafkaKind(),
    "pulsar": PulsarKind(),
    "tubemq": TubeMQKind(),
    "kafka3": KafkaKind("kafka3", share_groups=False),
    "registry": RegistryKind(),
}
log = logging.getLogger(__name__)
T = TypeVar("T")
DEFAULT_START_TIMEOUT = 180.0
# Starts of one broker when each loses one of its freshly chosen ports to another process.
PORT_RACE_ATTEMPTS = 3
# What the JVM (and Netty's native transport) logs when a server socket cannot bind its port.
_BIND_FAILURE = "Address already in use"
STOP_TIMEOUT = 20.0


def start_timeout() -> float:
    return float(os.environ.get("MQWIRE_START_TIMEOUT") or DEFAULT_START_TIMEOUT)


@dataclass(frozen=True)
class BrokerStatus:
    name: str
    endpoint: Endpoint
    pids: dict[str, int]
    alive: bool
    work_dir: str
    java: str = ""
    # Set by ``start``: True when it found the broker already running and did nothing.
    already_running: bool = False
    start_seconds: float | None = None


def lost_a_port(log_files: Iterable[str]) -> bool:
    """True when a log says a server socket found its port taken."""
    for path in log_files:
        try:
            with open(path, encoding="utf-8", errors="replace") as log_text:
                if any(_BIND_FAILURE in line for line in log_text):
                    return True
        except OSError:
            continue
    return False


def start_failure(name: str, plan: Plan, fresh: bool, cause: BaseException) -> BrokerStartError:
    """The error for a start that failed: a fresh start whose logs say a port was taken can be tried again."""
    failure = PortTakenError if fresh and lost_a_port(plan.log_files) else BrokerStartError
    return failure(f"{name} failed to start (work folder {plan.work_dir}): {cause}")


def on_new_ports_when_one_is_lost(name: str, start_fresh: Callable[[], T]) -> T:
    """Run ``start_fresh`` (which chooses new ports each time) again while it loses a port, a few times at most.

    The ports are chosen free, but another process may bind one (a client's ephemeral port) before the
    broker does; any other failure is final.
    """
    for _ in range(PORT_RACE_ATTEMPTS - 1):
        try:
            return start_fresh()
        except PortTakenError as err:
            log.warning("%s lost a port to another process; starting it again on new ports: %s", name, err)
    return start_fresh()


def _check_name(name: str) -> None:
    if name not in KINDS:
        raise BrokerError(f"unknown broker {name!r}; choose from {', '.join(BROKER_NAMES)}")


class Launcher:
    """Brokers of one state folder.

    ``owned=True`` ties every JVM to this interpreter (tests); otherwise they are detached and
    outlive it (the command line).
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        work_root: Path | None = None,
        owned: bool = False,
        timeout: float | None = None,
    ) -> None:
        self.state = StateDir(state_dir or default_state_dir())
        self.work_root = work_root
        self.owned = owned
        self.timeout = timeout or start_timeout()

    def _status(
        self, name: str, record: Record, already_running: bool = False, start_seconds: float | None = None
    ) -> BrokerStatus:
        alive = bool(record.pids) and all(
            procs.alive(record.pids.get(spec.role, -1), spec.marker) for spec in record.plan.procs
        )
        return BrokerStatus(
            name,
            KINDS[name].endpoint(record.plan),
            dict(record.pids),
            alive,
            record.plan.work_dir,
            f"{record.java.get('executable', '')} (JDK {record.java.get('major', '?')})",
            already_running,
            start_seconds,
        )

    def status(self) -> list[BrokerStatus]:
        out = []
        for name in self.state.names():
            if name in KINDS:
                record = self.state.load(name)
                if record is not None:
                    out.append(self._status(name, record))
        return out

    def start(
        self,
        name: str,
        tubemq_topics: Mapping[str, int] | None = None,
        *,
        tubemq_authentication: bool = False,
        tubemq_tls: bool = False,
        kafka_properties: Mapping[str, str] | None = None,
        kafka_classpath: Sequence[str] = (),
        kafka_jvm_flags: Sequence[str] = (),
    ) -> BrokerStatus:
        """Start ``name``; a running broker is left alone, a killed one comes back on its ports and data.

        ``tubemq_authentication`` makes a fresh TubeMQ master require signed registrations; ``tubemq_tls``
        adds TLS ports to a fresh TubeMQ master and broker. ``kafka_properties`` are set in a fresh Kafka's
        server.properties, ``kafka_classpath`` goes first on its class path (broker plugins) and
        ``kafka_jvm_flags`` among its JVM flags.
        """
        _check_name(name)
        with self.state.locked(name):
            record = self.state.load(name)
            if record is not None:
                status = self._status(name, record)
                if status.alive:
                    return self._status(name, record, already_running=True)
                if record.ready_once and Path(record.plan.work_dir).is_dir():
                    return self._relaunch(name, record)
                # Never became ready (its starter died half-way): start over from scratch.
                self._terminate(record, graceful=False)
                self.state.remove(name)
                if record.owns_work_dir:
                    shutil.rmtree(record.plan.work_dir, ignore_errors=True)
            return self._fresh(
                name,
                dict(tubemq_topics or {}),
                tubemq_authentication,
                tubemq_tls,
                kafka_properties,
                kafka_classpath,
                kafka_jvm_flags,
            )

    def _spawner(self, name: str, record: Record) -> Spawner:
        def spawn(spec: ProcSpec) -> int:
            pid = procs.spawn(spec, owned=self.owned)
            record.pids[spec.role] = pid
            self.state.save(name, record)
            return pid

        return spawn

    def _fresh(
        self,
        name: str,
        tubemq_topics: dict[str, int],
        tubemq_authentication: bool = False,
        tubemq_tls: bool = False,
        kafka_properties: Mapping[str, str] | None = None,
        kafka_classpath: Sequence[str] = (),
        kafka_jvm_flags: Sequence[str] = (),
    ) -> BrokerStatus:
        return on_new_ports_when_one_is_lost(
            name,
            lambda: self._fresh_once(
                name,
                tubemq_topics,
                tubemq_authentication,
                tubemq_tls,
                kafka_properties,
                kafka_classpath,
                kafka_jvm_flags,
            ),
        )

    def _fresh_once(
        self,
        name: str,
        tubemq_topics: dict[str, int],
        tubemq_authentication: bool,
        tubemq_tls: bool,
        kafka_properties: Mapping[str, str] | None,
        kafka_classpath: Sequence[str],
        kafka_jvm_flags: Sequence[str],
    ) -> BrokerStatus:
        kind = KINDS[name]
        java = find_java(name)
        cp = classpath.classpath(name)
        if self.work_root is not None:
            self.work_root.mkdir(parents=True, exist_ok=True)
        work_dir = Path(tempfile.mkdtemp(prefix=f"mqwire-{name}-", dir=self.work_root))
        plan = kind.build_plan(work_dir, java.executable, cp, uuid.uuid4().hex[:12])
        if tubemq_topics and name == "tubemq":
            plan.settings["topics"] = tubemq_topics
        if tubemq_authentication and name == "tubemq":
            require_authentication(plan)
        if tubemq_tls and name == "tubemq":
            enable_tls(plan, java.executable)
        if (kafka_properties or kafka_classpath or kafka_jvm_flags) and isinstance(kind, KafkaKind):
            add_broker_config(plan, kafka_properties or {}, kafka_classpath, kafka_jvm_flags)
        record = Record(plan, java=java.to_json(), started_at=time.time())
        self.state.save(name, record)
        return self._run(name, record, fresh=True)

    def _relaunch(self, name: str, record: Record) -> BrokerStatus:
        for spec in record.plan.procs:
            if "-cp" in spec.argv:
                classpath.restore(name, spec.argv[spec.argv.index("-cp") + 1])
        for spec in reversed(record.plan.procs):
            procs.kill(record.pids.get(spec.role, -1), spec.marker)
        busy = wait_ports_free(list(record.plan.ports.values()))
        if busy:
            raise BrokerStartError(f"cannot restart {name}: ports {busy} are taken by another process")
        record.pids = {}
        record.started_at = time.time()
        self.state.save(name, record)
        return self._run(name, record, fresh=False)

    def _run(self, name: str, record: Record, fresh: bool) -> BrokerStatus:
        began = time.monotonic()
        try:
            KINDS[name].launch(record.plan, self._spawner(name, record), fresh, self.timeout)
        except BaseException as err:
            self._terminate(record, graceful=False)
            if fresh:
                # Logs stay in the work folder for a look; the state goes so a new start is clean.
                self.state.remove(name)
            if isinstance(err, BrokerError | OSError | ValueError):
                raise start_failure(name, record.plan, fresh, err) from err
            raise
        record.ready_once = True
        self.state.save(name, record)
        return self._status(name, record, start_seconds=round(time.monotonic() - began, 1))

    def _terminate(self, record: Record, graceful: bool) -> None:
        for spec in reversed(record.plan.procs):
            pid = record.pids.get(spec.role)
            if pid is None:
                continue
            if graceful:
                procs.stop(pid, spec.marker, STOP_TIMEOUT)
            else:
                procs.kill(pid, spec.marker)

    def stop(self, name: str, keep_data: bool = False) -> bool:
        """Stop gracefully and forget the broker; False when it was not known."""
        _check_name(name)
        return end(self.state, name, self._terminate, graceful=True, keep_data=keep_data)

    def kill(self, name: str) -> bool:
        """SIGKILL the broker's JVMs, keeping its state and data for a later ``start``."""
        _check_name(name)
        return end(self.state, name, self._terminate, graceful=False)

    def start_many(
        self,
        names: Iterable[str],
        tubemq_topics: Mapping[str, int] | None = None,
        tubemq_authentication: bool = False,
        tubemq_tls: bool = False,
    ) -> tuple[dict[str, BrokerStatus], dict[str, BaseException]]:
        """Start several brokers at once, each in its own thread; returns successes and failures."""
        started: dict[str, BrokerStatus] = {}
        failed: dict[str, BaseException] = {}
        guard = threading.Lock()

        def run(name: str) -> None:
            try:
                status = self.start(
                    name, tubemq_topics, tubemq_authentication=tubemq_authentication, tubemq_tls=tubemq_tls
                )
            except BaseException as err:
                with guard:
                    failed[name] = err
            else:
                with guard:
                    started[name] = status

        threads = [threading.Thread(target=run, args=(n,), name=f"start-{n}") for n in dict.fromkeys(names)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return started, failed

    def stop_all(self) -> None:
        """Stop every broker this state folder knows, all at once (each waits out its own graceful end)."""
        each_in_parallel(self.stop, [name for name in self.state.names() if name in KINDS])

    def create_topic(self, name: str, topic: str, partitions: int) -> str:
        _check_name(name)
        record = self.state.load(name)
        if record is None:
            raise BrokerError(f"{name} is not running (no state in {self.state.root})")
        endpoint = KINDS[name].endpoint(record.plan)
        return KINDS[name].create_topic(endpoint, topic, partitions, self.timeout)
