"""The transaction APIs of a transactional producer.

AddPartitionsToTxn (24) and AddOffsetsToTxn (25) enrol partitions and a group's offsets in the running
transaction, TxnOffsetCommit (28) commits those offsets through the group coordinator, EndTxn (26) commits or
aborts.
"""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, Request, Response, Struct, field


class AddPartitionsToTxnTopic(Struct):
    name: str = field(STRING)
    partitions: list[int] = field(Array(INT32))


class AddPartitionsToTxnTransaction(Struct):
    transactional_id: str = field(STRING)
    producer_id: int = field(INT64)
    producer_epoch: int = field(INT16)
    verify_only: bool = field(BOOL, default=False)
    topics: list[AddPartitionsToTxnTopic] = field(Array(AddPartitionsToTxnTopic))


class AddPartitionsToTxnRequest(Request, api_key=24, versions="0-5", flexible="3+"):
    # v4+ batches transactions (a broker verifying on behalf of producers); clients use the v3 fields.
    transactions: list[AddPartitionsToTxnTransaction] = field(Array(AddPartitionsToTxnTransaction), "4+")
    v3_and_below_transactional_id: str = field(STRING, "0-3")
    v3_and_below_producer_id: int = field(INT64, "0-3")
    v3_and_below_producer_epoch: int = field(INT16, "0-3")
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = field(Array(AddPartitionsToTxnTopic), "0-3")


class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = field(INT32)
    partition_error_code: int = field(INT16)


class AddPartitionsToTxnTopicResult(Struct):
    name: str = field(STRING)
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = field(Array(AddPartitionsToTxnPartitionResult))


class AddPartitionsToTxnResult(Struct):
    transactional_id: str = field(STRING)
    topic_results: list[AddPartitionsToTxnTopicResult] = field(Array(AddPartitionsToTxnTopicResult))


class AddPartitionsToTxnResponse(Response, api_key=24, versions="0-5", flexible="3+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16, "4+")
    results_by_transaction: list[AddPartitionsToTxnResult] = field(Array(AddPartitionsToTxnResult), "4+")
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = field(
        Array(AddPartitionsToTxnTopicResult), "0-3"
    )


class AddOffsetsToTxnRequest(Request, api_key=25, versions="0-4", flexible="3+"):
    transactional_id: str = field(STRING)
    producer_id: int = field(INT64)
    producer_epoch: int = field(INT16)
    group_id: str = field(STRING)


class AddOffsetsToTxnResponse(Response, api_key=25, versions="0-4", flexible="3+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)


class EndTxnRequest(Request, api_key=26, versions="0-5", flexible="3+"):
    transactional_id: str = field(STRING)
    producer_id: int = field(INT64)
    producer_epoch: int = field(INT16)
    # True commits, False aborts.
    committed: bool = field(BOOL)


class EndTxnResponse(Response, api_key=26, versions="0-5", flexible="3+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    # v5+ (KIP-890): the epoch is bumped at every transaction end, and the new one is returned here.
    producer_id: int = field(INT64, "5+", default=-1)
    producer_epoch: int = field(INT16, "5+", default=-1)


class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = field(INT32)
    committed_offset: int = field(INT64)
    committed_leader_epoch: int = field(INT32, "2+", default=-1)
    committed_metadata: str | None = field(STRING, nullable="0+")


class TxnOffsetCommitRequestTopic(Struct):
    name: str = field(STRING)
    partitions: list[TxnOffsetCommitRequestPartition] = field(Array(TxnOffsetCommitRequestPartition))


class TxnOffsetCommitRequest(Request, api_key=28, versions="0-5", flexible="3+"):
    transactional_id: str = field(STRING)
    group_id: str = field(STRING)
    producer_id: int = field(INT64)
    producer_epoch: int = field(INT16)
    generation_id: int = field(INT32, "3+", default=-1)
    member_id: str = field(STRING, "3+", default="")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = field(Array(TxnOffsetCommitRequestTopic))


class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = field(INT32)
    error_code: int = field(INT16)


class TxnOffsetCommitResponseTopic(Struct):
    name: str = field(STRING)
    partitions: list[TxnOffsetCommitResponsePartition] = field(Array(TxnOffsetCommitResponsePartition))


class TxnOffsetCommitResponse(Response, api_key=28, versions="0-5", flexible="3+"):
    throttle_time_ms: int = field(INT32)
    topics: list[TxnOffsetCommitResponseTopic] = field(Array(TxnOffsetCommitResponseTopic))
