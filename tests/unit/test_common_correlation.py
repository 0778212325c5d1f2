"""The correlation table: resolution, timeouts, connection loss, late and unknown responses."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mqwire.common.correlation import CorrelationTable
from mqwire.common.errors import ConnectionLostError, RequestTimeoutError


async def test_resolve_matches_by_id() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    first, second = table.next_id(), table.next_id()
    f1, f2 = table.register(first, 5), table.register(second, 5)
    assert table.resolve(second, "two")
    assert table.resolve(first, "one")
    assert (await f1, await f2) == ("one", "two")
    assert len(table) == 0


async def test_timeout_fails_only_that_request() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    quick, slow = table.register(1, 0.01), table.register(2, 5)
    with pytest.raises(RequestTimeoutError):
        await quick
    assert 2 in table and 1 not in table
    table.resolve(2, "ok")
    assert await slow == "ok"


async def test_fail_all_fails_every_pending_request() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    futures = [table.register(i, None) for i in range(5)]
    assert table.fail_all(ConnectionLostError("gone")) == 5
    for future in futures:
        with pytest.raises(ConnectionLostError):
            await future
    assert len(table) == 0


async def test_late_and_unknown_responses_are_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    future = table.register(1, 0.01)
    with pytest.raises(RequestTimeoutError):
        await future
    with caplog.at_level(logging.DEBUG):
        assert not table.resolve(1, "late")
        assert not table.resolve(99, "unknown")
    assert [r.levelname for r in caplog.records] == ["DEBUG", "WARNING"]
    assert "abandoned request id 1" in caplog.records[0].message
    assert "unknown request id 99" in caplog.records[1].message


async def test_cancelled_waiter_leaves_no_entry() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    future = table.register(1, None)
    future.cancel()
    await asyncio.sleep(0)
    assert len(table) == 0


async def test_ids_wrap_and_skip_pending() -> None:
    table: CorrelationTable[str] = CorrelationTable("t", first_id=2**31 - 1)
    assert table.next_id() == 2**31 - 1
    table.register(0, None)
    assert table.next_id() == 1
    with pytest.raises(ValueError):
        table.register(0, None)


async def test_a_shorter_timeout_registered_later_still_fires_first() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    slow = table.register(1, 5)
    quick = table.register(2, 0.02)
    with pytest.raises(RequestTimeoutError):
        await asyncio.wait_for(quick, 1)
    assert not slow.done() and 1 in table


async def test_answered_requests_do_not_pile_up_under_steady_traffic() -> None:
    table: CorrelationTable[int] = CorrelationTable("t")
    keep = table.register(table.next_id(), 30)  # one request always pending: the table never empties
    for _ in range(20_000):
        request_id = table.next_id()
        table.register(request_id, 30)
        table.resolve(request_id, 0)
    assert len(table._deadlines) < 5_000
    table.resolve(next(iter(table._entries)), 1)
    assert await keep == 1


async def test_an_idle_table_keeps_no_timer() -> None:
    table: CorrelationTable[str] = CorrelationTable("t")
    future = table.register(1, 5)
    table.resolve(1, "x")
    assert await future == "x"
    assert table._sweeper is None and not table._deadlines
