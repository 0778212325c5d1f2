"""The runtime matrix (``make test-matrix``): the package on the other CPython versions it supports, and its
pure-Python fallback, against one set of real brokers.

- CPython 3.12 and 3.13 (from pyenv): each gets a virtual environment of its own under ``build/matrix``, the
  package built into it with its compiled speedups (a build that fell back to Python fails the run), then
  the unit tests and the contract suite. 3.11 with the speedups is what ``make test`` runs already.
- CPython 3.11 with ``MQWIRE_PURE_PYTHON=1`` (the repository's ``.venv``): the contract suite and one round
  trip per client (``tests/integration/test_round_trips.py``), after checking that no speedup is loaded.

The brokers (Kafka, Pulsar, TubeMQ) start once, while the environments are prepared, and every pytest run
reaches them with ``--brokers=external``; they are stopped at the end whatever happened. An interpreter that
cannot be found fails the run, it is never skipped. An environment is made again only when pyproject.toml
or the interpreter changed, and the package rebuilt only when pyproject.toml or a C source changed.

With ``--containers`` the brokers run in containers of the images built here instead (``make test-containers``,
which CI runs, prepares the engine and the images first).

Usage: ``python tests/matrix.py [--only py3.12|py3.13|pure ...] [--keep-brokers] [--containers]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
import types
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "matrix"
STATE_DIR = ROOT / "build" / "matrix-brokers"
LOGS = BUILD / "logs"
HOME_VENV = ROOT / ".venv"
OUTPUT_LOCK = threading.Lock()
VERSIONS = ("3.12", "3.13")
# What the unit tests and the contract suite import beyond the package: these extras ...
EXTRAS = ("avro", "cli", "crypto", "json", "otel", "spark", "telemetry", "testing", "uvloop")
# ... and these development tools, with the versions the dev extra pins (test_typing runs mypy, the
# OpenTelemetry tests use the SDK, the group protocol tests compare with kafka-python's structures).
DEV_TOOLS = (
    "pytest-asyncio",
    "pytest-timeout",
    "hypothesis",
    "opentelemetry-sdk",
    "kafka-python",
    "mypy",
    "types-protobuf",
)
ROUND_TRIPS = "tests/integration/test_round_trips.py"
# The guides' blocks (a Spark job among them) run with the speedups in `make test` and on the pure-Python path
# here; the 3.12 and 3.13 steps leave them out, which keeps the matrix within CI's time.
NOT_ON_EVERY_VERSION = ("--ignore=tests/contract/test_readme.py",)
# TubeMQ topics of the round trips, deployed with the contract suite's while the broker starts.
ROUND_TRIP_TUBEMQ_TOPICS = {"roundtrip_runtime": 3}
# The suffix of each contract step's own TubeMQ topics (MQWIRE_CONTRACT_TUBEMQ_SUFFIX).
CONTRACT_SUFFIXES = {**{v: "_py" + v.replace(".", "") for v in VERSIONS}, "pure": "_pure"}


class MatrixError(Exception):
    """A step of the matrix could not be prepared (no interpreter, a failed install, a build without speedups)."""


@dataclasses.dataclass
class Outcome:
    """One step's name, whether it passed, and how long it took."""

    name: str
    passed: bool
    seconds: float
    detail: str = ""


def log(text: str) -> None:
    """A progress line of the matrix, told apart from pytest's own output."""
    print(f"[matrix] {text}", file=sys.stderr, flush=True)


def run(cmd: Sequence[str | Path], env: Mapping[str, str] | None = None, check: bool = True) -> int:
    """Run ``cmd`` in the repository root; a failure raises MatrixError when ``check``."""
    log("$ " + " ".join(str(c) for c in cmd))
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=dict(env or os.environ), check=False)
    if check and result.returncode != 0:
        raise MatrixError(f"{Path(str(cmd[0])).name} exited with {result.returncode}")
    return result.returncode


# ------------------------------------------------------------------------------------------ pyproject.toml
def pyproject() -> dict[str, Any]:
    """pyproject.toml, parsed."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def requirement_name(requirement: str) -> str:
    """The normalised distribution name a requirement string starts with."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    if not match:
        raise MatrixError(f"pyproject.toml: cannot read the requirement {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def dev_tools(project: dict[str, Any]) -> list[str]:
    """The DEV_TOOLS requirements exactly as the dev extra writes them."""
    dev = project["project"]["optional-dependencies"]["dev"]
    by_name = {requirement_name(r): r for r in dev}
    missing = [name for name in DEV_TOOLS if name not in by_name]
    if missing:
        raise MatrixError(f"pyproject.toml's dev extra no longer lists {', '.join(missing)}")
    return [by_name[name] for name in DEV_TOOLS]


def extension_modules(project: dict[str, Any]) -> dict[str, list[str]]:
    """The compiled speedups pyproject.toml declares: module name to its C sources."""
    modules = project["tool"]["setuptools"]["ext-modules"]
    return {str(m["name"]): [str(s) for s in m["sources"]] for m in modules}


def contract_tubemq_topics(project: dict[str, Any]) -> dict[str, int]:
    """The TubeMQ topics the contract suite needs (from the mqwire_tubemq_topics ini value), one set per
    contract step (the steps run side by side, see tests/contract/systems.py), and the round trips'."""
    text = str(project["tool"]["pytest"]["ini_options"]["mqwire_tubemq_topics"])
    topics: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, count = item.partition(":")
        if name.startswith("contract_") and not name.endswith("_uv"):  # the matrix runs on asyncio's loop
            topics.update({name + suffix: int(count or 1) for suffix in CONTRACT_SUFFIXES.values()})
    topics.update(ROUND_TRIP_TUBEMQ_TOPICS)
    return topics


# ------------------------------------------------------------------------------------------ interpreters
def pyenv_root() -> Path | None:
    """Where pyenv keeps its interpreters: $PYENV_ROOT, ``pyenv root``, or ~/.pyenv."""
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv")
    if pyenv:
        answer = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
        if answer.returncode == 0 and answer.stdout.strip():
            return Path(answer.stdout.strip())
    default = Path.home() / ".pyenv"
    return default if default.is_dir() else None


def find_interpreter(version: str) -> Path:
    """The newest pyenv CPython ``version``.x, else ``python<version>`` on PATH; none is a MatrixError."""
    root = pyenv_root()
    if root is not None:
        candidates = []
        for path in (root / "versions").glob(f"{version}.*"):
            patch = path.name[len(version) + 1 :]
            if patch.isdigit() and (path / "bin" / "python").exists():
                candidates.append((int(patch), path / "bin" / "python"))
        if candidates:
            return max(candidates)[1]
    on_path = shutil.which(f"python{version}")
    if on_path:
        return Path(on_path)
    raise MatrixError(
        f"no CPython {version}: none under {root or '~/.pyenv'}/versions and no python{version} on PATH "
        f"(install it with `pyenv install {version}`)"
    )


def interpreter_version(python: Path) -> str:
    """The full version and build of an interpreter, part of its environment's stamp."""
    answer = subprocess.run([str(python), "-c", "import sys; print(sys.version)"], capture_output=True, text=True)
    if answer.returncode != 0:
        raise MatrixError(f"{python} does not run: {answer.stderr.strip()}")
    return answer.stdout.strip()


# ------------------------------------------------------------------------------------------ environments
def digest(parts: Sequence[bytes]) -> str:
    """A stamp of these parts."""
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def stamp_matches(path: Path, value: str) -> bool:
    """Whether the stamp file holds ``value``."""
    return path.exists() and path.read_text() == value


def without_pure_python(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the pure-Python switch off."""
    return {k: v for k, v in env.items() if k != "MQWIRE_PURE_PYTHON"}


# Prints, as JSON, which speedups each module that chooses one has taken, and the extension modules loaded.
# Run from the repository root, the way pytest imports the packages.
PROBE = """
import json, sys
from kafkawire import delivery, partitioner
from kafkawire.protocol import records
from pulsarwire.protocol import batch
from mqwire.common import blocking_enqueue, blocking_future
print(json.dumps({
    "kafkawire.protocol.records": records.COMPILED,
    "mqwire.common.blocking_future": blocking_future.COMPILED,
    "mqwire.common.blocking_enqueue": blocking_enqueue.COMPILED,
    "kafkawire.partitioner": partitioner.COMPILED,
    "pulsarwire.protocol.batch": batch.COMPILED,
    # the compiled type is given the Python class's result() as _result_slow
    "kafkawire.delivery": hasattr(delivery.RecordFuture, "_result_slow"),
    "loaded": sorted(m for m in sys.modules if m.rsplit(".", 1)[-1].endswith("_speedups")),
}))
"""


def probe(python: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """What PROBE reports under ``python`` with ``env``."""
    answer = subprocess.run([str(python), "-c", PROBE], cwd=ROOT, env=dict(env), capture_output=True, text=True)
    if answer.returncode != 0:
        raise MatrixError(f"{python}: importing the packages failed:\n{answer.stderr}")
    result: dict[str, Any] = json.loads(answer.stdout)
    return result


def compiled_problems(report: dict[str, Any], extensions: Sequence[str]) -> list[str]:
    """What a build with every speedup compiled and taken should report, and does not."""
    problems = [f"{module} runs its Python code" for module, on in report.items() if on is False]
    problems += [f"{name} is not loaded" for name in extensions if name not in report["loaded"]]
    return problems


def pure_problems(report: dict[str, Any]) -> list[str]:
    """What a pure-Python run should report, and does not."""
    problems = [f"{module} runs its compiled code" for module, on in report.items() if on is True]
    problems += [f"{name} is loaded" for name in report["loaded"]]
    return problems


def prepare(version: str, project: dict[str, Any]) -> Path:
    """A virtual environment of CPython ``version`` with the package and its speedups built; its python."""
    python = find_interpreter(version)
    venv = BUILD / f"py{version}"
    venv_python = venv / "bin" / "python"
    env = without_pure_python(os.environ)
    env.pop("VIRTUAL_ENV", None)
    extensions = extension_modules(project)
    pyproject_bytes = (ROOT / "pyproject.toml").read_bytes()
    deps_stamp = digest([pyproject_bytes, interpreter_version(python).encode(), " ".join(EXTRAS).encode()])
    sources = sorted({s for group in extensions.values() for s in group})
    build_stamp = digest([pyproject_bytes, *((ROOT / s).read_bytes() for s in sources)])

    if not stamp_matches(venv / ".deps-stamp", deps_stamp):
        log(f"py{version}: a fresh environment from {python}")
        shutil.rmtree(venv, ignore_errors=True)
        run([python, "-m", "venv", venv], env)
        run([venv_python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], env)
        run([venv_python, "-m", "pip", "install", "--quiet", *project["build-system"]["requires"],
             *dev_tools(project)], env)
        # The package and its extras' dependencies; the speedups are built in place, one file per
        # interpreter (their names carry its ABI tag), where the tests import the packages from.
        run([venv_python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "-e",
             f".[{','.join(EXTRAS)}]"], env)
        (venv / ".build-stamp").write_text(build_stamp)
        (venv / ".deps-stamp").write_text(deps_stamp)
    for attempt in ("cached", "rebuilt"):
        if attempt == "rebuilt" or not stamp_matches(venv / ".build-stamp", build_stamp):
            log(f"py{version}: building the package")
            (venv / ".build-stamp").unlink(missing_ok=True)
            run([venv_python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "-e", "."],
                env)
            (venv / ".build-stamp").write_text(build_stamp)
            attempt = "rebuilt"
        problems = compiled_problems(probe(venv_python, env), list(extensions))
        if not problems:
            log(f"py{version}: every speedup compiled and in use ({', '.join(extensions)})")
            return venv_python
        if attempt == "rebuilt":
            break
        log(f"py{version}: {'; '.join(problems)}: building again")
    raise MatrixError(f"py{version}: the build fell back to Python: {'; '.join(problems)}")


# ------------------------------------------------------------------------------------------ brokers
def broker_command(*args: str) -> list[str]:
    """``python -m mqwire.testing`` on the matrix's own state folder."""
    return [str(HOME_VENV / "bin" / "python"), "-m", "mqwire.testing", "--state-dir", str(STATE_DIR), *args]


class LocalBrokers:
    """Kafka, Pulsar and TubeMQ as local JVMs, started in the background by ``python -m mqwire.testing``."""

    def __init__(self, project: dict[str, Any]) -> None:
        topics = [f"--tubemq-topic={name}:{count}" for name, count in contract_tubemq_topics(project).items()]
        cmd = broker_command("start", "kafka", "pulsar", "tubemq", *topics)
        log("$ " + " ".join(cmd))
        self._started = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)

    def collect(self) -> dict[str, str]:
        """The ``MQWIRE_*`` variables that give pytest's external provider the started brokers."""
        out, _ = self._started.communicate()
        if self._started.returncode != 0:
            raise MatrixError(f"the brokers did not start (exit code {self._started.returncode})")
        status = json.loads(out)
        tubemq = status["brokers"]["tubemq"]
        return external_env(
            status["kafka"],
            status["pulsar"],
            status["pulsar_admin"],
            TubeMQAt(
                status["tubemq"],
                status["tubemq_admin"],
                status["tubemq_broker"],
                tubemq.get("broker_id", 1),
                tubemq.get("auth_token", ""),
            ),
        )

    def stop(self) -> None:
        """Stop the brokers and delete their data (a start cut short is waited for: it could leave brokers the
        state folder does not know yet)."""
        if self._started.poll() is None:
            self._started.wait()
        run(broker_command("stop", "kafka", "pulsar", "tubemq"), check=False)


class ContainerBrokers:
    """Kafka, Pulsar and TubeMQ in containers of the images built here (``--brokers=testcontainers``'s provider),
    started in the background; the engine and the images must be there (``make test-containers`` sees to it)."""

    def __init__(self, project: dict[str, Any]) -> None:
        from mqwire.testing.providers import TestcontainersProvider  # only this mode needs the engine's SDK

        self._provider = TestcontainersProvider(contract_tubemq_topics(project))
        self._endpoints: dict[str, Any] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="matrix-containers", daemon=True)
        log("starting kafka, pulsar and tubemq in containers")
        self._thread.start()

    def _start(self) -> None:
        try:
            self._endpoints = self._provider.get_many(["kafka", "pulsar", "tubemq"])
        except BaseException as error:  # raised in the main thread by collect
            self._error = error

    def collect(self) -> dict[str, str]:
        """The ``MQWIRE_*`` variables that give pytest's external provider the containers' brokers."""
        self._thread.join()
        if self._error is not None:
            raise MatrixError(f"the brokers did not start in containers: {self._error}")
        kafka, pulsar, tubemq = (self._endpoints[name] for name in ("kafka", "pulsar", "tubemq"))
        return external_env(
            kafka.url,
            pulsar.url,
            pulsar.admin_url,
            TubeMQAt(tubemq.url, tubemq.admin_url, tubemq.broker_url or "", tubemq.broker_id, tubemq.auth_token),
        )

    def stop(self) -> None:
        """Remove the containers (a start under way is waited for first)."""
        self._thread.join()
        self._provider.close()


@dataclasses.dataclass(frozen=True)
class TubeMQAt:
    """Where a TubeMQ master and its broker answer."""

    url: str
    admin_url: str
    broker_url: str
    broker_id: int
    auth_token: str


def external_env(kafka: str, pulsar: str, pulsar_admin: str, tubemq: TubeMQAt) -> dict[str, str]:
    """The ``MQWIRE_*`` variables of pytest's external provider for these brokers."""
    return {
        "MQWIRE_BROKERS": "external",
        "MQWIRE_KAFKA_URL": kafka,
        "MQWIRE_PULSAR_URL": pulsar,
        "MQWIRE_PULSAR_ADMIN_URL": pulsar_admin,
        "MQWIRE_TUBEMQ_URL": tubemq.url,
        "MQWIRE_TUBEMQ_ADMIN_URL": tubemq.admin_url,
        "MQWIRE_TUBEMQ_BROKER_URL": tubemq.broker_url,
        "MQWIRE_TUBEMQ_BROKER_ID": str(tubemq.broker_id),
        "MQWIRE_TUBEMQ_AUTH_TOKEN": str(tubemq.auth_token),
    }


def _on_signal(signum: int, frame: types.FrameType | None) -> None:
    # An interrupted run still reaches the finally block that stops the brokers.
    raise SystemExit(128 + signum)


# ------------------------------------------------------------------------------------------ the steps
def pytest_cmd(python: Path, *args: str) -> list[str | Path]:
    """pytest under ``python`` with this repository's settings."""
    return [python, "-m", "pytest", "-p", "no:cacheprovider", *args]


def unit_paths() -> list[str]:
    """The unit tests: tests/unit and the top-level test modules (their integration tests deselected)."""
    return ["tests/unit", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))]


@dataclasses.dataclass(frozen=True)
class Step:
    """One pytest run of the matrix: its name, command and environment."""

    name: str
    cmd: Sequence[str | Path]
    env: Mapping[str, str]


def timed(step: Step) -> Outcome:
    """Run one pytest step, its output kept in build/matrix/logs and printed whole when it ends (steps run
    side by side); exit code 5 (nothing collected) is a failure too."""
    LOGS.mkdir(parents=True, exist_ok=True)
    path = LOGS / (re.sub(r"[^A-Za-z0-9.]+", "-", step.name) + ".log")
    log(f"--- {step.name}: started (" + " ".join(str(c) for c in step.cmd) + ")")
    started = time.monotonic()
    with path.open("w") as out:
        code = subprocess.run(
            [str(c) for c in step.cmd], cwd=ROOT, env=dict(step.env), stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    seconds = time.monotonic() - started
    detail = "" if code == 0 else ("no tests collected" if code == 5 else f"pytest exit code {code}")
    with OUTPUT_LOCK:
        sys.stdout.write(f"\n===== {step.name} =====\n" + path.read_text())
        sys.stdout.flush()
        log(f"--- {step.name}: {'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s (log: {path})")
    return Outcome(step.name, code == 0, seconds, detail)


def contract_topics(step: str) -> dict[str, str]:
    """The variable that gives a contract step its own TubeMQ topics."""
    return {"MQWIRE_CONTRACT_TUBEMQ_SUFFIX": CONTRACT_SUFFIXES[step]}


def run_side_by_side(batch: Sequence[Step]) -> list[Outcome]:
    """Run these steps at the same time: they spend most of their time waiting (on brokers, timeouts and
    subprocesses), not computing, so two cores carry them."""
    with ThreadPoolExecutor(max_workers=max(len(batch), 1)) as pool:
        return list(pool.map(timed, batch))


def steps(
    selected: Sequence[str], project: dict[str, Any], brokers: Callable[[], dict[str, str]], outcomes: list[Outcome]
) -> None:
    """Prepare and run the selected steps into ``outcomes``; ``brokers`` waits for the brokers' variables."""
    pythons: dict[str, Path] = {}
    for version in VERSIONS:
        if f"py{version}" not in selected:
            continue
        started = time.monotonic()
        try:
            pythons[version] = prepare(version, project)
            outcomes.append(Outcome(f"py{version} build", True, time.monotonic() - started))
        except MatrixError as err:
            log(str(err))
            outcomes.append(Outcome(f"py{version} build", False, time.monotonic() - started, str(err)))
    base = without_pure_python(os.environ)
    # The unit tests while the brokers finish starting; then every suite that needs them.
    outcomes += run_side_by_side(
        [Step(f"py{v} unit", pytest_cmd(p, "-m", "not integration", *unit_paths()), base) for v, p in pythons.items()]
    )
    broker_env = brokers()
    with_brokers = [
        Step(
            f"py{v} contract",
            pytest_cmd(p, "tests/contract", *NOT_ON_EVERY_VERSION),
            {**base, **broker_env, **contract_topics(v)},
        )
        for v, p in pythons.items()
    ]
    if "pure" in selected:
        pure_env = {**base, **broker_env, **contract_topics("pure"), "MQWIRE_PURE_PYTHON": "1"}
        python = HOME_VENV / "bin" / "python"
        problems = pure_problems(probe(python, pure_env))
        if problems:
            outcomes.append(Outcome("py3.11 pure-Python switch", False, 0.0, "; ".join(problems)))
        else:
            log("pure: no speedup loaded with MQWIRE_PURE_PYTHON=1")
            name = "py3.11 pure-Python contract + round trips"
            with_brokers.append(Step(name, pytest_cmd(python, "tests/contract", ROUND_TRIPS), pure_env))
    outcomes += run_side_by_side(with_brokers)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the matrix; 0 when every step passed."""
    choices = [f"py{v}" for v in VERSIONS] + ["pure"]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=choices, help="run only these steps (repeatable)")
    parser.add_argument("--keep-brokers", action="store_true", help="leave the local brokers running at the end")
    parser.add_argument(
        "--containers", action="store_true", help="run the brokers in containers of the images built here"
    )
    args = parser.parse_args(argv)
    selected = args.only or choices
    project = pyproject()
    started = time.monotonic()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    outcomes: list[Outcome] = []
    launch: LocalBrokers | ContainerBrokers | None = None
    try:
        launch = ContainerBrokers(project) if args.containers else LocalBrokers(project)
        steps(selected, project, launch.collect, outcomes)
    except MatrixError as err:
        log(str(err))
        outcomes.append(Outcome("matrix", False, 0.0, str(err)))
    finally:
        if launch is not None and not args.keep_brokers:
            launch.stop()
    log(f"=== matrix finished in {time.monotonic() - started:.0f} s")
    for outcome in outcomes:
        status = "passed" if outcome.passed else "FAILED"
        log(f"  {outcome.name:45} {status:7} {outcome.seconds:6.0f} s  {outcome.detail}")
    return 0 if outcomes and all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
