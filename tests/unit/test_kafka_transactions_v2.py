"""Transaction versions 1 and 2 (KIP-890 part 2) through the real sender and transaction manager, sans IO.

One fake broker is leader, transaction coordinator and group coordinator; it records the API key and version
of every request, so the tests read what would have gone on the wire.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkawire import errors
from kafkawire.accumulator import Accumulator
from kafkawire.metadata import BrokerNode, ClusterMetadata, PartitionInfo, TopicPartition
from kafkawire.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
    EndTxnResponse,
    InitProducerIdResponse,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kafkawire.sender import Sender, SenderConfig
from kafkawire.telemetry.measures import ClientMeasures
from kafkawire.transaction import READY, TransactionManager, transaction_version
from kafkawire.waker import Waker
from mqwire.common.errors import UnsupportedVersionError

PRODUCE, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 0, 24, 25, 26, 28
TRANSACTION_ABORTABLE = 120
# What a Kafka 4.x broker offers.
BROKER_VERSIONS = {22: (0, 5), PRODUCE: (3, 13), ADD_PARTITIONS: (0, 5), ADD_OFFSETS: (0, 4), END_TXN: (0, 5),
                   TXN_OFFSET_COMMIT: (0, 5)}


class Broker:
    """Leader of t-0 and t-1 and every coordinator; answers by API key and records (key, version)."""

    def __init__(self, transaction_version: int, broker_versions: dict[int, tuple[int, int]] | None = None) -> None:
        self.finalized_features = {"transaction.version": transaction_version}
        self.broker_versions = dict(broker_versions or BROKER_VERSIONS)
        self.address = ("fake", 1)
        self.metadata = ClusterMetadata()
        self.metadata.brokers = {1: BrokerNode(1, "fake", 1)}
        self.metadata.leaders = {"t": {0: 1, 1: 1}}
        self.metadata.partition_info = {"t": {p: PartitionInfo(1, 0, [1], [1]) for p in (0, 1)}}
        self.measures = ClientMeasures()
        self.sent: list[tuple[int, int]] = []
        self.epoch = 0
        self.txn_offset_commit_error = 0

    # the session's side
    async def connection(self, node_id: int) -> Broker:
        return self

    async def connection_to(self, node: object) -> Broker:
        return self

    async def coordinator(self, key: str, key_type: int) -> BrokerNode:
        return self.metadata.brokers[1]

    async def request_coordinator(self, key: str, body: Any, *, key_type: int = 0) -> Any:
        return await self.request(body, version=self.version_for(body.API_KEY))

    def forget_coordinator(self, key: str, key_type: int = 0) -> None:
        pass

    def discard(self, connection: object, error: object = None) -> None:
        pass

    def request_update(self, topics: object = None) -> None:
        pass

    # the connection's side
    def version_for(self, api_key: int, *, at_most: int | None = None) -> int:
        top = self.broker_versions[api_key][1]
        return top if at_most is None else min(top, at_most)

    async def request(self, body: Any, *, version: int, timeout: float | None = None) -> Any:
        key = body.API_KEY
        self.sent.append((key, version))
        await asyncio.sleep(0)
        if key == 22:  # InitProducerId
            return InitProducerIdResponse(error_code=0, producer_id=42, producer_epoch=self.epoch)
        if key == PRODUCE:
            return ProduceResponse(responses=[
                TopicProduceResponse(name=t.name, partition_responses=[
                    PartitionProduceResponse(index=p.index, error_code=0, base_offset=0) for p in t.partition_data
                ]) for t in body.topic_data
            ])
        if key == ADD_PARTITIONS:
            return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
                    AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=0) for p in t.partitions
                ]) for t in body.v3_and_below_topics
            ])
        if key == ADD_OFFSETS:
            return AddOffsetsToTxnResponse(error_code=0)
        if key == TXN_OFFSET_COMMIT:
            return TxnOffsetCommitResponse(topics=[
                TxnOffsetCommitResponseTopic(name=t.name, partitions=[
                    TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                     error_code=self.txn_offset_commit_error)
                    for p in t.partitions
                ]) for t in body.topics
            ])
        if key == END_TXN:
            if version >= 5:  # transaction version 2: the epoch is bumped at every end
                self.epoch += 1
                return EndTxnResponse(error_code=0, producer_id=42, producer_epoch=self.epoch)
            return EndTxnResponse(error_code=0)
        raise AssertionError(f"unexpected API key {key}")

    def api_keys(self) -> list[int]:
        return [key for key, _ in self.sent]

    def versions_of(self, api_key: int) -> list[int]:
        return [version for key, version in self.sent if key == api_key]


async def producer(broker: Broker) -> tuple[Accumulator, Sender, TransactionManager]:
    waker = Waker()
    accumulator = Accumulator(batch_size=16384, linger=0.0, compression=None, buffer_memory=1 << 20,
                              delivery_timeout=5.0, max_request_size=1 << 20, on_ready=waker.wake,
                              transactional=True)
    config = SenderConfig(acks=-1, request_timeout=1.0, retries=10, retry_backoff=0.001, retry_backoff_max=0.002,
                          max_in_flight=1, idempotent=True, transactional_id="txn")
    sender = Sender(broker, accumulator, config, waker)  # type: ignore[arg-type]
    assert sender.idempotence is not None
    transaction = TransactionManager(broker, "txn", 5_000, sender.idempotence, waker.wake)  # type: ignore[arg-type]
    sender.transaction = transaction
    sender.start()
    for _ in range(200):
        if sender.idempotence.ready:
            break
        await asyncio.sleep(0.005)
    assert sender.idempotence.ready
    return accumulator, sender, transaction


async def one_transaction(accumulator: Accumulator, sender: Sender, transaction: TransactionManager,
                          commit: bool) -> None:
    transaction.begin()
    futures = [accumulator.append("t", p, 1, None, b"v", ()) for p in (0, 1)]
    await asyncio.wait_for(asyncio.gather(*futures), 2.0)  # type: ignore[arg-type]

    async def flush() -> None:
        return None

    await asyncio.wait_for(transaction.end(commit, flush), 2.0)


@pytest.mark.parametrize(("features", "end_txn", "expected"), [
    ({"transaction.version": 2}, (0, 5), 2),
    ({"transaction.version": 3}, (0, 6), 2),
    ({"transaction.version": 1}, (0, 5), 1),
    ({}, (0, 4), 1),
    ({"transaction.version": 2}, (0, 4), 1),  # no EndTxn v5 to end a version 2 transaction with
])
def test_the_transaction_version_comes_from_the_finalized_feature_and_end_txn(
    features: dict[str, int], end_txn: tuple[int, int], expected: int
) -> None:
    assert transaction_version(features, {END_TXN: end_txn}) == expected


async def test_version_2_adds_partitions_through_produce_and_ends_with_end_txn_v5() -> None:
    broker = Broker(transaction_version=2)
    accumulator, sender, transaction = await producer(broker)
    assert transaction.v2
    await one_transaction(accumulator, sender, transaction, commit=True)
    await one_transaction(accumulator, sender, transaction, commit=False)
    assert ADD_PARTITIONS not in broker.api_keys()
    assert broker.versions_of(PRODUCE) and min(broker.versions_of(PRODUCE)) >= 12
    assert broker.versions_of(END_TXN) == [5, 5]
    # Each end bumped the epoch, and the next transaction's batches carried the new one.
    assert sender.idempotence is not None and sender.idempotence.producer_epoch == 2
    assert transaction.state == READY
    await sender.stop()


async def test_version_1_adds_partitions_first_and_stays_below_the_version_2_requests() -> None:
    broker = Broker(transaction_version=1)
    accumulator, sender, transaction = await producer(broker)
    assert not transaction.v2
    await one_transaction(accumulator, sender, transaction, commit=True)
    keys = broker.api_keys()
    assert keys.count(ADD_PARTITIONS) == 1
    assert keys.index(ADD_PARTITIONS) < keys.index(PRODUCE)
    assert max(broker.versions_of(PRODUCE)) == 11
    assert broker.versions_of(END_TXN) == [4]
    await sender.stop()


async def test_offsets_join_through_txn_offset_commit_v5_under_version_2_and_add_offsets_under_1() -> None:
    for version, expected in ((2, [(TXN_OFFSET_COMMIT, 5)]), (1, [(ADD_OFFSETS, 4), (TXN_OFFSET_COMMIT, 4)])):
        broker = Broker(transaction_version=version)
        _, sender, transaction = await producer(broker)
        transaction.begin()
        start = len(broker.sent)
        await transaction.send_offsets({TopicPartition("in", 0): 5}, "group")
        assert broker.sent[start:] == expected
        await sender.stop()


async def test_transaction_abortable_lets_the_application_abort_and_go_on() -> None:
    broker = Broker(transaction_version=2)
    broker.txn_offset_commit_error = TRANSACTION_ABORTABLE
    accumulator, sender, transaction = await producer(broker)
    transaction.begin()
    with pytest.raises(errors.TransactionAbortableError, match="TxnOffsetCommit in-0"):
        await transaction.send_offsets({TopicPartition("in", 0): 5}, "group")

    async def flush() -> None:
        return None

    with pytest.raises(errors.TransactionAbortableError):
        transaction.check_send()
    with pytest.raises(errors.TransactionAbortableError):
        await transaction.end(True, flush)
    await asyncio.wait_for(transaction.end(False, flush), 2.0)
    assert transaction.state == READY and transaction.error is None
    broker.txn_offset_commit_error = 0
    await one_transaction(accumulator, sender, transaction, commit=True)
    assert broker.versions_of(END_TXN) == [5, 5]
    await sender.stop()


async def test_a_failed_batch_makes_the_transaction_abortable_not_committable() -> None:
    broker = Broker(transaction_version=2)
    _, sender, transaction = await producer(broker)
    transaction.begin()
    transaction.batch_failed(errors.MessageTooLargeError("t-0"), numbered=True)

    async def flush() -> None:
        return None

    with pytest.raises(errors.TransactionAbortableError, match="MessageTooLargeError") as raised:
        await transaction.end(True, flush)
    assert isinstance(raised.value.__cause__, errors.MessageTooLargeError)
    assert END_TXN not in broker.api_keys()
    await asyncio.wait_for(transaction.end(False, flush), 2.0)
    assert broker.versions_of(END_TXN) == [5] and transaction.state == READY
    await sender.stop()


async def test_a_leader_without_produce_v12_fails_the_batch_with_a_named_error_under_version_2() -> None:
    broker = Broker(transaction_version=2, broker_versions={**BROKER_VERSIONS, PRODUCE: (3, 11)})
    accumulator, sender, transaction = await producer(broker)
    transaction.begin()
    future = accumulator.append("t", 0, 1, None, b"v", ())
    with pytest.raises(UnsupportedVersionError, match="Produce v12"):
        await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert PRODUCE not in broker.api_keys()
    with pytest.raises(errors.TransactionAbortableError, match="Produce v12"):
        transaction.check_send()
    await sender.stop()


async def test_a_produce_answered_transaction_abortable_fails_its_batch_and_abort_goes_on() -> None:
    broker = Broker(transaction_version=2)
    accumulator, sender, transaction = await producer(broker)
    answer = broker.request

    async def refuse_produce(body: Any, *, version: int, timeout: float | None = None) -> Any:
        response = await answer(body, version=version, timeout=timeout)
        if body.API_KEY == PRODUCE:
            for topic in response.responses:
                for partition in topic.partition_responses:
                    partition.error_code = TRANSACTION_ABORTABLE
        return response

    broker.request = refuse_produce  # type: ignore[method-assign]
    transaction.begin()
    future = accumulator.append("t", 0, 1, None, b"v", ())
    with pytest.raises(errors.TransactionAbortableError, match="t-0"):
        await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    with pytest.raises(errors.TransactionAbortableError):
        await transaction.end(True, no_flush)
    await asyncio.wait_for(transaction.end(False, no_flush), 2.0)
    broker.request = answer  # type: ignore[method-assign]
    await one_transaction(accumulator, sender, transaction, commit=True)
    # The abort's EndTxn renewed the epoch: no InitProducerId in the middle, none after.
    assert broker.api_keys().count(22) == 1
    assert broker.versions_of(END_TXN) == [5, 5] and transaction.state == READY
    await sender.stop()


async def test_a_refused_end_txn_names_the_request_and_the_version_and_is_not_retried() -> None:
    broker = Broker(transaction_version=2)
    _, sender, transaction = await producer(broker)
    answer = broker.request

    async def refuse_end_txn(body: Any, *, version: int, timeout: float | None = None) -> Any:
        if body.API_KEY == END_TXN:
            broker.sent.append((END_TXN, version))
            return EndTxnResponse(error_code=errors.InvalidTxnStateError.error_code)
        return await answer(body, version=version, timeout=timeout)

    broker.request = refuse_end_txn  # type: ignore[method-assign]
    transaction.begin()
    with pytest.raises(errors.InvalidTxnStateError, match=r"EndTxn \(abort, transaction version 2\)"):
        await asyncio.wait_for(transaction.end(False, no_flush), 2.0)
    assert broker.versions_of(END_TXN) == [5]
    await sender.stop()


async def no_flush() -> None:
    return None


async def test_version_1_renews_the_producer_id_after_aborting_a_transaction_that_lost_a_batch() -> None:
    broker = Broker(transaction_version=1)
    accumulator, sender, transaction = await producer(broker)
    answer = broker.request

    async def refuse_produce(body: Any, *, version: int, timeout: float | None = None) -> Any:
        response = await answer(body, version=version, timeout=timeout)
        if body.API_KEY == PRODUCE:
            for topic in response.responses:
                for partition in topic.partition_responses:
                    partition.error_code = errors.MessageTooLargeError.error_code
        return response

    broker.request = refuse_produce  # type: ignore[method-assign]
    transaction.begin()
    future = accumulator.append("t", 0, 1, None, b"v", ())
    with pytest.raises(errors.MessageTooLargeError):
        await asyncio.wait_for(future, 2.0)  # type: ignore[arg-type]
    assert broker.api_keys().count(22) == 1  # not in the middle of the transaction
    await asyncio.wait_for(transaction.end(False, no_flush), 2.0)
    broker.request = answer  # type: ignore[method-assign]
    # EndTxn v4 keeps the epoch, so the lost batch's sequence is renumbered under a new one.
    await one_transaction(accumulator, sender, transaction, commit=True)
    assert broker.api_keys().count(22) == 2
    assert broker.versions_of(END_TXN) == [4, 4]
    await sender.stop()
