"""The TubeMQ protocol without I/O: frames, the RPC envelope, messages and metadata strings."""

from tubemqwire.protocol import broker_service_pb2, constants, master_service_pb2, messages, metadata, producer, rpc
from tubemqwire.protocol.constants import ErrorCode, EventStatus, EventType, Method, OpType, ServiceType
from tubemqwire.protocol.frames import TubeFrame, TubeFrameSplitter, encode_frame
from tubemqwire.protocol.rpc import (
    RpcRequest,
    RpcResponse,
    decode_request,
    decode_response,
    encode_exception,
    encode_request,
    encode_response,
    parse_message,
    parse_response,
)

__all__ = [
    "ErrorCode",
    "EventStatus",
    "EventType",
    "Method",
    "OpType",
    "RpcRequest",
    "RpcResponse",
    "ServiceType",
    "TubeFrame",
    "TubeFrameSplitter",
    "broker_service_pb2",
    "constants",
    "decode_request",
    "decode_response",
    "encode_exception",
    "encode_frame",
    "encode_request",
    "encode_response",
    "master_service_pb2",
    "messages",
    "metadata",
    "parse_message",
    "parse_response",
    "producer",
    "rpc",
]
