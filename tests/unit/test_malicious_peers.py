"""Each client connection against loopback peers that answer the handshake and then break the protocol.

Every case must end in a typed error within a few seconds (a hang fails the test), close only the
connection that carried the bad bytes, and never buffer what a lying length field claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from kafkawire.connection import KafkaConnection
from kafkawire.protocol import decode_request, encode_response, supported_versions
from kafkawire.protocol.headers import RequestHeader
from kafkawire.protocol.messages import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from mqwire.common.errors import (
    BrokerError,
    ChecksumError,
    ConnectionLostError,
    FrameTooLargeError,
    MqwireError,
    ProtocolError,
    RequestTimeoutError,
)
from pulsarwire.connection import PulsarConnection
from pulsarwire.protocol import commands
from pulsarwire.protocol.frames import decode_frame, encode_command, encode_payload_frame
from pulsarwire.protocol.pulsar_api_pb2 import (
    BaseCommand,
    CommandConnected,
    CommandMessage,
    CommandPartitionedTopicMetadataResponse,
    CommandSendReceipt,
    MessageIdData,
    MessageMetadata,
)
from tubemqwire.connection import TubeConnection
from tubemqwire.protocol import rpc
from tubemqwire.protocol.constants import RPC_PROTOCOL_BEGIN_TOKEN, Method, ServiceType
from tubemqwire.protocol.frames import TubeFrameSplitter, encode_frame
from tubemqwire.protocol.master_service_pb2 import CloseRequestP2M, CloseResponseM2P

T = TypeVar("T")
Address = tuple[str, int]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

# A hang is a failure: every exchange below must end well within this.
BOUND = 5.0
# What a claimed 2 GiB frame may cost us at most.
MEMORY_CEILING = 50 * 1024 * 1024
TWO_GIB = 2**31


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, BOUND)


@contextlib.asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[Address]:
    tasks: set[asyncio.Task[Any]] = set()
    writers: list[asyncio.StreamWriter] = []

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        writers.append(writer)
        await handler(reader, writer)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[:2]
    finally:
        server.close()
        # Closing our side feeds EOF to the handlers, so they end by themselves instead of being cancelled.
        for writer in writers:
            writer.close()
        if tasks:
            await asyncio.wait(tasks, timeout=BOUND)


@contextlib.contextmanager
def peak_memory() -> Iterator[list[int]]:
    """Yields a one-item list that holds the traced peak once the block ends."""
    result = [0]
    tracemalloc.start()
    try:
        yield result
    finally:
        result[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


async def read_sized(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">I", await reader.readexactly(4))
    return await reader.readexactly(size)


async def linger(reader: asyncio.StreamReader) -> None:
    # Keeps the socket open so that only the client's own checks can end the exchange.
    with contextlib.suppress(ConnectionError):
        await reader.read()


# ================================================================================================== Kafka
KafkaMisbehaviour = Callable[[RequestHeader], bytes]
KAFKA_KEYS = (18, 3)


def kafka_answer(header: RequestHeader) -> bytes:
    body: Any
    if header.api_key == 18:
        keys = [ApiVersion(api_key=key, min_version=0, max_version=supported_versions(key)[1]) for key in KAFKA_KEYS]
        body = ApiVersionsResponse(api_keys=keys)
    else:
        body = MetadataResponse()
    return encode_response(body, version=header.api_version, correlation_id=header.correlation_id)


def kafka_peer(misbehave: KafkaMisbehaviour | None = None, *, close_after: bool = False) -> Handler:
    """Answers ApiVersions, writes ``misbehave(header)`` in place of the next answer, then serves again."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handshaken = False
        pending = misbehave
        try:
            while True:
                header, _ = decode_request(await read_sized(reader))
                if not handshaken or pending is None:
                    handshaken = True
                    writer.write(kafka_answer(header))
                    continue
                writer.write(pending(header))
                pending = None
                await writer.drain()
                if close_after:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handler


def api_versions_request() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="mqwire-test", client_software_version="1")


@contextlib.asynccontextmanager
async def good_kafka() -> AsyncIterator[KafkaConnection]:
    async with serve(kafka_peer()) as address:
        connection = await bounded(KafkaConnection.open(address, request_timeout=BOUND))
        try:
            yield connection
        finally:
            connection.close()


async def still_good_kafka(connection: KafkaConnection) -> None:
    assert not connection.closed
    response = await bounded(connection.request(api_versions_request()))
    assert response.error_code == 0


def kafka_splitter_pending(connection: KafkaConnection) -> int:
    return connection.channel.connection._splitter.pending_bytes()


async def kafka_failure(misbehave: KafkaMisbehaviour, *, close_after: bool = False, timeout: float = 30.0) -> Exception:
    """The error a request raises against a peer that misbehaves after the handshake."""
    async with good_kafka() as good, serve(kafka_peer(misbehave, close_after=close_after)) as address:
        connection = await bounded(KafkaConnection.open(address, request_timeout=timeout))
        # A bare TimeoutError from ``bounded`` (a hang) is not an MqwireError and fails the test.
        with pytest.raises(MqwireError) as caught:
            await bounded(connection.request(api_versions_request()))
        assert kafka_splitter_pending(connection) < 1024
        if isinstance(caught.value, ProtocolError):
            # Whatever could not be read, the stream is no longer trusted: this connection is closed.
            assert connection.closed
        await still_good_kafka(good)
        connection.close()
        return caught.value


async def test_kafka_two_gib_size_field_fails_at_once_without_allocating() -> None:
    with peak_memory() as peak:
        error = await kafka_failure(lambda header: struct.pack(">Ii", TWO_GIB, header.correlation_id))
    assert isinstance(error, FrameTooLargeError)
    assert error.claimed == TWO_GIB
    assert peak[0] < MEMORY_CEILING


async def test_kafka_two_gib_size_field_during_the_handshake() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_sized(reader)
        writer.write(struct.pack(">I", TWO_GIB))
        await linger(reader)
        writer.close()

    async with good_kafka() as good, serve(handler) as address:
        with pytest.raises(FrameTooLargeError):
            await bounded(KafkaConnection.open(address))
        await still_good_kafka(good)


async def test_kafka_size_field_below_the_correlation_id() -> None:
    error = await kafka_failure(lambda header: struct.pack(">I", 2) + b"\x00\x00")
    assert isinstance(error, ProtocolError)


async def test_kafka_truncated_frame_then_close() -> None:
    def cut(header: RequestHeader) -> bytes:
        return struct.pack(">Ii", 100, header.correlation_id) + b"\x00" * 6

    error = await kafka_failure(cut, close_after=True)
    assert isinstance(error, ConnectionLostError)
    assert "mid-frame" in str(error)


async def test_kafka_truncated_frame_and_silence_times_out() -> None:
    def cut(header: RequestHeader) -> bytes:
        return struct.pack(">Ii", 100, header.correlation_id)

    error = await kafka_failure(cut, timeout=0.5)
    assert isinstance(error, RequestTimeoutError)


async def test_kafka_garbage_body_is_a_protocol_error() -> None:
    def garbage(header: RequestHeader) -> bytes:
        body = struct.pack(">i", header.correlation_id) + b"\xff" * 7
        return struct.pack(">I", len(body)) + body

    error = await kafka_failure(garbage)
    assert isinstance(error, ProtocolError)


async def test_kafka_unknown_tagged_fields_in_body_are_accepted() -> None:
    def tagged(header: RequestHeader) -> bytes:
        frame = kafka_answer(header)
        # The body ends with its empty tag buffer: put tag 9 (unknown) in its place.
        assert frame.endswith(b"\x00")
        body = frame[4:-1] + bytes([1, 9, 3]) + b"xyz"
        return struct.pack(">I", len(body)) + body

    async with serve(kafka_peer(tagged)) as address:
        connection = await bounded(KafkaConnection.open(address))
        response = await bounded(connection.request(api_versions_request()))
        assert response.error_code == 0
        assert response._unknown_tags == [(9, b"xyz")]
        connection.close()


async def test_kafka_unknown_tagged_fields_in_response_header_are_accepted() -> None:
    def tagged(header: RequestHeader) -> bytes:
        frame = kafka_answer(header)
        # The flexible response header is the correlation id and an empty tag buffer at offset 8.
        assert frame[8] == 0
        body = frame[4:8] + bytes([2, 5, 2, 0xAB, 0xCD, 77, 0]) + frame[9:]
        return struct.pack(">I", len(body)) + body

    async with serve(kafka_peer(tagged)) as address:
        connection = await bounded(KafkaConnection.open(address))
        assert connection.version_for(3) >= 9  # a flexible Metadata version, so the header has tags
        response = await bounded(connection.request(MetadataRequest()))
        assert response.topics == []
        connection.close()


async def test_kafka_response_to_unknown_correlation_id_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    def stray_then_real(header: RequestHeader) -> bytes:
        stray = RequestHeader(header.api_key, header.api_version, header.correlation_id + 1000, None)
        return kafka_answer(stray) + kafka_answer(header)

    with caplog.at_level(logging.WARNING):
        async with serve(kafka_peer(stray_then_real)) as address:
            connection = await bounded(KafkaConnection.open(address))
            response = await bounded(connection.request(api_versions_request()))
            assert response.error_code == 0
            assert not connection.closed
            connection.close()
    assert any("unknown request id" in record.getMessage() for record in caplog.records)


async def test_kafka_unsolicited_response_keeps_the_connection_usable() -> None:
    # An answer pushed before any request was made, then normal service.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header, _ = decode_request(await read_sized(reader))
                writer.write(kafka_answer(RequestHeader(18, 0, 424242, None)))
                writer.write(kafka_answer(header))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async with serve(handler) as address:
        connection = await bounded(KafkaConnection.open(address))
        await still_good_kafka(connection)
        await still_good_kafka(connection)
        connection.close()


# ================================================================================================= Pulsar
PulsarMisbehaviour = Callable[[int], bytes]
TOPIC = "persistent://public/default/malicious"


def pulsar_connected() -> bytes:
    connected = CommandConnected(server_version="fake", protocol_version=21, max_message_size=1 << 20)
    return encode_command(BaseCommand(type=BaseCommand.CONNECTED, connected=connected))


def pulsar_metadata_answer(request_id: int) -> bytes:
    body = CommandPartitionedTopicMetadataResponse(partitions=3, request_id=request_id)
    return encode_command(BaseCommand(type=BaseCommand.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=body))


def pulsar_message_frame() -> tuple[bytes, int]:
    """A MESSAGE frame for a consumer nobody registered, and the offset of its checksum magic."""
    command = BaseCommand(
        type=BaseCommand.MESSAGE,
        message=CommandMessage(consumer_id=9, message_id=MessageIdData(ledgerId=1, entryId=2)),
    )
    metadata = MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
    frame = encode_payload_frame(command, metadata, b"payload")
    return frame, 8 + len(command.SerializeToString())


def pulsar_peer(misbehave: PulsarMisbehaviour | None = None, *, close_after: bool = False) -> Handler:
    """Answers CONNECT, PING and PARTITIONED_METADATA; the first PARTITIONED_METADATA gets ``misbehave(request_id)``."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pending = misbehave
        try:
            while True:
                command = decode_frame(await read_sized(reader)).command
                if command.type == BaseCommand.CONNECT:
                    writer.write(pulsar_connected())
                elif command.type == BaseCommand.PING:
                    writer.write(encode_command(commands.pong()))
                elif command.type == BaseCommand.PARTITIONED_METADATA:
                    request_id = command.partitionMetadata.request_id
                    if pending is None:
                        writer.write(pulsar_metadata_answer(request_id))
                        continue
                    writer.write(pending(request_id))
                    pending = None
                    await writer.drain()
                    if close_after:
                        return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handler


async def pulsar_lookup(connection: PulsarConnection, timeout: float = 30.0) -> int:
    request_id = connection.next_request_id()
    frame = await connection.request(commands.partitioned_metadata(TOPIC, request_id), request_id, timeout)
    return int(frame.command.partitionMetadataResponse.partitions)


@contextlib.asynccontextmanager
async def good_pulsar() -> AsyncIterator[PulsarConnection]:
    async with serve(pulsar_peer()) as address:
        connection = await bounded(PulsarConnection.open(address))
        try:
            yield connection
        finally:
            connection.close()


async def still_good_pulsar(connection: PulsarConnection) -> None:
    assert not connection.closed
    assert await bounded(pulsar_lookup(connection)) == 3
    await bounded(connection.ping())


async def pulsar_failure(
    misbehave: PulsarMisbehaviour, *, close_after: bool = False, timeout: float = 30.0
) -> Exception:
    async with good_pulsar() as good, serve(pulsar_peer(misbehave, close_after=close_after)) as address:
        connection = await bounded(PulsarConnection.open(address))
        with pytest.raises(MqwireError) as caught:
            await bounded(pulsar_lookup(connection, timeout))
        assert connection._splitter.pending_bytes() < 1024
        await still_good_pulsar(good)
        connection.close()
        return caught.value


async def test_pulsar_two_gib_size_field_fails_at_once_without_allocating() -> None:
    with peak_memory() as peak:
        error = await pulsar_failure(lambda request_id: struct.pack(">I", TWO_GIB))
    assert isinstance(error, FrameTooLargeError)
    assert peak[0] < MEMORY_CEILING


async def test_pulsar_size_beyond_the_announced_maximum() -> None:
    # CONNECTED announced 1 MiB; a frame of 2 MiB is refused on its size field alone.
    error = await pulsar_failure(lambda request_id: struct.pack(">I", 2 << 20))
    assert isinstance(error, FrameTooLargeError)


async def test_pulsar_two_gib_size_field_during_the_handshake() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_sized(reader)
        writer.write(struct.pack(">I", TWO_GIB))
        await linger(reader)
        writer.close()

    async with good_pulsar() as good, serve(handler) as address:
        with pytest.raises(FrameTooLargeError):
            await bounded(PulsarConnection.open(address))
        await still_good_pulsar(good)


async def test_pulsar_silent_handshake_fails_within_the_connect_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await linger(reader)
        writer.close()

    async with serve(handler) as address:
        with pytest.raises(ConnectionLostError):
            await bounded(PulsarConnection.open(address, connect_timeout=0.5))


async def test_pulsar_wrong_magic() -> None:
    def wrong_magic(request_id: int) -> bytes:
        frame, magic_at = pulsar_message_frame()
        assert frame[magic_at : magic_at + 2] == b"\x0e\x01"
        return frame[:magic_at] + b"\x0e\x03" + frame[magic_at + 2 :]

    error = await pulsar_failure(wrong_magic)
    assert isinstance(error, ProtocolError)
    assert "0x0e03" in str(error)


async def test_pulsar_wrong_checksum() -> None:
    def wrong_checksum(request_id: int) -> bytes:
        frame, magic_at = pulsar_message_frame()
        crc_at = magic_at + 2
        flipped = bytes([frame[crc_at] ^ 0xFF])
        return frame[:crc_at] + flipped + frame[crc_at + 1 :]

    assert isinstance(await pulsar_failure(wrong_checksum), ChecksumError)


async def test_pulsar_truncated_frame_then_close() -> None:
    def cut(request_id: int) -> bytes:
        return pulsar_metadata_answer(request_id)[:-3]

    error = await pulsar_failure(cut, close_after=True)
    assert isinstance(error, ConnectionLostError)
    assert "mid-frame" in str(error)


async def test_pulsar_truncated_frame_and_silence_times_out() -> None:
    error = await pulsar_failure(lambda request_id: pulsar_metadata_answer(request_id)[:-3], timeout=0.5)
    assert isinstance(error, RequestTimeoutError)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(b"\xff" * 12, id="not-protobuf"),
        pytest.param(b"\x08\x02", id="lacks-its-sub-command"),
        pytest.param(b"\x08\xe7\x07", id="unknown-type"),
        pytest.param(BaseCommand(type=BaseCommand.PING).SerializeToString()[:-1] + b"\x80", id="cut-varint"),
    ],
)
async def test_pulsar_garbage_protobuf(command: bytes) -> None:
    def garbage(request_id: int) -> bytes:
        return struct.pack(">II", len(command) + 4, len(command)) + command

    # CONNECT (type 2) without its sub-command is a push of a request type: dropped, so the request times out.
    error = await pulsar_failure(garbage, timeout=1.0)
    assert isinstance(error, (ProtocolError, RequestTimeoutError))
    if command != b"\x08\x02":
        assert isinstance(error, ProtocolError)


async def test_pulsar_command_size_beyond_the_frame() -> None:
    error = await pulsar_failure(lambda request_id: struct.pack(">II", 8, 1000) + b"\x08\x12\x00\x00")
    assert isinstance(error, ProtocolError)


async def test_pulsar_response_to_unknown_request_id_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    def stray_then_real(request_id: int) -> bytes:
        return pulsar_metadata_answer(request_id + 1000) + pulsar_metadata_answer(request_id)

    with caplog.at_level(logging.WARNING):
        async with serve(pulsar_peer(stray_then_real)) as address:
            connection = await bounded(PulsarConnection.open(address))
            assert await bounded(pulsar_lookup(connection)) == 3
            assert not connection.closed
            await bounded(connection.ping())
            connection.close()
    assert any("unknown request id" in record.getMessage() for record in caplog.records)


async def test_pulsar_unsolicited_pushes_are_dropped() -> None:
    def pushes_then_real(request_id: int) -> bytes:
        receipt = CommandSendReceipt(producer_id=77, sequence_id=1)
        frame, _ = pulsar_message_frame()
        return b"".join(
            (
                encode_command(BaseCommand(type=BaseCommand.SEND_RECEIPT, send_receipt=receipt)),
                frame,
                pulsar_connected(),
                encode_command(commands.pong()),
                pulsar_metadata_answer(request_id),
            )
        )

    async with serve(pulsar_peer(pushes_then_real)) as address:
        connection = await bounded(PulsarConnection.open(address))
        assert await bounded(pulsar_lookup(connection)) == 3
        assert not connection.closed
        connection.close()


# ================================================================================================= TubeMQ
TubeMisbehaviour = Callable[[int], bytes]


def tube_answer(serial: int) -> bytes:
    answer = CloseResponseM2P(success=True, errCode=200, errMsg="OK")
    return rpc.encode_response(serial, Method.MASTER_PRODUCER_CLOSE, answer)


def tube_peer(misbehave: TubeMisbehaviour | None = None, *, close_after: bool = False) -> Handler:
    """Answers every request; with ``misbehave`` the first one gets ``misbehave(serial)`` instead."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        splitter = TubeFrameSplitter()
        pending = misbehave
        try:
            while data := await reader.read(65536):
                for frame in splitter.feed(data):
                    request = rpc.decode_request(frame)
                    if pending is None:
                        writer.write(tube_answer(request.serial))
                        continue
                    writer.write(pending(request.serial))
                    pending = None
                    await writer.drain()
                    if close_after:
                        return
        except ConnectionError:
            pass
        finally:
            writer.close()

    return handler


async def tube_call(connection: TubeConnection, timeout: float | None = None) -> CloseResponseM2P:
    data = await connection.call(
        ServiceType.MASTER, Method.MASTER_PRODUCER_CLOSE, CloseRequestP2M(clientId="c"), timeout=timeout
    )
    return rpc.parse_message(CloseResponseM2P, data)


@contextlib.asynccontextmanager
async def good_tube() -> AsyncIterator[TubeConnection]:
    async with serve(tube_peer()) as address:
        connection = await bounded(TubeConnection.open(address))
        try:
            yield connection
        finally:
            connection.close()


async def still_good_tube(connection: TubeConnection) -> None:
    assert not connection.closed
    assert (await bounded(tube_call(connection))).success


async def tube_failure(misbehave: TubeMisbehaviour, *, close_after: bool = False, timeout: float = 30.0) -> Exception:
    async with good_tube() as good, serve(tube_peer(misbehave, close_after=close_after)) as address:
        connection = await bounded(TubeConnection.open(address))
        with pytest.raises(MqwireError) as caught:
            await bounded(tube_call(connection, timeout))
        assert connection.channel.connection._splitter.pending_bytes() < 1024
        if isinstance(caught.value, ProtocolError):
            assert connection.closed
        await still_good_tube(good)
        connection.close()
        return caught.value


def tube_header(serial: int, count: int, token: int = RPC_PROTOCOL_BEGIN_TOKEN) -> bytes:
    return struct.pack(">IIi", token, serial, count)


async def test_tubemq_two_gib_block_fails_at_once_without_allocating() -> None:
    with peak_memory() as peak:
        error = await tube_failure(lambda serial: tube_header(serial, 1) + struct.pack(">i", TWO_GIB - 1))
    assert isinstance(error, ProtocolError)
    assert peak[0] < MEMORY_CEILING


async def test_tubemq_huge_block_count() -> None:
    error = await tube_failure(lambda serial: tube_header(serial, TWO_GIB - 1))
    assert isinstance(error, ProtocolError)


async def test_tubemq_negative_block_length() -> None:
    error = await tube_failure(lambda serial: tube_header(serial, 1) + struct.pack(">i", -5))
    assert isinstance(error, ProtocolError)


async def test_tubemq_wrong_begin_token() -> None:
    def wrong_token(serial: int) -> bytes:
        frame = tube_answer(serial)
        return struct.pack(">I", 0xDEADBEEF) + frame[4:]

    error = await tube_failure(wrong_token)
    assert isinstance(error, ProtocolError)
    assert "0xdeadbeef" in str(error)


async def test_tubemq_truncated_frame_then_close() -> None:
    error = await tube_failure(lambda serial: tube_answer(serial)[:-5], close_after=True)
    assert isinstance(error, ConnectionLostError)
    assert "mid-frame" in str(error)


async def test_tubemq_truncated_frame_and_silence_times_out() -> None:
    error = await tube_failure(lambda serial: tube_answer(serial)[:-5], timeout=0.5)
    assert isinstance(error, RequestTimeoutError)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\xff" * 20, id="not-protobuf"),
        pytest.param(b"\x02\x08\x01\x7f", id="header-claims-too-much"),
        pytest.param(b"\x02\x08\x01\x00\x00", id="lacks-required-fields"),
        pytest.param(b"", id="empty"),
    ],
)
async def test_tubemq_garbage_protobuf(payload: bytes) -> None:
    error = await tube_failure(lambda serial: encode_frame(serial, payload))
    assert isinstance(error, ProtocolError)


async def test_tubemq_exception_body_is_a_typed_broker_error() -> None:
    error = await tube_failure(lambda serial: rpc.encode_exception(serial, "java.lang.Exception", "boom"))
    assert isinstance(error, BrokerError)


async def test_tubemq_response_to_unknown_serial_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    def stray_then_real(serial: int) -> bytes:
        return tube_answer(serial + 1000) + tube_answer(serial)

    with caplog.at_level(logging.WARNING):
        async with serve(tube_peer(stray_then_real)) as address:
            connection = await bounded(TubeConnection.open(address))
            assert (await bounded(tube_call(connection))).success
            assert not connection.closed
            connection.close()
    assert any("unknown request id" in record.getMessage() for record in caplog.records)
