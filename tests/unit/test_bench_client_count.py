"""The Spark-versus-client benchmarks' plain-client read: every message counted (and acknowledged where the
system wants it), a short topic a clear failure."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from spark_versus_client import client_count


def _batches(*sizes: int) -> Any:
    batches = [[SimpleNamespace(value=b"v" * 3) for _ in range(n)] for n in sizes]

    async def getmany(timeout: float) -> Sequence[Any]:
        return batches.pop(0) if batches else []

    return getmany


async def test_every_message_is_counted_and_acknowledged() -> None:
    acked: list[Any] = []

    async def ack(message: Any) -> None:
        acked.append(message)

    await client_count(_batches(2, 3), 5, 3, ack)
    assert len(acked) == 5


async def test_without_ack_only_counts() -> None:
    await client_count(_batches(4, 1), 5, 3)


async def test_a_topic_that_runs_dry_fails() -> None:
    with pytest.raises(SystemExit, match="stopped after 2 of 5"):
        await client_count(_batches(2), 5, 3)


async def test_bytes_that_do_not_add_up_fail() -> None:
    with pytest.raises(SystemExit, match="15 bytes"):
        await client_count(_batches(5), 5, 4)
