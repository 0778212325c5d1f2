"""Transactions over the transaction coordinator: sends and acknowledgements committed or aborted together.

``txn = await client.transaction(timeout_ms=60_000)`` asks a coordinator for a new transaction (NEW_TXN);
``producer.send(..., transaction=txn)`` first registers the partition (ADD_PARTITION_TO_TXN) and
``consumer.ack(message, transaction=txn)`` the subscription (ADD_SUBSCRIPTION_TO_TXN); ``commit()`` waits
for those sends and acknowledgements, then ends the transaction (END_TXN). Consumers see the messages of
a transaction only once it is committed, and never those of an aborted one.

The coordinators are the partitions of ``pulsar/system/transaction_coordinator_assign``; coordinator ``n``
lives where partition ``n`` is served, reached with a TC_CLIENT_CONNECT on that connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import Any

from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.options import check_int_range
from pulsarwire import errors
from pulsarwire.connection import PulsarConnection
from pulsarwire.errors import TransactionError, TransactionTimeoutError
from pulsarwire.protocol.commands import unwrap, wrap
from pulsarwire.protocol.pulsar_api_pb2 import (
    CommandAddPartitionToTxn,
    CommandAddSubscriptionToTxn,
    CommandEndTxn,
    CommandNewTxn,
    CommandTcClientConnectRequest,
    Subscription,
    TxnAction,
)
from pulsarwire.session import Session

__all__ = ["Transaction", "TransactionCoordinators"]

log = logging.getLogger(__name__)

ASSIGN_TOPIC = "persistent://pulsar/system/transaction_coordinator_assign"


class TransactionCoordinators:
    """The coordinators of a session: how many there are, a connection to each, and the requests to them."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._count: int | None = None
        self._next = itertools.count()
        # Connections already told which coordinator they talk to (TC_CLIENT_CONNECT), per coordinator.
        self._connected: dict[int, PulsarConnection] = {}

    async def _coordinator(self, tc_id: int) -> PulsarConnection:
        connection = await self._session.connection_for(f"{ASSIGN_TOPIC}-partition-{tc_id}")
        if self._connected.get(tc_id) is not connection or connection.closed:
            await self._ask(connection, CommandTcClientConnectRequest(tc_id=tc_id))
            self._connected[tc_id] = connection
        return connection

    async def _ask(self, connection: PulsarConnection, body: Any) -> Any:
        request_id = connection.next_request_id()
        body.request_id = request_id
        frame = await connection.request(wrap(body), request_id, self._session.operation_timeout)
        _, response = unwrap(frame.command)
        if response.HasField("error"):
            raise errors.error_for(response.error, response.message)
        return response

    async def _on(self, tc_id: int, body: Any, what: str) -> Any:
        async def attempt() -> Any:
            return await self._ask(await self._coordinator(tc_id), body)

        return await self._session.retrying(attempt, what)

    async def new_txn(self, timeout_ms: int) -> tuple[int, int]:
        """A new transaction on the next coordinator: (most significant bits = coordinator, least)."""
        if self._count is None:
            self._count = await self._session.partitions_for(ASSIGN_TOPIC)
            if self._count == 0:
                raise TransactionError("the cluster has no transaction coordinator "
                                       "(transactionCoordinatorEnabled=true on the brokers)")
        tc_id = next(self._next) % self._count
        response = await self._on(tc_id, CommandNewTxn(tc_id=tc_id, txn_ttl_millis=timeout_ms),
                                  "new transaction")
        return int(response.txnid_most_bits), int(response.txnid_least_bits)

    async def add_partition(self, txn: tuple[int, int], topic: str) -> None:
        """Tell the coordinator that ``txn`` writes to ``topic`` (a partition's complete name)."""
        most, least = txn
        body = CommandAddPartitionToTxn(txnid_most_bits=most, txnid_least_bits=least, partitions=[topic])
        await self._on(most, body, f"add {topic} to a transaction")

    async def add_subscription(self, txn: tuple[int, int], topic: str, subscription: str) -> None:
        """Tell the coordinator that ``txn`` acknowledges on ``subscription`` of ``topic``."""
        most, least = txn
        body = CommandAddSubscriptionToTxn(
            txnid_most_bits=most, txnid_least_bits=least,
            subscription=[Subscription(topic=topic, subscription=subscription)],
        )
        await self._on(most, body, f"add subscription {subscription} to a transaction")

    async def end(self, txn: tuple[int, int], commit: bool) -> None:
        """Commit or abort ``txn`` (END_TXN)."""
        most, least = txn
        body = CommandEndTxn(txnid_most_bits=most, txnid_least_bits=least,
                             txn_action=TxnAction.COMMIT if commit else TxnAction.ABORT)
        await self._on(most, body, "commit" if commit else "abort")


class Transaction:
    """One transaction: ``async with await client.transaction(timeout_ms=...) as txn`` (commits on a normal
    exit, aborts on an exception), or ``commit()`` / ``abort()`` by hand.

    ``txn_id`` is (most significant bits, least significant bits), as the Java client's ``TxnID``; ``state``
    is ``"open"``, ``"committing"``, ``"committed"``, ``"aborting"``, ``"aborted"`` or ``"error"``.
    """

    def __init__(self, coordinators: TransactionCoordinators, timeout_ms: int) -> None:
        self._coordinators = coordinators
        self.timeout_ms = check_int_range("timeout_ms", timeout_ms, 1000, 1 << 40)
        self.txn_id: tuple[int, int] | None = None
        self.state = "new"
        self._deadline = 0.0
        self._partitions: dict[str, asyncio.Future[None]] = {}
        self._subscriptions: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._registrations = OwnedTasks("Pulsar transaction")
        # Sends and acknowledgements made in the transaction: commit waits for them.
        self._operations: list[asyncio.Future[Any]] = []

    def __await__(self) -> Generator[Any, None, Transaction]:
        return self._begin().__await__()

    async def _begin(self) -> Transaction:
        if self.state == "new":
            self.state = "opening"
            self.txn_id = await self._coordinators.new_txn(self.timeout_ms)
            self._deadline = time.monotonic() + self.timeout_ms / 1000
            self.state = "open"
        return self

    async def __aenter__(self) -> Transaction:
        return await self._begin()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.state != "open":
            return
        if exc is None:
            await self.commit()
        else:
            await self.abort()

    def __repr__(self) -> str:
        return f"Transaction(txn_id={self.txn_id!r}, state={self.state!r})"

    def check_open(self) -> tuple[int, int]:
        """The transaction id; raises TransactionError unless open, TransactionTimeoutError once timed out."""
        if self.state != "open" or self.txn_id is None:
            raise TransactionError(f"transaction {self.txn_id} is {self.state}")
        if time.monotonic() >= self._deadline:
            raise TransactionTimeoutError(f"transaction {self.txn_id} timed out after {self.timeout_ms} ms")
        return self.txn_id

    async def register_partition(self, topic: str) -> tuple[int, int]:
        """Add ``topic`` to the transaction (once); the id to send with."""
        txn = self.check_open()
        await self._once(self._partitions, topic, lambda: self._coordinators.add_partition(txn, topic))
        return txn

    async def register_subscription(self, topic: str, subscription: str) -> tuple[int, int]:
        """Add ``subscription`` on ``topic`` to the transaction (once); the id to acknowledge with."""
        txn = self.check_open()
        await self._once(self._subscriptions, (topic, subscription),
                         lambda: self._coordinators.add_subscription(txn, topic, subscription))
        return txn

    async def _once(
        self, done: dict[Any, asyncio.Future[None]], key: Any, call: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        future = done.get(key)
        if future is None or (future.done() and future.exception() is not None):
            future = done[key] = self._registrations.spawn(call(), name="registration", awaited=True)
        await asyncio.shield(future)

    def track(self, operation: asyncio.Future[Any]) -> None:
        """Remember a send or acknowledgement: commit waits for it and fails if it failed."""
        self._operations.append(operation)

    async def commit(self) -> None:
        """Wait for the transaction's sends and acknowledgements, then commit it; aborts if one of them failed.

        Raises TransactionTimeoutError when the transaction outlived its timeout (the coordinator aborted it).
        """
        self.check_open()
        self.state = "committing"
        results = await asyncio.gather(*self._operations, return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            self.state = "open"
            await self.abort()
            raise TransactionError(f"transaction {self.txn_id} aborted: an operation in it failed: {failed}") \
                from failed
        assert self.txn_id is not None
        try:
            await self._coordinators.end(self.txn_id, commit=True)
        except (errors.InvalidTxnStatusError, errors.TransactionNotFoundError) as exc:
            self.state = "error"
            if time.monotonic() >= self._deadline:
                raise TransactionTimeoutError(f"transaction {self.txn_id} timed out after {self.timeout_ms} ms "
                                              "and was aborted by its coordinator") from exc
            raise
        except BaseException:
            self.state = "error"
            raise
        self.state = "committed"

    async def abort(self) -> None:
        """Abort the transaction: its messages are never delivered and its acknowledgements are undone."""
        if self.state != "open" or self.txn_id is None:
            raise TransactionError(f"transaction {self.txn_id} is {self.state}")
        self.state = "aborting"
        await asyncio.gather(*self._operations, return_exceptions=True)
        try:
            await self._coordinators.end(self.txn_id, commit=False)
        except (errors.InvalidTxnStatusError, errors.TransactionNotFoundError):
            # Already aborted by the coordinator (timed out): the outcome asked for.
            log.debug("transaction %s was already ended by its coordinator", self.txn_id)
        except BaseException:
            self.state = "error"
            raise
        self.state = "aborted"
