"""The Pulsar protocol layer with bytes alone: golden frames, round trips, corruption, random input."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqwire.common.checksums import crc32c
from mqwire.common.errors import (
    AuthenticationError,
    ChecksumError,
    FatalBrokerError,
    FrameTooLargeError,
    ProtocolError,
    RetriableBrokerError,
)
from pulsarwire import errors
from pulsarwire.protocol import commands
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.frames import (
    PulsarFrameSplitter,
    decode_frame,
    encode_command,
    encode_payload_frame,
    encode_payload_frame_pieces,
    encode_payload_frame_raw,
)

T = pb.BaseCommand.Type


def metadata(**extra: Any) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="standalone-0-1", sequence_id=7, publish_time=1_700_000_000_000, **extra)


# ------------------------------------------------------------------------------------------ golden bytes
def test_ping_golden_bytes() -> None:
    # totalSize 9, commandSize 5, BaseCommand{type: PING (18), ping: {}}
    assert encode_command(commands.ping()) == bytes.fromhex("00000009 00000005 0812 920100")


def test_pong_golden_bytes() -> None:
    assert encode_command(commands.pong()) == bytes.fromhex("00000009 00000005 0813 9a0100")


def test_connect_golden_bytes() -> None:
    client_version = b"mqwire-test".hex()
    expected = bytes.fromhex(
        "0000001f 0000001b"  # totalSize 31, commandSize 27
        " 0802 1217"  # type CONNECT; field 2 (connect) of 23 bytes:
        f" 0a0b {client_version}"  # client_version
        " 2015"  # protocol_version 21
        " 5206 0801 1001 2001"  # feature_flags: auth refresh, broker entry metadata, topic-list watchers
    )
    assert encode_command(commands.connect("mqwire-test")) == expected


def test_connect_options() -> None:
    command = commands.connect(
        "c", auth_method_name="token", auth_data=b"secret", proxy_to_broker_url="b:6650", protocol_version=20
    )
    frame = decode_frame(encode_command(command)[4:])
    body = commands.expect(frame.command, pb.CommandConnect)
    assert (body.auth_method_name, body.auth_data, body.proxy_to_broker_url) == ("token", b"secret", "b:6650")
    assert body.protocol_version == 20


def test_protocol_version_is_the_newest() -> None:
    assert commands.PROTOCOL_VERSION == 21 == pb.v21


def test_send_frame_golden_bytes() -> None:
    md = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1000)
    frame = encode_payload_frame(commands.send(1, 1), md, b"hello")
    head = bytes.fromhex("0a0170 1001 18e807")  # producer_name "p", sequence_id 1, publish_time 1000
    checked = struct.pack(">I", len(head)) + head + b"hello"
    expected = (
        struct.pack(">II", 4 + 8 + 6 + len(checked), 8)
        + bytes.fromhex("0806 3204 0801 1001")  # SEND {producer_id 1, sequence_id 1}
        + bytes.fromhex("0e01")
        + struct.pack(">I", crc32c(checked))
        + checked
    )
    assert frame == expected


# ------------------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("payload", [b"", b"x", bytes(range(256)) * 40])
def test_payload_frame_round_trip(payload: bytes) -> None:
    md = metadata(partition_key="k", properties=[pb.KeyValue(key="a", value="b")], compression=pb.LZ4)
    data = encode_payload_frame(commands.send(3, 9, 2, highest_sequence_id=10), md, payload)
    (total,) = struct.unpack_from(">I", data)
    assert total == len(data) - 4
    frame = decode_frame(data[4:])
    assert frame.command.type == T.SEND
    assert frame.command.send.num_messages == 2
    assert frame.metadata == md
    assert frame.payload is not None and bytes(frame.payload) == payload
    assert frame.broker_entry_metadata is None


def test_raw_encoder_matches_and_carries_broker_entry_metadata() -> None:
    command = commands.wrap(
        pb.CommandMessage(consumer_id=4, message_id=pb.MessageIdData(ledgerId=1, entryId=2), redelivery_count=1)
    )
    md = metadata()
    entry = pb.BrokerEntryMetadata(broker_timestamp=123, index=45)
    plain = encode_payload_frame_raw(command.SerializeToString(), md.SerializeToString(), b"data")
    assert plain == encode_payload_frame(command, md, b"data")
    data = encode_payload_frame_raw(
        command.SerializeToString(), md.SerializeToString(), b"data", broker_entry_metadata=entry.SerializeToString()
    )
    frame = decode_frame(data[4:])
    assert frame.broker_entry_metadata == entry
    assert frame.metadata == md
    assert frame.payload is not None and bytes(frame.payload) == b"data"
    assert commands.expect(frame.command, pb.CommandMessage).redelivery_count == 1


@given(st.lists(st.binary(max_size=300), max_size=8), st.booleans())
def test_a_frame_of_pieces_is_the_frame_of_their_join(pieces: list[bytes], with_entry: bool) -> None:
    command = commands.send(3, 9, 2).SerializeToString()
    md = metadata(num_messages_in_batch=2).SerializeToString()
    entry = pb.BrokerEntryMetadata(index=5).SerializeToString() if with_entry else None
    data = encode_payload_frame_pieces(command, md, pieces, broker_entry_metadata=entry)
    (size,) = struct.unpack_from(">I", data)
    assert size == len(data) - 4
    frame = decode_frame(data[4:])  # the decoder checks the CRC-32C itself
    assert not frame.checksum_mismatch
    assert frame.payload is not None and bytes(frame.payload) == b"".join(pieces)
    assert data == encode_payload_frame_raw(command, md, b"".join(pieces), broker_entry_metadata=entry)
    assert (frame.broker_entry_metadata is not None) == with_entry


def test_simple_command_has_no_payload() -> None:
    frame = decode_frame(encode_command(commands.flow(5, 1000))[4:])
    assert frame.metadata is None and frame.payload is None
    assert commands.expect(frame.command, pb.CommandFlow).messagePermits == 1000


def test_splitter_yields_decoded_frames_across_cuts() -> None:
    stream = (
        encode_command(commands.ping())
        + encode_payload_frame(commands.send(1, 2), metadata(), b"abc" * 100)
        + encode_command(commands.pong())
    )
    for cut in range(len(stream) + 1):
        splitter = PulsarFrameSplitter()
        frames = splitter.feed(stream[:cut]) + splitter.feed(stream[cut:])
        assert [f.command.type for f in frames] == [T.PING, T.SEND, T.PONG]
        assert splitter.pending_bytes() == 0


def test_splitter_limit_is_adjustable() -> None:
    splitter = PulsarFrameSplitter(64)
    big = encode_payload_frame(commands.send(1, 2), metadata(), b"x" * 100)
    with pytest.raises(FrameTooLargeError):
        splitter.feed(big)
    splitter = PulsarFrameSplitter(64)
    splitter.max_frame_size = 1024
    assert splitter.max_frame_size == 1024
    assert len(splitter.feed(big)) == 1


# ---------------------------------------------------------------------------------------- bad frames
def test_checksum_corruption_is_detected() -> None:
    data = bytearray(encode_payload_frame(commands.send(1, 1), metadata(), b"payload bytes"))
    data[-3] ^= 0x40
    with pytest.raises(ChecksumError):
        decode_frame(bytes(data[4:]))
    data = bytearray(encode_payload_frame(commands.send(1, 1), metadata(), b"payload bytes"))
    # The checksum field itself.
    checksum_at = 4 + 4 + len(commands.send(1, 1).SerializeToString()) + 2
    data[checksum_at] ^= 0x01
    with pytest.raises(ChecksumError):
        decode_frame(bytes(data[4:]))


def test_checksum_error_is_a_protocol_error() -> None:
    assert issubclass(ChecksumError, ProtocolError)


def test_missing_checksum_magic() -> None:
    command = commands.send(1, 1).SerializeToString()
    md = metadata().SerializeToString()
    legacy = struct.pack(">I", len(command)) + command + struct.pack(">I", len(md)) + md + b"old"
    with pytest.raises(ProtocolError):
        decode_frame(legacy)
    frame = decode_frame(legacy, require_checksum=False)
    assert frame.payload is not None and bytes(frame.payload) == b"old"


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x00\x00",
        struct.pack(">I", 100) + b"\x08\x12",  # command size beyond the frame
        struct.pack(">I", 0xFFFFFFFF),
        struct.pack(">I", 0),  # no type
        struct.pack(">I", 2) + b"\x08\x63",  # unknown type
        struct.pack(">I", 2) + b"\x08\x0e",  # ERROR without its required fields...
    ],
)
def test_malformed_simple_frames(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        frame = decode_frame(raw)
        commands.unwrap(frame.command)  # ... is caught at the latest when its body is taken


def test_truncated_and_oversized_inner_lengths() -> None:
    command = commands.send(1, 1).SerializeToString()
    good = encode_payload_frame(commands.send(1, 1), metadata(), b"xyz")[4:]
    prefix = 4 + len(command)
    # Cut at every point inside the payload section's headers.
    for end in range(prefix + 1, prefix + 10):
        with pytest.raises(ProtocolError):
            decode_frame(good[:end])
    # metadataSize larger than what is left.
    bad = bytearray(good)
    struct.pack_into(">I", bad, prefix + 6, 0x7FFFFFFF)
    with pytest.raises(ProtocolError):
        decode_frame(bytes(bad))
    # broker entry metadata size larger than what is left.
    tail = struct.pack(">HI", 0x0E02, 1000) + b"\x08\x01"
    with pytest.raises(ProtocolError):
        decode_frame(struct.pack(">I", len(command)) + command + tail)
    # an unknown magic.
    with pytest.raises(ProtocolError):
        decode_frame(struct.pack(">I", len(command)) + command + b"\x0e\x03" + good[prefix + 2 :])


def test_metadata_lacking_required_fields() -> None:
    command = commands.send(1, 1).SerializeToString()
    md = pb.MessageMetadata(producer_name="p").SerializePartialToString()
    data = encode_payload_frame_raw(command, md, b"x")
    with pytest.raises(ProtocolError, match="sequence_id"):
        decode_frame(data[4:])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_protocol_error(raw: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        frame = decode_frame(raw)
        commands.unwrap(frame.command)
        commands.response_request_id(frame.command)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=6))
def test_random_chunks_into_the_splitter(chunks: list[bytes]) -> None:
    splitter = PulsarFrameSplitter(4096)
    with contextlib.suppress(ProtocolError):
        for chunk in chunks:
            splitter.feed(chunk)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=8))
def test_mutated_frames_only_raise_protocol_error(position: int, noise: bytes) -> None:
    data = bytearray(encode_payload_frame(commands.send(1, 1), metadata(uuid="u"), b"payload" * 5)[4:])
    at = position % len(data)
    data[at : at + len(noise)] = noise
    with contextlib.suppress(ProtocolError):
        decode_frame(bytes(data))


# ------------------------------------------------------------------------------------------- commands
def test_every_type_has_its_field() -> None:
    for name, number in T.items():
        field = pb.BaseCommand.DESCRIPTOR.fields_by_number[number]
        assert field.message_type is not None, name


def test_wrap_and_unwrap() -> None:
    lookup = pb.CommandLookupTopic(topic="persistent://public/default/t", request_id=12)
    command = commands.wrap(lookup)
    assert command.type == T.LOOKUP
    kind, body = commands.unwrap(command)
    assert kind == T.LOOKUP and body == lookup
    with pytest.raises(TypeError):
        commands.wrap(pb.KeyValue(key="a", value="b"))
    with pytest.raises(ProtocolError):
        commands.expect(command, pb.CommandFlow)


def test_unwrap_empty_ping_without_field() -> None:
    kind, body = commands.unwrap(pb.BaseCommand(type=T.PING))
    assert kind == T.PING and isinstance(body, pb.CommandPing)
    with pytest.raises(ProtocolError):
        commands.unwrap(pb.BaseCommand(type=T.SUCCESS))


def test_response_request_id() -> None:
    success = commands.wrap(pb.CommandSuccess(request_id=77))
    assert commands.response_request_id(success) == 77
    error = commands.wrap(pb.CommandError(request_id=5, error=pb.TopicNotFound, message="no"))
    assert commands.response_request_id(error) == 5
    assert commands.response_request_id(commands.wrap(pb.CommandAckResponse(consumer_id=1))) is None
    assert commands.response_request_id(commands.wrap(pb.CommandAckResponse(consumer_id=1, request_id=3))) == 3
    # Requests and pushes are not responses, even when they carry a request_id.
    assert commands.response_request_id(commands.wrap(pb.CommandCloseProducer(producer_id=1, request_id=9))) is None
    assert commands.response_request_id(commands.ping()) is None


def test_auth_response() -> None:
    command = commands.auth_response("c", "token", b"t")
    body = commands.expect(command, pb.CommandAuthResponse)
    assert body.response.auth_method_name == "token" and body.response.auth_data == b"t"
    assert body.protocol_version == commands.PROTOCOL_VERSION


# ---------------------------------------------------------------------------------------------- errors
def test_every_server_error_maps_to_a_named_exception() -> None:
    for name, number in pb.ServerError.items():
        error = errors.error_for(number, f"broker says {name}")
        assert isinstance(error, errors.BrokerError)
        assert type(error) is not errors.UnknownServerError or number == pb.UnknownError
        assert error.code == number
        assert str(error) == f"broker says {name}"


@pytest.mark.parametrize(
    ("code", "cls", "retriable"),
    [
        (pb.ServiceNotReady, errors.ServiceNotReadyError, True),
        (pb.TooManyRequests, errors.TooManyRequestsError, True),
        (pb.AuthenticationError, errors.BrokerAuthenticationError, False),
        (pb.TopicNotFound, errors.TopicNotFoundError, False),
        (pb.ProducerBusy, errors.ProducerBusyError, False),
        (pb.ProducerFenced, errors.ProducerFencedError, False),
        (pb.PersistenceError, errors.PersistenceError, True),
        (99, errors.UnknownServerError, True),
    ],
)
def test_error_classes(code: int, cls: type[errors.BrokerError], retriable: bool) -> None:
    error = errors.error_for(code, "")
    assert type(error) is cls
    assert error.retriable is retriable
    assert isinstance(error, RetriableBrokerError if retriable else FatalBrokerError)
    assert str(error)


def test_authentication_error_is_the_common_one() -> None:
    assert isinstance(errors.error_for(pb.AuthenticationError, "bad token"), AuthenticationError)
    assert errors.AuthenticationError is AuthenticationError


def test_invalid_utf8_in_a_string_field() -> None:
    # A proto2 parser would hand these out as bytes where str is promised.
    error = pb.BaseCommand(
        type=T.ERROR, error=pb.CommandError(request_id=1, error=pb.UnknownError, message="x")
    ).SerializeToString()
    broken = error.replace(b"\x1a\x01x", b"\x1a\x01\xff")
    with pytest.raises(ProtocolError, match=r"error\.message"):
        decode_frame(struct.pack(">I", len(broken)) + broken)
    md = (
        metadata(properties=[pb.KeyValue(key="k", value="v")])
        .SerializeToString()
        .replace(b"\x12\x01v", b"\x12\x01\xfe")
    )
    data = encode_payload_frame_raw(commands.send(1, 1).SerializeToString(), md, b"")
    with pytest.raises(ProtocolError, match=r"properties\.value"):
        decode_frame(data[4:])
