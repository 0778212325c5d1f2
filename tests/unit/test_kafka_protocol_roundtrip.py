"""Every declared API at every version: round trips, truncation, malformed and random input."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire.protocol import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
)
from kafkawire.protocol.messages import (
    APIS,
    ApiVersion,
    ApiVersionsResponse,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponse,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
    SaslAuthenticateResponse,
)
from kafkawire.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    Array,
    FieldSpec,
    Message,
    Primitive,
    Struct,
)
from mqwire.common.errors import ProtocolError

_SAMPLES: dict[Primitive, Any] = {
    BOOL: True,
    INT8: -7,
    INT16: 300,
    UINT16: 65000,
    INT32: -70000,
    UINT32: 4_000_000_000,
    INT64: 2**40 + 3,
    FLOAT64: 1.5,
    UUID: uuid.UUID("3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
    STRING: "héllo",
    BYTES: b"\x00\x01\xff",
    RECORDS: b"record batch bytes",
}


def _sample(spec: FieldSpec, primitive: Primitive) -> Any:
    value = _SAMPLES[primitive]
    if value == spec.default:  # e.g. a boolean that defaults to True
        value = not value if primitive is BOOL else value
    return value


def populate(cls: type[Struct], version: int, nulls: bool, width: int = 2) -> Any:
    """An instance with a non-default value in every field on the wire at ``version``; None where nullable if
    ``nulls``."""
    values: dict[str, Any] = {}
    for spec in cls._fields:
        if not (spec.present(version) or spec.tagged_in(version)):
            continue
        if nulls and spec.nullable_in(version):
            values[spec.name] = None
        elif isinstance(spec.type, Primitive):
            values[spec.name] = _sample(spec, spec.type)
        elif isinstance(spec.type, Array):
            element = spec.type.element
            if isinstance(element, Primitive):
                values[spec.name] = [_SAMPLES[element]] * width
            else:
                values[spec.name] = [populate(element, version, nulls, width) for _ in range(width)]
        else:
            values[spec.name] = populate(spec.type, version, nulls, width)
    return cls(**values)


CLASSES: list[type[Message]] = [cls for pair in APIS for cls in pair]
CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for cls in CLASSES
    for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
]


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_body_round_trip(cls: type[Message], version: int) -> None:
    for message in (cls(), populate(cls, version, nulls=False), populate(cls, version, nulls=True)):
        data = encode_body(message, version)
        assert decode_body(cls, version, data) == message
        assert encode_body(decode_body(cls, version, data), version) == data


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_frame_round_trip(cls: type[Message], version: int) -> None:
    message = populate(cls, version, nulls=False)
    if cls.__name__.endswith("Request"):
        frame = encode_request(message, version=version, correlation_id=42, client_id="mqwire-test")
        header, body = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (cls.API_KEY, version, 42)
        assert header.client_id == "mqwire-test"
        assert body == message
    else:
        frame = encode_response(message, version=version, correlation_id=-5)
        assert decode_response(cls.API_KEY, version, frame[4:]) == message
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4


@pytest.mark.parametrize(
    ("cls", "version"),
    [pytest.param(cls, v, id=f"{cls.__name__}-v{v}") for cls in CLASSES for v in {cls.MIN_VERSION, cls.MAX_VERSION}],
)
def test_every_truncation_is_a_protocol_error(cls: type[Message], version: int) -> None:
    data = encode_body(populate(cls, version, nulls=False, width=1), version)
    for cut in range(len(data)):
        with pytest.raises(ProtocolError):
            decode_body(cls, version, data[:cut])
    with pytest.raises(ProtocolError):
        decode_body(cls, version, data + b"\x00")


def test_unknown_tagged_fields_are_kept_and_re_encoded() -> None:
    body = encode_body(ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, max_version=4)]), 3)
    assert body.endswith(b"\x00")
    # Replace the empty tag buffer with tag 1 (known: finalized features epoch) and tag 9 (unknown).
    tagged = body[:-1] + bytes([2, 1, 8, *(7).to_bytes(8, "big"), 9, 3]) + b"xyz"
    decoded = decode_body(ApiVersionsResponse, 3, tagged)
    assert decoded.finalized_features_epoch == 7
    assert decoded._unknown_tags == [(9, b"xyz")]
    assert encode_body(decoded, 3) == tagged


def test_unknown_tagged_field_in_nested_struct() -> None:
    partition = MetadataResponsePartition(partition_index=3, leader_id=1)
    body = encode_body(MetadataResponse(topics=[MetadataResponseTopic(name="t", partitions=[partition])]), 12)
    # Partition index, leader, leader epoch, three empty compact arrays, then its tag buffer: put tag 30 there.
    end = body.index(bytes.fromhex("0000000300000001ffffffff01010100")) + 15
    patched = body[:end] + bytes([1, 30, 2, 0xAB, 0xCD]) + body[end + 1 :]
    decoded = decode_body(MetadataResponse, 12, patched)
    assert decoded.topics[0].partitions[0]._unknown_tags == [(30, b"\xab\xcd")]
    assert decoded.topics[0].partitions[0].partition_index == 3
    assert encode_body(decoded, 12) == patched


def test_tagged_field_not_filling_its_size_is_rejected() -> None:
    body = encode_body(ApiVersionsResponse(), 3)
    bad = body[:-1] + bytes([1, 1, 9, *(7).to_bytes(8, "big"), 0])  # claims 9 bytes for an int64
    with pytest.raises(ProtocolError):
        decode_body(ApiVersionsResponse, 3, bad)


def test_claimed_lengths_beyond_the_buffer() -> None:
    # ApiVersions v0: error code, then an api_keys count of 2**31 - 1 entries.
    with pytest.raises(ProtocolError, match="claims"):
        decode_body(ApiVersionsResponse, 0, b"\x00\x00\x7f\xff\xff\xff")
    # SaslAuthenticate v0: error code, null message, auth bytes claiming 2 GiB.
    with pytest.raises(ProtocolError, match="claims"):
        decode_body(SaslAuthenticateResponse, 0, b"\x00\x00\xff\xff\x7f\xff\xff\xff")
    # Compact array count as a 5-byte varint.
    with pytest.raises(ProtocolError):
        decode_body(ApiVersionsResponse, 3, b"\x00\x00\xff\xff\xff\xff\x07")


def test_null_where_not_nullable() -> None:
    with pytest.raises(ProtocolError, match="null"):
        decode_body(ApiVersionsResponse, 0, b"\x00\x00\xff\xff\xff\xff")  # api_keys: int32 -1
    with pytest.raises(ValueError, match="not nullable"):
        encode_body(MetadataResponse(topics=[MetadataResponseTopic(name=None)]), 9)


def test_encoding_wrong_values() -> None:
    with pytest.raises(ValueError):
        encode_body(ApiVersionsResponse(error_code=70000), 0)
    with pytest.raises(TypeError):
        encode_body(ApiVersionsResponse(api_keys=[1]), 0)  # type: ignore[list-item]


def test_fetch_records_stay_bytes() -> None:
    records = bytes(range(256)) * 10
    response = FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic_id=uuid.UUID(int=5), partitions=[FetchPartitionData(partition_index=1, records=records)]
            )
        ]
    )
    decoded = decode_response(1, 16, encode_response(response, version=16, correlation_id=1)[4:])
    assert decoded.responses[0].partitions[0].records == records
    assert decoded.responses[0].partitions[0].aborted_transactions == []


FUZZ_TARGETS = [(1, 4), (1, 18), (3, 0), (3, 12), (18, 0), (18, 3), (0, 13), (9, 10), (68, 1), (11, 9)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUZZ_TARGETS), st.binary(max_size=300))
def test_random_bytes_raise_only_protocol_error(target: tuple[int, int], data: bytes) -> None:
    api_key, version = target
    with contextlib.suppress(ProtocolError):
        decode_response(api_key, version, data)


def _valid_frames() -> list[tuple[int, int, bytes]]:
    frames = []
    for _request, response in APIS:
        for version in (response.MIN_VERSION, response.MAX_VERSION):
            message = populate(response, version, nulls=False, width=1)
            frames.append((response.API_KEY, version, encode_response(message, version=version, correlation_id=1)[4:]))
    return frames


VALID_FRAMES = _valid_frames()


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(VALID_FRAMES),
    st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutated_frames_raise_only_protocol_error(frame: tuple[int, int, bytes], edits: list[tuple[int, int]]) -> None:
    api_key, version, data = frame
    mutated = bytearray(data)
    for position, value in edits:
        mutated[position % len(mutated)] = value
    with contextlib.suppress(ProtocolError):
        decode_response(api_key, version, bytes(mutated))


def test_every_api_has_a_fuzz_frame() -> None:
    assert {key for key, _, _ in VALID_FRAMES} == {request.API_KEY for request, _ in APIS}
    assert all(isinstance(frame, bytes) for _, _, frame in itertools.islice(VALID_FRAMES, 3))
