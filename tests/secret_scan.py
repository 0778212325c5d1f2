"""The secret scan of a whole test run.

Every password, token and client secret the tests hand to a client is registered with :func:`remember_secret`
(the launcher's Kafka SASL password is registered here). During the run every log record of the packages is
written at DEBUG to a run log, and so is what each test printed or logged and the text of each failure. When the
session ends the run log, every file the tests wrote under their temporary folders, and the log files of the
session's brokers are searched for each secret, as text and base64. A find fails the run and names the file;
the terminal summary says what was searched.

Left out, because they must hold the secrets: the brokers' configuration folders (``conf``) and the launcher's
state files (the servers' own credential stores and command lines), the files a test writes to hand a
secret to a client (marked with :func:`secret_input`), and source files (copies of the project, which holds
the launcher's password as a constant).
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from mqwire.testing.kafka import SASL_PASSWORD
from mqwire.testing.providers import LocalProvider, Provider

PACKAGES = ("mqwire", "kafkawire", "pulsarwire", "tubemqwire", "sparkwire")
# Files this large are message stores, not text a person reads; none of the run's logs come near it.
LARGEST_FILE = 64 * 1024 * 1024
SERVER_CREDENTIAL_FOLDERS = frozenset({"conf", "state"})
# A broker's message store (next to its "logs"): the payloads sent, not text anything printed.
MESSAGE_STORE_FOLDERS = frozenset({"data", "meta"})
SHORTEST_SECRET = 6
# Source files: the copies of the project a packaging test builds from hold the launcher's own SASL password,
# a constant of mqwire.testing.kafka; nothing a run writes as output is source.
SOURCE_SUFFIXES = frozenset({".py", ".pyc", ".c"})

_secrets: set[str] = {SASL_PASSWORD}
_inputs: set[Path] = set()


def remember_secret(value: str | bytes) -> str | bytes:
    """Register ``value`` as a secret the run must not write anywhere; returns it."""
    text = value.decode() if isinstance(value, bytes) else value
    if len(text) < SHORTEST_SECRET:
        raise ValueError(f"a secret of {len(text)} characters would be found by chance; use a longer one")
    _secrets.add(text)
    return value


def secret_input(path: Path) -> Path:
    """Mark a file a test writes to hand a secret to a client (a credentials file): it is where the secret is
    meant to be, so the scan leaves it out. Returns it."""
    _inputs.add(path)
    return path


def _forms(secret: str) -> set[bytes]:
    raw = secret.encode()
    return {raw, base64.b64encode(raw).rstrip(b"="), base64.urlsafe_b64encode(raw).rstrip(b"=")}


class SecretScan:
    """The run log, the folders to search, and what the search found."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="mqwire-secret-scan-"))
        self.run_log = self.folder / "run.log"
        self._handler = logging.FileHandler(self.run_log, encoding="utf-8")
        self._handler.setLevel(logging.DEBUG)
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        self._levels: dict[str, int] = {}
        self.roots: list[Path] = []
        self.files = 0
        self.size = 0
        self.found: list[str] = []
        self.seconds = 0.0
        self.secrets = 0
        self.done = False

    def start(self) -> None:
        for name in PACKAGES:
            logger = logging.getLogger(name)
            self._levels[name] = logger.level
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self._handler)

    def stop(self, keep_run_log: bool = False) -> None:
        """Detach the run log from the loggers; remove it unless ``keep_run_log`` (a find to look into)."""
        for name, level in self._levels.items():
            logger = logging.getLogger(name)
            logger.removeHandler(self._handler)
            logger.setLevel(level)
        self._handler.close()
        if not keep_run_log:
            shutil.rmtree(self.folder, ignore_errors=True)

    def write(self, text: str) -> None:
        self._handler.acquire()
        try:
            self._handler.stream.write(text + "\n")
        finally:
            self._handler.release()

    def _files(self) -> Iterator[Path]:
        yield self.run_log
        for root in self.roots:
            for folder, subfolders, names in os.walk(root):
                skipped = SERVER_CREDENTIAL_FOLDERS | (MESSAGE_STORE_FOLDERS if "logs" in subfolders else set())
                subfolders[:] = [s for s in subfolders if s not in skipped]
                for name in names:
                    path = Path(folder, name)
                    if path.suffix not in SOURCE_SUFFIXES:
                        yield path

    def search(self, secrets: Iterable[str], inputs: Iterable[Path] = ()) -> None:
        """Search every file but ``inputs`` for every secret; remember each find."""
        left_out = {path.resolve() for path in inputs}
        self._handler.flush()
        began = time.monotonic()
        forms = {secret: _forms(secret) for secret in secrets}
        self.secrets = len(forms)
        for path in self._files():
            if path.resolve() in left_out:
                continue
            try:
                if not path.is_file() or path.is_symlink() or path.stat().st_size > LARGEST_FILE:
                    continue
                data = path.read_bytes()
            except OSError:
                continue  # removed meanwhile (a broker still writing its last lines)
            self.files += 1
            self.size += len(data)
            for secret, encodings in forms.items():
                if any(form in data for form in encodings):
                    self.found.append(f"{path}: {secret[:3]}... ({len(secret)} characters)")
        self.seconds = time.monotonic() - began
        self.done = True


_scan_key = pytest.StashKey[SecretScan]()
_running: list[SecretScan] = []  # the session's scan, for the hooks that are given no config


def pytest_configure(config: pytest.Config) -> None:
    scan = SecretScan()
    scan.start()
    config.stash[_scan_key] = scan
    _running.append(scan)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for scan in _running:
        for title, content in report.sections:
            scan.write(f"--- {report.nodeid} {title}\n{content}")
        if report.failed:
            scan.write(f"--- {report.nodeid} failure\n{report.longreprtext}")


@pytest.fixture(scope="session", autouse=True)
def _secret_scan_of_the_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, mqwire_brokers: Provider
) -> Iterator[None]:
    """Searches the run's files when the session ends, before the brokers and their logs go."""
    yield
    scan = request.config.stash[_scan_key]
    scan.roots.append(tmp_path_factory.getbasetemp())
    if isinstance(mqwire_brokers, LocalProvider):
        scan.roots.append(mqwire_brokers.work_root)
    scan.search(_secrets, _inputs)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    scan = session.config.stash.get(_scan_key, None)
    if scan is None:
        return
    scan.stop(keep_run_log=bool(scan.found))
    if scan in _running:
        _running.remove(scan)
    if scan.found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    scan = config.stash.get(_scan_key, None)
    if scan is None or not scan.done:
        return
    line = (
        f"secret scan: {scan.secrets} secrets searched in {scan.files} files "
        f"({scan.size / 1e6:.1f} MB: the run log, the tests' folders, the brokers' logs) in {scan.seconds:.1f} s"
    )
    if scan.found:
        terminalreporter.write_line(f"{line}: FOUND in", red=True)
        for find in scan.found:
            terminalreporter.write_line(f"  {find}", red=True)
    else:
        terminalreporter.write_line(f"{line}: none found", green=True)
