"""``mqwire --loop asyncio|uvloop``: the command runs on the loop asked for (``-v`` logs which), and a missing
uvloop names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mqwire import cli
from mqwire.cli import commands

# Fails inside the command's coroutine, before any connection: the loop has started by then.
FAILS_FAST = ["topics", "create", "kafka://127.0.0.1:9"]


def run_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqwire", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(("loop", "loop_type"), [("uvloop", "uvloop.Loop"), ("asyncio", "asyncio.")])
def test_the_command_runs_on_the_loop_asked_for(loop: str, loop_type: str) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    done = run_command("--loop", loop, "-v", *FAILS_FAST)
    assert done.returncode == commands.USAGE, done.stderr
    assert f"event loop {loop_type}" in done.stderr
    assert "needs at least one topic name" in done.stderr


def test_the_default_loop_is_asyncio() -> None:
    done = run_command("-v", *FAILS_FAST)
    assert "event loop asyncio." in done.stderr
    assert "uvloop" not in done.stderr


def test_a_missing_uvloop_names_the_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now fails as when it is not installed
    assert cli.main(["--loop", "uvloop", *FAILS_FAST]) == commands.USAGE
    err = capsys.readouterr().err
    assert "pip install 'mqwire[uvloop]'" in err
    assert "needs at least one topic name" not in err  # refused before anything ran


def test_an_unknown_loop_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--loop", "trio", *FAILS_FAST])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --loop: invalid choice: 'trio'" in err and "'uvloop'" in err
