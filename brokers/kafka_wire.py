"""The few Kafka requests the launcher needs, spoken directly over TCP.

Only non-flexible request versions are used (request header v1, response header v0), which
keeps the encoding to fixed-width integers and int16-prefixed strings.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from mqwire.testing.net import LOOPBACK, close_quietly, recv_exact

API_VERSIONS = 18
CREATE_TOPICS = 19
METADATA = 3

ERROR_NONE = 0
ERROR_TOPIC_ALREADY_EXISTS = 36

CLIENT_ID = "mqwire-brokers"


class KafkaWireError(RuntimeError):
    """A Kafka request failed or its answer made no sense."""


@dataclass(frozen=True)
class ApiRange:
    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True)
class ApiVersionsAnswer:
    error_code: int
    apis: tuple[ApiRange, ...]


@dataclass(frozen=True)
class TopicResult:
    name: str
    error_code: int
    error_message: str | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self._pos + size > len(self._data):
            raise KafkaWireError("response ends early")
        values = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += size
        return values

    def int8(self) -> int:
        return self.take(">b")[0]

    def int16(self) -> int:
        return self.take(">h")[0]

    def int32(self) -> int:
        return self.take(">i")[0]

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        raw = self._data[self._pos : self._pos + length]
        if len(raw) != length:
            raise KafkaWireError("response ends early")
        self._pos += length
        return raw.decode("utf-8")


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhi", api_key, version, correlation_id) + _string(CLIENT_ID)
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _roundtrip(
    host: str, port: int, api_key: int, version: int, body: bytes, timeout: float
) -> _Reader:
    correlation_id = 0x6D71  # any value; checked on the way back
    sock: socket.socket | None = None
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(timeout)
        sock.sendall(_request(api_key, version, correlation_id, body))
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        if size < 4 or size > 64 * 1024 * 1024:
            raise KafkaWireError(f"implausible response size {size}")
        reader = _Reader(recv_exact(sock, size))
    finally:
        close_quietly(sock)
    if reader.int32() != correlation_id:
        raise KafkaWireError("correlation id mismatch")
    return reader


def api_versions(port: int, host: str = LOOPBACK, timeout: float = 5.0) -> ApiVersionsAnswer:
    """Send ApiVersions v0 and decode the answer (raises ``OSError`` when nobody listens)."""
    reader = _roundtrip(host, port, API_VERSIONS, 0, b"", timeout)
    error_code = reader.int16()
    count = reader.int32()
    apis = tuple(ApiRange(*reader.take(">hhh")) for _ in range(max(count, 0)))
    return ApiVersionsAnswer(error_code, apis)


def is_ready(port: int, host: str = LOOPBACK, timeout: float = 2.0) -> bool:
    """True when the broker answers ApiVersions with no error."""
    try:
        return api_versions(port, host, timeout).error_code == ERROR_NONE
    except (OSError, KafkaWireError):
        return False


def create_topics(
    port: int,
    topics: dict[str, int],
    replication_factor: int = 1,
    host: str = LOOPBACK,
    timeout: float = 30.0,
) -> list[TopicResult]:
    """CreateTopics v2 for ``{name: partitions}``; returns one result per topic."""
    body = struct.pack(">i", len(topics))
    for name, partitions in topics.items():
        body += _string(name) + struct.pack(">ihii", partitions, replication_factor, 0, 0)
    body += struct.pack(">ib", int(timeout * 1000), 0)
    reader = _roundtrip(host, port, CREATE_TOPICS, 2, body, timeout + 5)
    reader.int32()  # throttle time
    results = []
    for _ in range(reader.int32()):
        name = reader.string() or ""
        error_code = reader.int16()
        results.append(TopicResult(name, error_code, reader.string()))
    return results


def partition_leaders(
    port: int, topic: str, host: str = LOOPBACK, timeout: float = 5.0
) -> dict[int, int] | None:
    """Metadata v1 for one topic: ``{partition: leader id}``, or None when the topic is unknown."""
    body = struct.pack(">i", 1) + _string(topic)
    reader = _roundtrip(host, port, METADATA, 1, body, timeout)
    for _ in range(reader.int32()):  # brokers
        reader.int32()
        reader.string()
        reader.int32()
        reader.string()
    reader.int32()  # controller id
    leaders: dict[int, int] | None = None
    for _ in range(reader.int32()):
        error_code = reader.int16()
        name = reader.string()
        reader.int8()  # is_internal
        found: dict[int, int] = {}
        for _ in range(reader.int32()):
            reader.int16()
            index = reader.int32()
            found[index] = reader.int32()
            for _ in range(reader.int32()):  # replicas
                reader.int32()
            for _ in range(reader.int32()):  # isr
                reader.int32()
        if name == topic and error_code == ERROR_NONE:
            leaders = found
    return leaders
