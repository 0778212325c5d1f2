"""InitProducerId (key 22): a producer id and epoch for idempotent or transactional producing.

Version 6 (two-phase commit, KIP-939) is still marked unstable by Kafka and brokers do not offer it by
default, so it is not declared.
"""

from __future__ import annotations

from kafkawire.protocol.schema import INT16, INT32, INT64, STRING, Request, Response, field


class InitProducerIdRequest(Request, api_key=22, versions="0-5", flexible="2+"):
    transactional_id: str | None = field(STRING, nullable="0+")
    transaction_timeout_ms: int = field(INT32)
    producer_id: int = field(INT64, "3+", default=-1)
    producer_epoch: int = field(INT16, "3+", default=-1)


class InitProducerIdResponse(Response, api_key=22, versions="0-5", flexible="2+"):
    throttle_time_ms: int = field(INT32)
    error_code: int = field(INT16)
    producer_id: int = field(INT64, default=-1)
    producer_epoch: int = field(INT16)
