"""The TubeMQ RPC envelope inside a frame's byte stream.

A request is ``RpcConnHeader(flag=0)``, ``RequestHeader(serviceType, protocolVer)`` and
``RequestBody(method, timeout, request)``; a response is ``RpcConnHeader(flag=1)``, ``ResponseHeader(status)``
and then ``RspResponseBody(method, data)`` on success or ``RspExceptionBody(exceptionName, stackTrace)``
otherwise. Each is written as a varint length followed by the message.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from mqwire.common.errors import ProtocolError
from mqwire.common.protobuf import holds_strings, invalid_string_field
from tubemqwire.errors import error_for_exception
from tubemqwire.protocol import broker_service_pb2 as broker
from tubemqwire.protocol import master_service_pb2 as master
from tubemqwire.protocol.constants import (
    DEFAULT_RPC_TIMEOUT_MS,
    FLAG_REQUEST,
    FLAG_RESPONSE,
    RPC_PROTOCOL_VERSION,
    Method,
    ResponseStatus,
)
from tubemqwire.protocol.frames import TubeFrame, encode_frame
from tubemqwire.protocol.rpc_pb2 import (
    RequestBody,
    RequestHeader,
    ResponseHeader,
    RpcConnHeader,
    RspExceptionBody,
    RspResponseBody,
)

M = TypeVar("M", bound=Message)

# Request and response message of every method the servers accept.
MESSAGE_TYPES: dict[int, tuple[type[Message], type[Message]]] = {
    Method.MASTER_PRODUCER_REGISTER: (master.RegisterRequestP2M, master.RegisterResponseM2P),
    Method.MASTER_PRODUCER_HEARTBEAT: (master.HeartRequestP2M, master.HeartResponseM2P),
    Method.MASTER_PRODUCER_CLOSE: (master.CloseRequestP2M, master.CloseResponseM2P),
    Method.MASTER_CONSUMER_REGISTER: (master.RegisterRequestC2M, master.RegisterResponseM2C),
    Method.MASTER_CONSUMER_HEARTBEAT: (master.HeartRequestC2M, master.HeartResponseM2C),
    Method.MASTER_CONSUMER_CLOSE: (master.CloseRequestC2M, master.CloseResponseM2C),
    Method.MASTER_BROKER_REGISTER: (master.RegisterRequestB2M, master.RegisterResponseM2B),
    Method.MASTER_BROKER_HEARTBEAT: (master.HeartRequestB2M, master.HeartResponseM2B),
    Method.MASTER_BROKER_CLOSE: (master.CloseRequestB2M, master.CloseResponseM2B),
    Method.MASTER_CONSUMER_REGISTER_V2: (master.RegisterRequestC2MV2, master.RegisterResponseM2CV2),
    Method.MASTER_CONSUMER_HEARTBEAT_V2: (master.HeartRequestC2MV2, master.HeartResponseM2CV2),
    Method.MASTER_CONSUMER_GET_PART_META: (master.GetPartMetaRequestC2M, master.GetPartMetaResponseM2C),
    Method.BROKER_PRODUCER_SEND_MESSAGE: (broker.SendMessageRequestP2B, broker.SendMessageResponseB2P),
    Method.BROKER_CONSUMER_REGISTER: (broker.RegisterRequestC2B, broker.RegisterResponseB2C),
    Method.BROKER_CONSUMER_HEARTBEAT: (broker.HeartBeatRequestC2B, broker.HeartBeatResponseB2C),
    Method.BROKER_CONSUMER_GET_MESSAGE: (broker.GetMessageRequestC2B, broker.GetMessageResponseB2C),
    Method.BROKER_CONSUMER_COMMIT: (broker.CommitOffsetRequestC2B, broker.CommitOffsetResponseB2C),
}


@dataclass(frozen=True, slots=True)
class RpcRequest:
    serial: int
    service_type: int
    protocol_version: int
    method: int
    timeout_ms: int
    request: bytes


@dataclass(frozen=True, slots=True)
class RpcResponse:
    """A successful answer; ``data`` is the serialized response message of ``method``."""

    serial: int
    method: int
    data: bytes


# ---------------------------------------------------------------------------------------------- encoding
def encode_request(
    serial: int,
    service_type: int,
    method: int,
    request: Message | bytes,
    *,
    timeout_ms: int = DEFAULT_RPC_TIMEOUT_MS,
    protocol_version: int = RPC_PROTOCOL_VERSION,
) -> bytes:
    """A whole request frame. ``timeout_ms`` must be positive: the server drops requests older than it."""
    if timeout_ms <= 0:
        raise ValueError(f"timeout_ms must be positive, got {timeout_ms}")
    if method < 0:
        raise ValueError(f"method must not be negative, got {method}")
    data = request if isinstance(request, bytes) else request.SerializeToString()
    headers = _request_headers(service_type, protocol_version)
    return encode_frame(serial, headers + _request_body(method, timeout_ms, data))


@functools.lru_cache(maxsize=64)
def _request_headers(service_type: int, protocol_version: int) -> bytes:
    """The two delimited headers of a request: the same for every request to one service."""
    return _delimited(RpcConnHeader(flag=FLAG_REQUEST)) + _delimited(
        RequestHeader(serviceType=service_type, protocolVer=protocol_version)
    )


def _request_body(method: int, timeout_ms: int, data: bytes) -> bytes:
    """The delimited RequestBody, written directly: the only part that changes per request, and building
    a message object for it costs more than the three fields (1: method, 2: timeout, 3: request)."""
    body = b"".join((b"\x08", _varint(method), b"\x10", _varint(timeout_ms), b"\x1a", _varint(len(data)), data))
    return _varint(len(body)) + body


def encode_response(
    serial: int, method: int, response: Message | bytes, *, protocol_version: int = RPC_PROTOCOL_VERSION
) -> bytes:
    """A whole success answer frame, as a server writes it."""
    data = response if isinstance(response, bytes) else response.SerializeToString()
    stream = b"".join(
        (
            _delimited(RpcConnHeader(flag=FLAG_RESPONSE)),
            _delimited(ResponseHeader(status=ResponseHeader.SUCCESS, protocolVer=protocol_version)),
            _delimited(RspResponseBody(method=method, data=data)),
        )
    )
    return encode_frame(serial, stream)


def encode_exception(
    serial: int,
    exception_name: str,
    message: str,
    *,
    status: int = ResponseStatus.ERROR,
    protocol_version: int = RPC_PROTOCOL_VERSION,
) -> bytes:
    """A whole error answer frame, as a server writes it (``message`` goes in ``stackTrace``)."""
    stream = b"".join(
        (
            _delimited(RpcConnHeader(flag=FLAG_RESPONSE)),
            _delimited(ResponseHeader(status=ResponseHeader.Status.ValueType(status), protocolVer=protocol_version)),
            _delimited(RspExceptionBody(exceptionName=exception_name, stackTrace=message)),
        )
    )
    return encode_frame(serial, stream)


def _delimited(message: Message) -> bytes:
    body = message.SerializeToString()
    return _varint(len(body)) + body


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# ---------------------------------------------------------------------------------------------- decoding
def decode_response(frame: TubeFrame) -> RpcResponse:
    """The success answer in ``frame``.

    An exception body is raised as the error its class name maps to (``tubemqwire.errors``): for example
    ``MasterStandbyError`` when a standby master answered. Malformed bytes raise ProtocolError.
    """
    reader = _Reader(frame.payload)
    reader.read(RpcConnHeader)
    header = reader.read(ResponseHeader)
    if header.status == ResponseHeader.SUCCESS:
        body = reader.read(RspResponseBody)
        return RpcResponse(frame.serial, body.method, body.data)
    failure = reader.read(RspExceptionBody)
    raise error_for_exception(failure.exceptionName, failure.stackTrace)


def decode_request(frame: TubeFrame) -> RpcRequest:
    """The request in ``frame``, as a server reads it."""
    reader = _Reader(frame.payload)
    reader.read(RpcConnHeader)
    header = reader.read(RequestHeader)
    body = reader.read(RequestBody)
    return RpcRequest(frame.serial, header.serviceType, header.protocolVer, body.method, body.timeout, body.request)


def parse_message(message_type: type[M], data: bytes) -> M:
    """``data`` parsed as ``message_type``; ProtocolError when malformed or lacking a required field."""
    message = message_type()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise ProtocolError(f"malformed {message_type.__name__}: {exc}") from exc
    # The parser accepts messages lacking required fields; the servers never send such a thing.
    if not message.IsInitialized():
        missing = ", ".join(message.FindInitializationErrors())  # type: ignore[attr-defined]
        raise ProtocolError(f"{message_type.__name__} lacks required fields: {missing}")
    if holds_strings(message.DESCRIPTOR):
        bad = invalid_string_field(message)
        if bad is not None:
            raise ProtocolError(f"{message_type.__name__} field {bad} is not UTF-8")
    return message


def parse_response(response: RpcResponse) -> Message:
    """The response message of ``response.method``, parsed."""
    types = MESSAGE_TYPES.get(response.method)
    if types is None:
        raise ProtocolError(f"answer for method {response.method}, which has no response message")
    return parse_message(types[1], response.data)


class _Reader:
    """Reads varint-delimited messages from one frame's payload."""

    __slots__ = ("_data", "_position")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def read(self, message_type: type[M]) -> M:
        data = self._data
        position = self._position
        length = 0
        shift = 0
        while True:
            if position >= len(data):
                raise ProtocolError(f"TubeMQ frame ends before the {message_type.__name__} it should carry")
            byte = data[position]
            position += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift >= 35:
                raise ProtocolError(f"length of {message_type.__name__} is not a 32-bit varint")
        end = position + length
        if end > len(data):
            raise ProtocolError(
                f"{message_type.__name__} claims {length} bytes; the frame has {len(data) - position} left"
            )
        self._position = end
        return parse_message(message_type, data[position:end])
