"""The transaction state machine against a scripted coordinator: states, retries, fencing and epoch bumps."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from kafkawire import errors
from kafkawire.transaction import FAILED, IN_TRANSACTION, READY, TransactionManager

CONCURRENT_TRANSACTIONS = 51
PRODUCER_FENCED = 90


class Identity:
    def __init__(self) -> None:
        self.producer_id = 7
        self.producer_epoch = 3
        self.restarts: list[tuple[int, int]] = []

    def restart(self, producer_id: int, producer_epoch: int) -> None:
        self.restarts.append((producer_id, producer_epoch))
        self.producer_id, self.producer_epoch = producer_id, producer_epoch


class Coordinator:
    """Answers each request with the next scripted answer for its API."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.requests: list[Any] = []
        self.forgotten = 0

    async def coordinator(self, key: str, key_type: int) -> int:
        assert key_type == 1
        return 0

    async def connection_to(self, node: int) -> Coordinator:
        return self

    def version_for(self, api_key: int, at_most: int | None = None) -> int:
        return 0

    async def request(self, body: Any, version: int | None = None) -> Any:
        self.requests.append(body)
        return self.answers.pop(0)

    def forget_coordinator(self, key: str, key_type: int) -> None:
        self.forgotten += 1


def end_txn_answer(error_code: int = 0, producer_id: int = -1, producer_epoch: int = -1) -> SimpleNamespace:
    return SimpleNamespace(error_code=error_code, producer_id=producer_id, producer_epoch=producer_epoch)


def manager(coordinator: Coordinator, identity: Identity | None = None) -> TransactionManager:
    wake: Callable[[], None] = lambda: None  # noqa: E731
    return TransactionManager(coordinator, "txn", 5_000, identity or Identity(), wake)  # type: ignore[arg-type]


async def no_flush() -> None:
    return None


def test_sends_are_refused_outside_a_transaction() -> None:
    txn = manager(Coordinator([]))
    with pytest.raises(errors.InvalidTxnStateError):
        txn.check_send()
    txn.begin()
    txn.check_send()
    with pytest.raises(errors.InvalidTxnStateError):
        txn.begin()


async def test_an_abort_without_records_still_ends_the_transaction_and_returns_to_ready() -> None:
    coordinator = Coordinator([end_txn_answer()])
    txn = manager(coordinator)
    txn.begin()
    assert txn.state == IN_TRANSACTION
    await txn.end(False, no_flush)
    assert txn.state == READY
    assert [r.committed for r in coordinator.requests] == [False]


async def test_a_commit_without_records_or_offsets_sends_nothing() -> None:
    coordinator = Coordinator([])
    txn = manager(coordinator)
    txn.begin()
    await txn.end(True, no_flush)
    assert txn.state == READY and coordinator.requests == []


async def test_concurrent_transactions_is_retried_until_the_coordinator_accepts() -> None:
    coordinator = Coordinator([end_txn_answer(CONCURRENT_TRANSACTIONS), end_txn_answer(CONCURRENT_TRANSACTIONS),
                               end_txn_answer()])
    txn = manager(coordinator)
    txn.begin()
    await asyncio.wait_for(txn.end(False, no_flush), 10)
    assert len(coordinator.requests) == 3 and txn.state == READY


async def test_fencing_makes_the_producer_unusable_with_the_named_error() -> None:
    coordinator = Coordinator([end_txn_answer(PRODUCER_FENCED)])
    txn = manager(coordinator)
    txn.begin()
    with pytest.raises(errors.ProducerFencedError):
        await txn.end(False, no_flush)
    assert txn.state == FAILED
    with pytest.raises(errors.ProducerFencedError):
        txn.begin()
    with pytest.raises(errors.ProducerFencedError):
        txn.check_send()


async def test_an_epoch_bumped_by_end_txn_is_used_from_then_on() -> None:
    identity = Identity()
    coordinator = Coordinator([end_txn_answer(0, producer_id=7, producer_epoch=4)])
    txn = manager(coordinator, identity)
    txn.begin()
    await txn.end(False, no_flush)
    assert identity.restarts == [(7, 4)] and identity.producer_epoch == 4


async def test_a_failed_flush_fails_the_transaction() -> None:
    txn = manager(Coordinator([]))
    txn.begin()

    async def flush() -> None:
        txn.fail(errors.InvalidProducerEpochError("epoch"))

    with pytest.raises(errors.InvalidProducerEpochError):
        await txn.end(True, flush)
    assert txn.state == FAILED


async def test_send_offsets_needs_a_group_id_or_group_metadata() -> None:
    txn = manager(Coordinator([]))
    txn.begin()
    with pytest.raises(TypeError, match="group"):
        await txn.send_offsets({}, object())  # type: ignore[arg-type]
