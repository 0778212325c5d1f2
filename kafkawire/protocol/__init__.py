"""The Kafka wire protocol, sans I/O: request and response objects to bytes and back.

Nothing here touches a socket, an event loop or a clock. Messages are declared once in ``messages`` with the
schema of ``schema``; ``codegen`` compiles an encoder and a decoder per version on first use. Record batches
(the payload of Produce and Fetch) are built and read by ``records``.
"""

from kafkawire.protocol.framing import (
    UnsupportedRequestError,
    decode_body,
    decode_request,
    decode_response,
    decode_response_as,
    encode_body,
    encode_request,
    encode_request_pieces,
    encode_response,
    response_correlation_id,
)
from kafkawire.protocol.headers import RequestHeader
from kafkawire.protocol.records import BatchBuilder, Record, RecordBatch, decode_batches, encode_batch
from kafkawire.protocol.registry import API_KEYS, negotiate, request_type, response_type, supported_versions
from kafkawire.protocol.schema import Message, Request, Response, Struct

__all__ = [
    "API_KEYS",
    "BatchBuilder",
    "Message",
    "Record",
    "RecordBatch",
    "Request",
    "RequestHeader",
    "Response",
    "Struct",
    "UnsupportedRequestError",
    "decode_batches",
    "decode_body",
    "decode_request",
    "decode_response",
    "decode_response_as",
    "encode_batch",
    "encode_body",
    "encode_request",
    "encode_request_pieces",
    "encode_response",
    "negotiate",
    "request_type",
    "response_correlation_id",
    "response_type",
    "supported_versions",
]
