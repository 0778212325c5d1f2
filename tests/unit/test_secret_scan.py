"""The run's secret scan (tests/secret_scan.py) finds a secret wherever a run could write it, in clear and in
base64, and leaves out only the servers' credential stores, message stores and declared input files."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from tests.secret_scan import SecretScan, remember_secret

SECRET = "scan-check-7f3a91c2"  # never registered with the session's own scan


def scan_of(root: Path, inputs: tuple[Path, ...] = ()) -> SecretScan:
    scan = SecretScan()
    scan.roots.append(root)
    scan.search([SECRET], inputs)
    scan.stop()
    return scan


def test_a_secret_in_any_file_is_found_in_clear_and_in_base64(tmp_path: Path) -> None:
    (tmp_path / "spark" / "plans").mkdir(parents=True)
    (tmp_path / "spark" / "plans" / "plan.txt").write_text(f"options: password={SECRET}")
    (tmp_path / "header.bin").write_bytes(b"Basic " + base64.b64encode(SECRET.encode()))
    (tmp_path / "clean.log").write_text("nothing to see")
    found = scan_of(tmp_path).found
    assert any("plan.txt" in find for find in found)
    assert any("header.bin" in find for find in found)
    assert not any("clean.log" in find for find in found)
    assert all(SECRET not in find for find in found), "the report itself must not show the secret"


def test_a_logged_secret_is_found_in_the_run_log(tmp_path: Path) -> None:
    scan = SecretScan()
    scan.start()
    try:
        logging.getLogger("kafkawire.checked").debug("connecting with %s", SECRET)
        scan.search([SECRET])
    finally:
        scan.stop()
    assert [find for find in scan.found if "run.log" in find]


def test_credential_stores_message_stores_and_inputs_are_left_out(tmp_path: Path) -> None:
    broker = tmp_path / "broker"
    for folder in ("conf", "state", "logs", "data", "meta"):
        (broker / folder).mkdir(parents=True)
        (broker / folder / "file").write_text(SECRET)
    (tmp_path / "credentials.json").write_text(SECRET)
    (tmp_path / "data").mkdir()  # a "data" folder that is not a broker's store is searched
    (tmp_path / "data" / "out.txt").write_text(SECRET)
    found = scan_of(tmp_path, inputs=(tmp_path / "credentials.json",)).found
    assert sorted(Path(find.split(":")[0]).relative_to(tmp_path).as_posix() for find in found) == [
        "broker/logs/file",
        "data/out.txt",
    ]


def test_a_secret_short_enough_to_be_found_by_chance_is_refused() -> None:
    with pytest.raises(ValueError, match="by chance"):
        remember_secret("abc")


def test_source_files_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "build" / "src").mkdir(parents=True)
    (tmp_path / "build" / "src" / "kafka.py").write_text(f'PASSWORD = "{SECRET}"')
    (tmp_path / "build" / "out.log").write_text(SECRET)
    found = scan_of(tmp_path).found
    assert [Path(find.split(":")[0]).name for find in found] == ["out.log"]
