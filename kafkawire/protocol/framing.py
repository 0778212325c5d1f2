"""Whole frames: size prefix, header and body, for requests (client side) and responses (broker side).

Every decoder here maps malformed input to ProtocolError; encoders raise TypeError or ValueError for
values that do not fit the declared field types.
"""

from __future__ import annotations

from typing import Any, TypeVar

from kafkawire.protocol import primitives as p
from kafkawire.protocol.codegen import PiecedBuffer, decode_from, encode_into
from kafkawire.protocol.headers import (
    RequestHeader,
    read_request_header_fixed,
    response_header_flexible,
    write_request_header,
    write_response_header,
)
from kafkawire.protocol.registry import API_KEYS, request_type, response_type
from kafkawire.protocol.schema import Message, Request, Response
from mqwire.common.errors import ProtocolError, UnsupportedVersionError

M = TypeVar("M", bound=Message)
R = TypeVar("R", bound=Response)


class UnsupportedRequestError(UnsupportedVersionError):
    """A request of an API or version this side does not declare; carries the header that was read."""

    def __init__(self, message: str, header: RequestHeader) -> None:
        super().__init__(message)
        self.header = header


def _check_version(cls: type[Message], version: int) -> None:
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{API_KEYS.get(cls.API_KEY, cls.__name__)} version {version} is not supported "
            f"(this client supports {cls.MIN_VERSION}-{cls.MAX_VERSION})"
        )


def _flexible(cls: type[Message], version: int) -> bool:
    return version >= cls.FLEXIBLE_VERSION


def encode_body(body: Message, version: int) -> bytes:
    """The body alone, without header or size prefix."""
    _check_version(type(body), version)
    out = bytearray()
    encode_into(out, body, version, _flexible(type(body), version))
    return bytes(out)


def decode_body(cls: type[M], version: int, data: p.Buffer) -> M:
    """A body alone; it must fill ``data`` exactly."""
    _check_version(cls, version)
    return decode_from(cls, data, 0, version, _flexible(cls, version))


def encode_request(body: Request, *, version: int, correlation_id: int, client_id: str | None) -> bytearray:
    """A whole request frame, size prefix included (the buffer it was written into, not copied again)."""
    out = bytearray(4)
    _encode_request_into(out, body, version, correlation_id, client_id)
    p.INT32.pack_into(out, 0, len(out) - 4)
    return out


def encode_request_pieces(
    body: Request, *, version: int, correlation_id: int, client_id: str | None
) -> list[bytes | bytearray]:
    """A whole request frame as the pieces to write one after the other: its record sets of
    ``codegen.SEPARATE_RECORDS_FROM`` bytes or more are pieces of their own, not copied (so they must not
    change until written); the bytes around them are the other pieces. One piece when there is none."""
    out = PiecedBuffer(4)
    _encode_request_into(out, body, version, correlation_id, client_id)
    separated = out.separated
    p.INT32.pack_into(out, 0, len(out) - 4 + sum(len(records) for _, records in separated))
    if not separated:
        return [out]
    pieces: list[bytes | bytearray] = []
    start = 0
    for place, records in separated:
        pieces.append(out[start:place])
        pieces.append(records)
        start = place
    pieces.append(out[start:])
    return pieces


def _encode_request_into(
    out: bytearray, body: Request, version: int, correlation_id: int, client_id: str | None
) -> None:
    cls = type(body)
    if not isinstance(body, Request):
        raise TypeError(f"{cls.__name__} is not a request")
    _check_version(cls, version)
    flexible = _flexible(cls, version)
    write_request_header(out, cls.API_KEY, version, correlation_id, client_id, flexible)
    encode_into(out, body, version, flexible)


def response_correlation_id(frame: p.Buffer) -> int:
    """The correlation id of a response frame (the bytes after the size prefix)."""
    if len(frame) < 4:
        raise ProtocolError(f"response frame of {len(frame)} bytes has no correlation id")
    correlation_id: int = p.INT32.unpack_from(frame, 0)[0]
    return correlation_id


def decode_response(api_key: int, version: int, frame: p.Buffer) -> Any:
    """The response body of ``api_key`` at ``version`` from a frame (the bytes after the size prefix)."""
    return decode_response_as(response_type(api_key), version, frame)


def decode_response_as(cls: type[R], version: int, frame: p.Buffer) -> R:
    """Like decode_response, typed by the response class."""
    _check_version(cls, version)
    flexible = _flexible(cls, version)
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    pos = 4
    if len(buf) < 4:
        raise ProtocolError(f"response frame of {len(buf)} bytes has no correlation id")
    if response_header_flexible(cls.API_KEY, flexible):
        try:
            pos = p.skip_tags(buf, pos)
        except p.DECODE_ERRORS as exc:
            raise ProtocolError(f"malformed response header: {exc}") from exc
    return decode_from(cls, buf, pos, version, flexible)


def decode_request(frame: p.Buffer) -> tuple[RequestHeader, Request]:
    """Header and body of a request frame (the bytes after the size prefix), as a broker reads it.

    An API key or version this client does not declare raises UnsupportedVersionError after the header
    has been read, as UnsupportedRequestError carrying that header, so a fake broker can still answer.
    """
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    try:
        header, pos = read_request_header_fixed(buf)
    except p.DECODE_ERRORS as exc:
        raise ProtocolError(f"malformed request header: {exc}") from exc
    try:
        cls = request_type(header.api_key)
        _check_version(cls, header.api_version)
    except UnsupportedVersionError as exc:
        raise UnsupportedRequestError(str(exc), header) from None
    flexible = _flexible(cls, header.api_version)
    if flexible:
        try:
            pos = p.skip_tags(buf, pos)
        except p.DECODE_ERRORS as exc:
            raise ProtocolError(f"malformed request header: {exc}") from exc
    return header, decode_from(cls, buf, pos, header.api_version, flexible)


def encode_response(body: Response, *, version: int, correlation_id: int) -> bytes:
    """A whole response frame, size prefix included (what a broker sends)."""
    cls = type(body)
    if not isinstance(body, Response):
        raise TypeError(f"{cls.__name__} is not a response")
    _check_version(cls, version)
    flexible = _flexible(cls, version)
    out = bytearray(4)
    write_response_header(out, correlation_id, response_header_flexible(cls.API_KEY, flexible))
    encode_into(out, body, version, flexible)
    p.INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)
