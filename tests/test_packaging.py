"""The built distribution, installed as a user installs it, next to a project with its own ``common`` and
``brokers`` packages.

The sdist and the wheel are built once (``python -m build``: the sdist, then the wheel from it) and kept in
pytest's cache under a digest of the packaged sources, so a later run with unchanged sources skips the
build. Each virtual environment is clean (no system site-packages); pip takes the dependencies from the
package index through its wheel cache (``PIP_CACHE_DIR``). The round trips, the CLI and the pytest plugin run
against the session's real brokers.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
# What the wheel may install at the top of site-packages: the five packages and its own metadata.
TOP_LEVEL = {"kafkawire", "pulsarwire", "tubemqwire", "sparkwire", "mqwire"}
# Deployed at broker start (pyproject's mqwire_tubemq_topics).
TUBEMQ_TOPIC = "packaging"
# Not packaged: what the build would not read anyway, kept out of the digest so that editing a test does
# not rebuild the wheel.
UNPACKAGED = (".ci/", "tests/", "benchmarks/", "examples/", "docs/")
CLI_EXTRA_HINT = "pip install 'mqwire[cli]'"


@dataclass(frozen=True)
class Dist:
    """The built sdist and wheel."""

    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Venv:
    """A virtual environment with the wheel installed, and the environment to run its programs in."""

    path: Path
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def run(self, args: Sequence[str], cwd: Path, *, timeout: float = 120, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=cwd, env={**self.env, **(env or {})}, input=stdin, capture_output=True, text=True,
            timeout=timeout, check=False,
        )


def _source_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()
    return sorted(
        name for name in listed.split("\0")
        if name and not name.startswith(UNPACKAGED) and os.path.lexists(ROOT / name)
    )


def _digest(files: list[str]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for name in files:
        path = ROOT / name
        digest.update(name.encode() + b"\0")
        digest.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return digest.hexdigest()[:20]


def _build(files: list[str], work: Path, out: Path) -> None:
    # A copy of the packaged files, so that the build neither writes into the work tree nor picks up a stale
    # build/ folder there; symbolic links (mqwire/common, mqwire/testing) are copied as links.
    source = work / "src"
    for name in files:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target, follow_symlinks=False)
    # --no-isolation: the build tools of this environment (setuptools, build) instead of downloading them.
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert result.returncode == 0, f"python -m build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"


@pytest.fixture(scope="session")
def dist(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and the wheel of the current sources, from the cache when the sources are unchanged."""
    files = _source_files()
    key = _digest(files)
    cache = pytestconfig.cache
    root = cache.mkdir("mqwire-dist") if cache is not None else tmp_path_factory.mktemp("mqwire-dist")
    out = root / key
    if not out.exists():
        staging = tmp_path_factory.mktemp("dist")
        _build(files, tmp_path_factory.mktemp("build"), staging)
        for old in root.iterdir():  # builds of earlier sources
            if old.name != key:
                shutil.rmtree(old, ignore_errors=True)
        # Copied next to its final place, then renamed: another session building the same sources at the
        # same time finds either nothing or a complete folder.
        partial = root / f"{key}.partial-{uuid.uuid4().hex[:8]}"
        shutil.copytree(staging, partial)
        try:
            partial.rename(out)
        except OSError:  # the other session was first
            shutil.rmtree(partial, ignore_errors=True)
    (wheel,) = out.glob("mqwire-*.whl")
    (sdist,) = out.glob("mqwire-*.tar.gz")
    return Dist(sdist, wheel)


def _clean_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MQWIRE_", "VIRTUAL_ENV", "PYTEST"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # pip's wheel cache, kept between runs (pip's default place unless the caller chose one).
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    return env


def _make_venv(where: Path, requirement: str) -> Venv:
    # A clean environment: nothing from this one (no --system-site-packages).
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=120)
    venv = Venv(where, _clean_env(where))
    result = venv.run([venv.bin("python"), "-m", "pip", "install", "--quiet", requirement], where, timeout=300)
    assert result.returncode == 0, f"pip install {requirement} failed:\n{result.stdout}\n{result.stderr}"
    return venv


@pytest.fixture(scope="session")
def base_venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel without extras: the three clients."""
    return _make_venv(tmp_path_factory.mktemp("venv-base") / "venv", str(dist.wheel))


@pytest.fixture(scope="session")
def full_venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel with the ``cli`` and ``testing`` extras."""
    return _make_venv(tmp_path_factory.mktemp("venv-full") / "venv", f"{dist.wheel}[cli,testing]")


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project with its own ``common`` and ``brokers`` packages, the names mqwire must not take."""
    project = tmp_path_factory.mktemp("app")
    for package in ("common", "brokers"):
        (project / package).mkdir()
        (project / package / "__init__.py").write_text(f'OWNER = "app"\nNAME = "{package}"\n')
    (project / "round_trip.py").write_text(ROUND_TRIP)
    return project


ROUND_TRIP = '''
"""One message through one system, with the contract API only; the app's own packages stay its own."""
import asyncio
import importlib
import sys
import uuid

import brokers
import common

import kafkawire
import pulsarwire
import tubemqwire

assert (common.OWNER, brokers.OWNER) == ("app", "app"), "the app's packages were shadowed"
for module in (kafkawire, pulsarwire, tubemqwire):
    assert module.__file__ is not None and module.__file__.startswith(sys.prefix), module.__file__
system, url, topic = sys.argv[1:4]
client_module = importlib.import_module(system + "wire")
value = uuid.uuid4().hex.encode()


async def main() -> None:
    async with client_module.connect(url) as client:
        async with client.producer(topic) as producer:
            await producer.send(value, key=b"k")
        async with client.consumer(topic, group="packaging-" + uuid.uuid4().hex[:8], start="earliest") as consumer:
            # A reused topic (TubeMQ's are deployed once) may hold earlier runs' messages: read up to ours,
            # acknowledging as we go (TubeMQ fetches a partition's next batch once the last one is confirmed).
            while True:
                message = await consumer.receive(timeout=30)
                await consumer.ack(message)
                if message.value == value:
                    break
    assert message.key == b"k", message.key
    print("round trip", system, "ok")


asyncio.run(main())
'''


def test_wheel_installs_no_generic_top_level_name(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
    # The files as `unzip -l` lists them (zipfile's list where unzip is not installed).
    if shutil.which("unzip"):
        listed = subprocess.run(["unzip", "-l", str(dist.wheel)], capture_output=True, text=True, check=True).stdout
        assert all(f"   {name}\n" in listed for name in names)
        names = [line.split()[-1] for line in listed.splitlines()[3:-2]]
    top = {name.split("/", 1)[0] for name in names}
    info = {t for t in top if t.endswith(".dist-info")}
    assert len(info) == 1, top
    assert top - info == TOP_LEVEL, f"unexpected top-level names: {sorted(top - info - TOP_LEVEL)}"
    assert any(name.startswith("mqwire/common/") for name in names)
    assert any(name.startswith("mqwire/testing/maven/") for name in names)


def test_wheel_metadata(dist: Dist) -> None:
    import mqwire

    with zipfile.ZipFile(dist.wheel) as wheel:
        (info,) = {name.split("/", 1)[0] for name in wheel.namelist() if ".dist-info/" in name}
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        licence = wheel.read(f"{info}/licenses/LICENSE").decode()
    fields = [line.split(": ", 1) for line in metadata.split("\n\n", 1)[0].splitlines() if ": " in line]
    assert ["Version", mqwire.__version__] in fields
    assert ["License-Expression", "Apache-2.0"] in fields
    assert "Apache License" in licence and "Version 2.0" in licence
    base = {value.split(";")[0] for name, value in fields if name == "Requires-Dist" and "extra ==" not in value}
    base_names = {requirement.split("<")[0].split(">")[0].split("=")[0].strip() for requirement in base}
    assert base_names == {"anyio", "protobuf", "crc32c", "lz4", "zstandard", "cramjam"}
    extras = {value for name, value in fields if name == "Provides-Extra"}
    assert extras == {
        "avro", "cli", "crypto", "json", "kerberos", "otel", "spark", "telemetry", "testing", "uvloop", "dev"
    }
    testcontainers = [value for name, value in fields if name == "Requires-Dist" and value.startswith("testcontainers")]
    assert testcontainers and all('extra == "dev"' in value for value in testcontainers)
    anyio = [value for name, value in fields if name == "Requires-Dist" and value.startswith("anyio")]
    assert anyio and not any("extra ==" in value for value in anyio), "the blocking API needs anyio everywhere"
    assert "[pytest11]\nmqwire.testing.pytest_plugin = mqwire.testing.pytest_plugin" in entry_points
    assert "mqwire = mqwire.cli:main" in entry_points


def test_twine_check(dist: Dist) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_installed_version_is_the_one_version(base_venv: Venv, app: Path) -> None:
    import mqwire

    script = "import importlib.metadata, mqwire; print(mqwire.__version__, importlib.metadata.version('mqwire'))"
    result = base_venv.run([base_venv.bin("python"), "-c", script], app)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [mqwire.__version__, mqwire.__version__]


@pytest.mark.parametrize("system", ["kafka", "pulsar", "tubemq"])
def test_round_trip_from_the_wheel_next_to_an_app_with_common_and_brokers(
    system: str,
    base_venv: Venv,
    app: Path,
    kafka_broker: KafkaBroker,
    pulsar_broker: PulsarBroker,
    tubemq_broker: TubeMQBroker,
) -> None:
    url, topic = {
        "kafka": (kafka_broker.url, f"packaging-{uuid.uuid4().hex[:8]}"),
        "pulsar": (pulsar_broker.url, f"persistent://public/default/packaging-{uuid.uuid4().hex[:8]}"),
        "tubemq": (tubemq_broker.url, TUBEMQ_TOPIC),
    }[system]
    result = base_venv.run([base_venv.bin("python"), "round_trip.py", system, url, topic], app, timeout=150)
    assert result.returncode == 0, f"{system} round trip failed:\n{result.stdout}\n{result.stderr[-6000:]}"
    assert f"round trip {system} ok" in result.stdout


def test_cli_without_the_extra_names_it(base_venv: Venv, app: Path) -> None:
    rich = base_venv.run([base_venv.bin("python"), "-c", "import rich"], app)
    assert rich.returncode != 0, "rich is installed without the cli extra"
    imported = base_venv.run([base_venv.bin("python"), "-c", "import mqwire.cli"], app)
    assert imported.returncode != 0
    assert CLI_EXTRA_HINT in imported.stderr, imported.stderr
    command = base_venv.run([base_venv.bin("mqwire"), "--help"], app)
    assert command.returncode != 0
    assert CLI_EXTRA_HINT in command.stderr, command.stderr


def test_cli_from_the_wheel(full_venv: Venv, app: Path, kafka_broker: KafkaBroker) -> None:
    mqwire = full_venv.bin("mqwire")
    helped = full_venv.run([mqwire, "--help"], app)
    assert helped.returncode == 0, helped.stderr
    assert all(command in helped.stdout for command in ("produce", "consume", "topics", "groups", "bench"))
    topic = f"packaging-cli-{uuid.uuid4().hex[:8]}"
    produced = full_venv.run([mqwire, "produce", kafka_broker.url, topic, "--key", "k", "--quiet"], app,
                             stdin="first\nsecond\n")
    assert produced.returncode == 0, produced.stderr
    consumed = full_venv.run(
        [mqwire, "consume", kafka_broker.url, topic, "--from", "earliest", "--count", "2", "--quiet",
         "--format", "{key} {value}"],
        app,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["k first", "k second"]


USER_TESTS = '''
"""A user's own tests: the brokers come from the mqwire plugin, nothing in this project starts them."""
import asyncio
import sys

import brokers
import common

import kafkawire
import pulsarwire
import tubemqwire


async def _send(module, url, topic):
    async with module.connect(url) as client:
        async with client.producer(topic) as producer:
            return await producer.send(b"from the user's tests", key=b"k")


def test_own_packages_kept():
    assert (common.OWNER, brokers.OWNER) == ("app", "app")
    for module in (kafkawire, pulsarwire, tubemqwire):
        assert module.__file__.startswith(sys.prefix), module.__file__


def test_kafka(kafka_broker, topic):
    assert asyncio.run(_send(kafkawire, kafka_broker.url, topic)).topic == topic


def test_pulsar(pulsar_broker, topic):
    assert asyncio.run(_send(pulsarwire, pulsar_broker.url, topic)).topic.endswith(topic)


def test_tubemq(tubemq_broker, tubemq_topic):
    assert asyncio.run(_send(tubemqwire, tubemq_broker.url, tubemq_topic)).topic == tubemq_topic
'''


@pytest.fixture
def user_project(app: Path, tmp_path: Path) -> Iterator[Path]:
    """The app with its tests: the example conftest, an ini naming its TubeMQ topic, one test per system."""
    project = tmp_path / "project"
    shutil.copytree(app, project)
    (project / "tests").mkdir()
    shutil.copy(ROOT / "examples" / "testing_conftest.py", project / "tests" / "conftest.py")
    (project / "tests" / "test_user.py").write_text(USER_TESTS)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
            [tool.pytest.ini_options]
            mqwire_tubemq_topics = "{TUBEMQ_TOPIC}:1"
            pythonpath = ["."]
            """)
    )
    yield project


def test_plugin_loads_by_entry_point(full_venv: Venv, tmp_path: Path) -> None:
    # A folder with no conftest and no ini: the fixtures can only come from the installed entry point.
    listed = full_venv.run([full_venv.bin("python"), "-m", "pytest", "--fixtures", "-p", "no:cacheprovider"], tmp_path)
    assert "fixtures defined from mqwire.testing.pytest_plugin" in listed.stdout, listed.stdout + listed.stderr
    for fixture in ("kafka_broker", "pulsar_broker", "tubemq_broker", "broker_urls"):
        assert f"\n{fixture} [session scope]" in listed.stdout


def test_plugin_gives_a_users_tests_the_brokers(
    full_venv: Venv,
    user_project: Path,
    kafka_broker: KafkaBroker,
    pulsar_broker: PulsarBroker,
    tubemq_broker: TubeMQBroker,
) -> None:
    # The session's brokers, handed over as external ones: starting three more JVMs would cost minutes.
    env = {
        "MQWIRE_KAFKA_URL": kafka_broker.url,
        "MQWIRE_PULSAR_URL": pulsar_broker.url,
        "MQWIRE_PULSAR_ADMIN_URL": pulsar_broker.admin_url,
        "MQWIRE_TUBEMQ_URL": tubemq_broker.url,
        "MQWIRE_TUBEMQ_ADMIN_URL": tubemq_broker.admin_url,
    }
    if tubemq_broker.broker_url:
        env["MQWIRE_TUBEMQ_BROKER_URL"] = tubemq_broker.broker_url
    started = time.monotonic()
    result = full_venv.run(
        [full_venv.bin("python"), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--brokers=external", "tests"],
        user_project, env=env, timeout=240,
    )
    report = f"{result.stdout[-6000:]}\n{result.stderr[-3000:]}\n({time.monotonic() - started:.1f} s)"
    assert result.returncode == 0, report
    last = result.stdout.strip().splitlines()[-1]
    assert "4 passed" in last and "skipped" not in last, report
