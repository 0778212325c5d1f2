"""A Spark standalone cluster (a master and two workers) from the installed pyspark package's own classes.

Nothing is downloaded: ``bin/spark-class`` inside the pyspark install runs
``org.apache.spark.deploy.master.Master`` and ``org.apache.spark.deploy.worker.Worker`` on loopback ports.
The pids are recorded in the state folder like a broker's, so ``stop`` ends them even from another process.
The workers start without ``PYTHONPATH`` or a virtual environment of the caller, so their executors only
see what a job ships (for example a packed environment given to ``spark-submit --archives``).

``python -m mqwire.testing.spark_cluster start|stop|status [--state-dir DIR]`` does the same from a shell.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mqwire.testing import procs
from mqwire.testing.errors import BrokerError
from mqwire.testing.net import LOOPBACK, free_ports, port_is_open
from mqwire.testing.paths import default_state_dir
from mqwire.testing.plan import Plan
from mqwire.testing.procs import ProcSpec
from mqwire.testing.state import Record, StateDir, end

NAME = "spark-cluster"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0


def spark_home() -> Path:
    """The pyspark package folder, which holds ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True)
class SparkCluster:
    """A running cluster: where to submit, where the workers' logs are, and the recorded pids."""

    master_url: str
    web_url: str
    work_dir: str
    pids: dict[str, int]


def _spec(role: str, work: Path, main_class: str, args: list[str]) -> ProcSpec:
    home = spark_home()
    # `env` drops what would let executors import the caller's packages, then execs spark-class, which execs
    # java: the recorded pid stays the JVM's.
    argv = [
        "/usr/bin/env",
        "-u",
        "PYTHONPATH",
        "-u",
        "VIRTUAL_ENV",
        "-u",
        "PYSPARK_PYTHON",
        "-u",
        "PYSPARK_DRIVER_PYTHON",
        f"SPARK_HOME={home}",
        f"SPARK_LOG_DIR={work / 'logs'}",
        f"SPARK_CONF_DIR={work / 'conf'}",
        "SPARK_NO_DAEMONIZE=1",
        str(home / "bin" / "spark-class"),
        main_class,
        *args,
    ]
    log = str(work / f"{role}.log")
    return ProcSpec(role, tuple(argv), str(work), log, log, main_class)


def build_plan(work: Path, workers: int, cores: int, memory: str) -> Plan:
    """Ports and commands of the master and ``workers`` workers under ``work``."""
    master_port, master_web, *worker_ports = free_ports(2 + 2 * workers)
    master = f"spark://{LOOPBACK}:{master_port}"
    specs = [
        _spec(
            "master",
            work,
            MASTER_CLASS,
            ["--host", LOOPBACK, "--port", str(master_port), "--webui-port", str(master_web)],
        )
    ]
    for i in range(workers):
        port, web = worker_ports[2 * i], worker_ports[2 * i + 1]
        args = ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(web), "--cores", str(cores)]
        args += ["--memory", memory, "--work-dir", str(work / f"worker-{i + 1}"), master]
        specs.append(_spec(f"worker-{i + 1}", work, WORKER_CLASS, args))
    ports = {"master": master_port, "master_web": master_web}
    return Plan(NAME, NAME, str(work), ports, specs, {"master_url": master})


def _log_has(path: str, text: str) -> bool:
    try:
        return text in Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _cluster(plan: Plan, pids: dict[str, int]) -> SparkCluster:
    web = f"http://{LOOPBACK}:{plan.ports['master_web']}"
    return SparkCluster(str(plan.settings["master_url"]), web, plan.work_dir, dict(pids))


def _terminate(record: Record, graceful: bool) -> None:
    # Workers first: a master stopped before them makes them retry their registration until killed.
    for spec in reversed(record.plan.procs):
        pid = record.pids.get(spec.role)
        if pid is None:
            continue
        if graceful:
            procs.stop(pid, spec.marker, STOP_TIMEOUT)
        else:
            procs.kill(pid, spec.marker)


def start(
    state_dir: Path | None = None,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    owned: bool = True,
    timeout: float = START_TIMEOUT,
) -> SparkCluster:
    """Start a master and ``workers`` workers (``cores`` and ``memory`` each) and wait until every worker
    has registered; ``owned`` ties the JVMs to this interpreter. A cluster already recorded is refused."""
    state = StateDir(state_dir or default_state_dir())
    with state.locked(NAME):
        if state.load(NAME) is not None:
            raise BrokerError(f"{NAME} is already recorded in {state.root}: stop it first")
        work = Path(tempfile.mkdtemp(prefix="mqwire-spark-"))
        (work / "conf").mkdir()
        plan = build_plan(work, workers, cores, memory)
        record = Record(plan, started_at=time.time())
        try:
            watched: list[tuple[int, ProcSpec]] = []
            for spec in plan.procs:
                pid = procs.spawn(spec, owned)
                record.pids[spec.role] = pid
                state.save(NAME, record)  # recorded before anything else can fail
                watched.append((pid, spec))
                if spec.role == "master":
                    procs.wait_until(
                        "the Spark master's port",
                        lambda: True if port_is_open(plan.ports["master"]) else None,
                        timeout,
                        watched,
                    )
            for _pid, spec in watched[1:]:
                procs.wait_until(
                    f"{spec.role} to register with the master",
                    lambda spec=spec: True if _log_has(spec.log_file, "Successfully registered with master") else None,  # type: ignore[misc]
                    timeout,
                    watched,
                )
            record.ready_once = True
            state.save(NAME, record)
        except BaseException:
            _terminate(record, True)
            state.remove(NAME)
            shutil.rmtree(work, ignore_errors=True)
            raise
    return _cluster(plan, record.pids)


def status(state_dir: Path | None = None) -> SparkCluster | None:
    """The recorded cluster, or None."""
    record = StateDir(state_dir or default_state_dir()).load(NAME)
    return None if record is None else _cluster(record.plan, record.pids)


def stop(state_dir: Path | None = None, *, keep_data: bool = False) -> bool:
    """Stop every recorded JVM by pid and forget the cluster; False when none is recorded."""
    return end(StateDir(state_dir or default_state_dir()), NAME, _terminate, graceful=True, keep_data=keep_data)


def main(argv: list[str] | None = None) -> int:
    """``start``, ``stop`` or ``status`` of the state folder's Spark cluster, printed as JSON."""
    parser = argparse.ArgumentParser(prog="python -m mqwire.testing.spark_cluster")
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="1g")
    args = parser.parse_args(argv)
    if args.action == "start":
        cluster = start(args.state_dir, workers=args.workers, cores=args.cores, memory=args.memory, owned=False)
        print(json.dumps(cluster.__dict__, indent=2))
    elif args.action == "stop":
        print(json.dumps({"stopped": stop(args.state_dir)}))
    else:
        found = status(args.state_dir)
        print(json.dumps(None if found is None else found.__dict__, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
