"""Request and response headers.

Request header v1 is ``api_key int16, api_version int16, correlation_id int32, client_id nullable string``;
v2, used with flexible request versions, adds a tag buffer. The client id stays a non-compact int16-length
string even in v2, because a broker must be able to read it before it knows whether the version is flexible.
Response header v0 is the correlation id; v1 adds a tag buffer, except for ApiVersions, whose response
always uses v0 so that a client can read it whatever version it asked for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkawire.protocol import primitives as p

API_VERSIONS_KEY = 18

REQUEST_HEADER = struct.Struct(">hhih")
_REQUEST_FIXED = struct.Struct(">hhi")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def write_request_header(
    out: bytearray, api_key: int, version: int, correlation_id: int, client_id: str | None, flexible: bool
) -> None:
    if client_id is None:
        out += REQUEST_HEADER.pack(api_key, version, correlation_id, -1)
    else:
        encoded = client_id.encode()
        out += REQUEST_HEADER.pack(api_key, version, correlation_id, len(encoded))
        out += encoded
    if flexible:
        out.append(0)


def read_request_header_fixed(buf: memoryview) -> tuple[RequestHeader, int]:
    """The v1 part of a request header; the caller skips the v2 tag buffer once it knows the version."""
    api_key, version, correlation_id = _REQUEST_FIXED.unpack_from(buf, 0)
    (length,) = p.INT16.unpack_from(buf, 8)
    pos = 10
    client_id = None
    if length >= 0:
        raw, pos = p.read_slice(buf, pos, length, "client id")
        client_id = str(raw, "utf-8")
    return RequestHeader(api_key, version, correlation_id, client_id), pos


def response_header_flexible(api_key: int, flexible_body: bool) -> bool:
    """Whether the response header is v1 (has a tag buffer)."""
    return flexible_body and api_key != API_VERSIONS_KEY


def write_response_header(out: bytearray, correlation_id: int, flexible: bool) -> None:
    out += p.INT32.pack(correlation_id)
    if flexible:
        out.append(0)
