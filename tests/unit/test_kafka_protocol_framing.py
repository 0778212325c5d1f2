"""Primitives, the schema DSL, framing, the registry, version negotiation and the error table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire import errors
from kafkawire.protocol import (
    API_KEYS,
    UnsupportedRequestError,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_request_pieces,
    negotiate,
    request_type,
    response_correlation_id,
    response_type,
    supported_versions,
)
from kafkawire.protocol import primitives as p
from kafkawire.protocol.codegen import SEPARATE_RECORDS_FROM
from kafkawire.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    HeartbeatResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kafkawire.protocol.schema import INT32, STRING, Array, Response, Struct, field, parse_versions
from mqwire.common.errors import FatalBrokerError, ProtocolError, RetriableBrokerError, UnsupportedVersionError

# ------------------------------------------------------------------------------------------- primitives


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16384, "808001"), (2**32 - 1, "ffffffff0f")],
)
def test_unsigned_varint(value: int, encoded: str) -> None:
    assert p.uvarint(value).hex() == encoded
    assert p.read_uvarint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@pytest.mark.parametrize(("value", "encoded"), [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f")])
def test_zigzag_varint(value: int, encoded: str) -> None:
    assert p.varint(value).hex() == encoded
    assert p.read_varint(bytes.fromhex(encoded), 0) == (value, 1)


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    assert p.read_varint(p.varint(value), 0) == (value, len(p.varint(value)))


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_unchecked_zigzag_matches_varint(value: int) -> None:
    assert p.zigzag(value) == p.varint(value)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    assert p.read_varlong(p.varlong(value), 0) == (value, len(p.varlong(value)))


def test_overlong_varints_are_rejected() -> None:
    with pytest.raises(ProtocolError):
        p.read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(ProtocolError):
        p.read_varlong(b"\xff" * 10 + b"\x01", 0)
    with pytest.raises(IndexError):  # mapped to ProtocolError by the decoders
        p.read_uvarint(b"\x80", 0)
    with pytest.raises(ValueError):
        p.varint(2**31)


def test_skip_tags() -> None:
    data = bytes([2, 0, 1, 0xAA, 5, 2, 0xBB, 0xCC, 0xEE])
    assert p.skip_tags(data, 0) == 8
    with pytest.raises(ProtocolError):
        p.skip_tags(bytes([1, 0, 9, 1]), 0)


# ------------------------------------------------------------------------------------------- schema


def test_version_ranges() -> None:
    assert parse_versions("3+") == (3, 0x7FFF)
    assert parse_versions("0-2") == (0, 2)
    assert parse_versions("5") == (5, 5)
    assert parse_versions("none") is None
    with pytest.raises(ValueError):
        parse_versions("x")


def test_declared_struct_behaves_like_a_dataclass() -> None:
    class Pair(Struct):
        name: str = field(STRING)
        numbers: list[int] = field(Array(INT32), "1+")

    first, second = Pair(name="a"), Pair(name="a")
    assert first == second and first.numbers == [] and first.numbers is not second.numbers
    assert repr(first) == "Pair(name='a', numbers=[])"
    assert not hasattr(first, "__dict__")
    with pytest.raises(TypeError):
        Pair("a")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Pair(nope=1)  # type: ignore[call-arg]


def test_subclass_keeps_the_wire_layout() -> None:
    class MyHeartbeat(HeartbeatResponse):
        def failed(self) -> bool:
            return self.error_code != 0

    message = MyHeartbeat(error_code=27, throttle_time_ms=5)
    assert message.failed() and MyHeartbeat.API_KEY == 12
    assert decode_body(MyHeartbeat, 4, encode_body(message, 4)) == message


def test_field_declaration_errors() -> None:
    with pytest.raises(ValueError):
        field(INT32, nullable="0+")
    with pytest.raises(ValueError):
        field(STRING, default=None)
    with pytest.raises(ValueError):
        field(INT32, tagged="1+")


def test_messages_know_their_api() -> None:
    assert MetadataRequest.API_KEY == 3 and MetadataResponse.API_KEY == 3
    assert (ApiVersionsRequest.MIN_VERSION, ApiVersionsRequest.FLEXIBLE_VERSION) == (0, 3)
    assert issubclass(HeartbeatResponse, Response)


# ------------------------------------------------------------------------------------------- framing


def test_request_frame_size_prefix_and_correlation() -> None:
    frame = encode_request(MetadataRequest(topics=None), version=12, correlation_id=99, client_id="x")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, body = decode_request(frame[4:])
    assert header.correlation_id == 99 and body == MetadataRequest(topics=None)


def produce_request(record_sets: list[bytes | bytearray | memoryview | None]) -> ProduceRequest:
    partitions = [PartitionProduceData(index=i, records=records) for i, records in enumerate(record_sets)]
    topics = [TopicProduceData(name="t", partition_data=partitions)]
    return ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=topics)


record_set_sizes = st.sampled_from([0, 1, 100, SEPARATE_RECORDS_FROM - 1, SEPARATE_RECORDS_FROM, 70_000])


@given(
    st.lists(st.tuples(record_set_sizes, st.sampled_from(["bytes", "bytearray", "memoryview", "none"])), max_size=5),
    st.sampled_from([8, 9]),  # the last version before flexible encoding, the first with it
)
def test_request_pieces_join_to_the_whole_frame_and_leave_large_record_sets_as_they_are(
    sets: list[tuple[int, str]], version: int
) -> None:
    records: list[bytes | bytearray | memoryview | None] = []
    for size, kind in sets:
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        made = {"none": None, "bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}
        records.append(made[kind])
    body = produce_request(records)
    whole = encode_request(body, version=version, correlation_id=7, client_id="c")
    pieces = encode_request_pieces(body, version=version, correlation_id=7, client_id="c")
    assert b"".join(pieces) == whole
    # Exactly the large bytes/bytearray sets are pieces of their own, the very objects given.
    separate = [
        r for r in records if r is not None and not isinstance(r, memoryview) and len(r) >= SEPARATE_RECORDS_FROM
    ]
    assert [piece for piece in pieces if any(piece is r for r in separate)] == separate
    assert len(pieces) == 1 + 2 * len(separate)
    header, decoded = decode_request(b"".join(pieces)[4:])
    assert header.correlation_id == 7 and isinstance(decoded, ProduceRequest)
    assert [bytes(d.records) if d.records is not None else None for d in decoded.topic_data[0].partition_data] == [
        bytes(r) if r is not None else None for r in records
    ]


def test_response_correlation_id() -> None:
    assert response_correlation_id(b"\x00\x00\x01\x00rest") == 256
    assert response_correlation_id(memoryview(b"\xff\xff\xff\xff")) == -1
    with pytest.raises(ProtocolError):
        response_correlation_id(b"\x00\x00")


def test_flexible_response_header_tags_are_skipped() -> None:
    # Heartbeat v4: response header v1 with one unknown header tag, then throttle time and error code.
    frame = bytes.fromhex("00000005010002abcd00000000001000")
    assert decode_response(12, 4, frame) == HeartbeatResponse(error_code=16)
    with pytest.raises(ProtocolError):
        decode_response(12, 4, bytes.fromhex("000000050100ff"))
    with pytest.raises(ProtocolError):
        decode_response(12, 4, b"\x00\x00")


def test_api_versions_response_fallback_to_v0() -> None:
    # A broker that does not know the requested version answers UNSUPPORTED_VERSION with a v0 body.
    frame = bytes.fromhex("00000001002300000001001200000003")
    response = decode_response(18, 0, frame)
    assert response.error_code == 35
    assert response.api_keys[0].max_version == 3
    with pytest.raises(ProtocolError):
        decode_response(18, 4, frame)


def test_version_outside_our_range() -> None:
    with pytest.raises(UnsupportedVersionError):
        encode_request(MetadataRequest(), version=14, correlation_id=1, client_id=None)
    with pytest.raises(UnsupportedVersionError):
        decode_response(0, 2, b"\x00\x00\x00\x01")
    with pytest.raises(TypeError):
        encode_request(MetadataResponse(), version=1, correlation_id=1, client_id=None)  # type: ignore[arg-type]


def test_decode_request_of_unknown_version_keeps_the_header() -> None:
    frame = encode_request(ApiVersionsRequest(), version=0, correlation_id=5, client_id="c")
    patched = frame[4:6] + b"\x00\x63" + frame[8:]  # ApiVersions v99
    with pytest.raises(UnsupportedRequestError) as caught:
        decode_request(patched)
    assert caught.value.header.correlation_id == 5 and caught.value.header.api_version == 99
    with pytest.raises(ProtocolError):
        decode_request(frame[4:10])


# ------------------------------------------------------------------------------------------- registry


def test_registry() -> None:
    assert API_KEYS[18] == "ApiVersions" and API_KEYS[68] == "ConsumerGroupHeartbeat"
    assert request_type(3) is MetadataRequest and response_type(18) is ApiVersionsResponse
    assert supported_versions(1) == (4, 18)
    with pytest.raises(UnsupportedVersionError):
        supported_versions(9999)


def test_negotiate() -> None:
    assert negotiate(3, 0, 12) == 12
    assert negotiate(3, 0, 99) == 13
    assert negotiate(0, 0, 3) == 3
    with pytest.raises(UnsupportedVersionError, match=r"Produce \(key 0\).*3-13.*0-2"):
        negotiate(0, 0, 2)
    with pytest.raises(UnsupportedVersionError):
        negotiate(1, 19, 20)


# ------------------------------------------------------------------------------------------- errors


def test_error_table() -> None:
    assert len(errors.ERRORS) > 130
    error = errors.error_for(6, "partition moved")
    assert isinstance(error, errors.NotLeaderOrFollowerError)
    assert isinstance(error, RetriableBrokerError) and error.retriable and error.refresh_metadata
    assert error.code == 6 and "partition moved" in str(error)
    auth = errors.error_for(29)
    assert isinstance(auth, errors.TopicAuthorizationFailedError) and isinstance(auth, FatalBrokerError)
    assert not auth.retriable
    assert isinstance(errors.error_for(35), UnsupportedVersionError)
    assert isinstance(errors.error_for(58), errors.AuthenticationError)
    assert errors.error_for(16).refresh_coordinator
    unknown = errors.error_for(31000)
    assert isinstance(unknown, errors.UnknownKafkaError) and unknown.code == 31000
    with pytest.raises(ValueError):
        errors.error_for(0)


def test_the_codes_of_a_group_that_moved_on_are_commit_failures() -> None:
    # What aiokafka users catch around commit() when the group rebalanced: one class for the four codes.
    for code in (22, 25, 27, 110):
        error = errors.error_for(code)
        assert isinstance(error, errors.CommitFailedError) and not error.retriable, code
    for code in (15, 16, 14, 113):  # coordinator trouble and KIP-848's stale epoch are retried instead
        assert not isinstance(errors.error_for(code), errors.CommitFailedError), code
    assert 22 in errors.ERRORS and errors.CommitFailedError not in errors.ERRORS.values()


def test_raise_for() -> None:
    errors.raise_for(0)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        errors.raise_for(3)


def test_error_codes_are_unique_and_consistent() -> None:
    for code, cls in errors.ERRORS.items():
        assert cls.error_code == code
        assert issubclass(cls, errors.KafkaRetriableError) != issubclass(cls, errors.KafkaFatalError)
