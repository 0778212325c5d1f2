"""Property tests over every decoder that reads bytes from the wire: only ProtocolError may escape.

Inputs are random bytes and mutations (bit flips, inserts, deletes, hostile integers, truncation) of real
encodings, which reach far deeper into a decoder than random bytes do. ``MQWIRE_FUZZ_EXAMPLES`` sets the
examples per decoder: small by default so the normal run stays fast, large for ``make fuzz``.
"""

from __future__ import annotations

import itertools
import os
import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire.protocol import (
    UnsupportedRequestError,
    decode_batches,
    decode_request,
    decode_response,
    encode_batch,
    encode_request,
    encode_response,
)
from kafkawire.protocol.messages import APIS
from kafkawire.protocol.records import append_record_py
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
    Message,
    Primitive,
    Struct,
)
from mqwire.common.checksums import crc32c
from mqwire.common.errors import BrokerError, ProtocolError
from mqwire.common.framing import LengthPrefixedSplitter
from pulsarwire.protocol import batch as pulsar_batch
from pulsarwire.protocol import commands
from pulsarwire.protocol.frames import (
    PulsarFrameSplitter,
    _parse,
    decode_frame,
    encode_command,
    encode_payload_frame_raw,
)
from pulsarwire.protocol.metadata import encode_message_metadata, producer_name_field
from pulsarwire.protocol.pulsar_api_pb2 import (
    BaseCommand,
    BrokerEntryMetadata,
    CommandConnected,
    CommandMessage,
    CommandPartitionedTopicMetadataResponse,
    MessageIdData,
    MessageMetadata,
)
from pulsarwire.protocol.wire import key_values
from tubemqwire.protocol import metadata as tube_metadata
from tubemqwire.protocol import rpc
from tubemqwire.protocol.constants import Method
from tubemqwire.protocol.frames import TubeFrame, TubeFrameSplitter, encode_frame
from tubemqwire.protocol.master_service_pb2 import CloseRequestP2M, CloseResponseM2P, RegisterResponseM2P
from tubemqwire.protocol.messages import decode_payload, encode_payload

EXAMPLES = int(os.environ.get("MQWIRE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# Values that break length and count fields: sign bit, maximum, zero, off by one.
HOSTILE_U32 = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE]


# ================================================================================================ mutation
@st.composite
def mutated(draw: st.DrawFn, seeds: Sequence[bytes]) -> bytes:
    """A seed with a few byte-level edits."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.integers(0, 5))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == 0 and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == 2 and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif op == 3 and data:
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif op == 4 and len(data) >= 4:
            at = min(at, len(data) - 4)
            data[at : at + 4] = struct.pack(">I", draw(st.sampled_from(HOSTILE_U32)))
        else:
            del data[at:]
    return bytes(data)


def wire_input(seeds: Sequence[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=256), st.sampled_from(seeds), mutated(seeds), mutated(seeds))


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def feed_all(splitter: Any, data: bytes, cuts: list[int]) -> list[Any]:
    frames: list[Any] = []
    for chunk in chunked(data, cuts):
        frames.extend(splitter.feed(chunk))
    return frames


def only_protocol_errors(decode: Callable[[], object], allowed: tuple[type[BaseException], ...] = ()) -> None:
    # Anything but these escapes and fails the example (hypothesis then shrinks it).
    try:
        decode()
    except (ProtocolError, *allowed):
        pass


CUTS = st.lists(st.integers(0, 4096), max_size=6)


# ================================================================================================= common
def _length_prefixed(frames: Sequence[bytes]) -> bytes:
    return b"".join(struct.pack(">I", len(frame)) + frame for frame in frames)


SPLITTER_SEEDS = [_length_prefixed([b"abcd", b"", b"x" * 300]), _length_prefixed([b"\x00" * 8])]


@FUZZ
@given(data=wire_input(SPLITTER_SEEDS), cuts=CUTS)
def test_length_prefixed_splitter(data: bytes, cuts: list[int]) -> None:
    splitter = LengthPrefixedSplitter(1024, min_frame_size=4)
    only_protocol_errors(lambda: feed_all(splitter, data, cuts))
    # Never more than one incomplete frame (bounded by the maximum) is held.
    assert splitter.pending_bytes() <= 1024 + 4 + 3


@FUZZ
@given(frames=st.lists(st.binary(max_size=64), max_size=8), cuts=CUTS)
def test_length_prefixed_splitter_any_chunking_gives_the_same_frames(frames: list[bytes], cuts: list[int]) -> None:
    splitter = LengthPrefixedSplitter(1024)
    assert feed_all(splitter, _length_prefixed(frames), cuts) == frames
    assert splitter.pending_bytes() == 0


# ================================================================================================== Kafka
_SAMPLES: dict[Primitive, Any] = {
    BOOL: True,
    INT8: -3,
    INT16: 2,
    UINT16: 7,
    INT32: 3,
    UINT32: 5,
    INT64: -1,
    FLOAT64: 0.5,
    UUID: uuid.UUID(int=0x1234),
    STRING: "ab",
    BYTES: b"\x01\x02",
    RECORDS: b"",
}


def populate(cls: type[Struct], version: int, nulls: bool) -> Any:
    """An instance with a value in every field on the wire at ``version`` (two elements per array)."""
    values: dict[str, Any] = {}
    for spec in cls._fields:
        if not (spec.present(version) or spec.tagged_in(version)):
            continue
        if nulls and spec.nullable_in(version):
            values[spec.name] = None
        elif isinstance(spec.type, Primitive):
            values[spec.name] = _SAMPLES[spec.type]
        elif isinstance(spec.type, Array):
            element = spec.type.element
            if isinstance(element, Primitive):
                values[spec.name] = [_SAMPLES[element]] * 2
            else:
                values[spec.name] = [populate(element, version, nulls) for _ in range(2)]
        else:
            values[spec.name] = populate(spec.type, version, nulls)
    return cls(**values)


def _kafka_versions(cls: type[Message]) -> list[int]:
    return sorted({cls.MIN_VERSION, cls.MAX_VERSION})


RESPONSE_CASES = [
    pytest.param(response, version, id=f"{response.__name__}-v{version}")
    for _, response in APIS
    for version in _kafka_versions(response)
]


@pytest.mark.parametrize(("cls", "version"), RESPONSE_CASES)
def test_kafka_decode_response(cls: type[Message], version: int) -> None:
    seeds = [
        encode_response(message, version=version, correlation_id=7)[4:]
        for message in (cls(), populate(cls, version, nulls=False), populate(cls, version, nulls=True))
    ]

    @FUZZ
    @given(data=wire_input(seeds))
    def check(data: bytes) -> None:
        only_protocol_errors(lambda: decode_response(cls.API_KEY, version, data))

    check()


REQUEST_SEEDS = [
    encode_request(populate(request, version, nulls=nulls), version=version, correlation_id=3, client_id=client)[4:]
    for request, _ in APIS
    for version in _kafka_versions(request)
    for nulls, client in ((False, "mqwire"), (True, None))
]


@FUZZ
@given(data=wire_input(REQUEST_SEEDS))
def test_kafka_decode_request(data: bytes) -> None:
    # An unknown API key or version is reported as such (carrying the header), by design.
    only_protocol_errors(lambda: decode_request(data), (UnsupportedRequestError,))


def _batch(compression: str | None, base_offset: int = 0) -> bytes:
    records = [
        (1_700_000_000_000, b"key", b"value" * 3, [("h", b"v"), ("n", None)]),
        (1_700_000_000_005, None, None, []),
        (1_699_999_999_000, b"", b"x" * 200, [("long-header-name" * 8, b"\x00" * 150)]),
    ]
    return encode_batch(records, base_offset=base_offset, compression=compression)


BATCH_SEEDS = [
    _batch(None),
    _batch("gzip", 10),
    _batch("snappy"),
    _batch("lz4"),
    _batch("zstd"),
    _batch(None) + _batch(None, 3),
    encode_batch([(0, None, b"", [])], producer_id=5, producer_epoch=1, base_sequence=0, transactional=True),
]


@FUZZ
@given(data=wire_input(BATCH_SEEDS), verify_crc=st.booleans())
def test_kafka_decode_batches(data: bytes, verify_crc: bool) -> None:
    # Without the CRC check the mutations reach the record decoder and the decompressors.
    only_protocol_errors(lambda: decode_batches(data, verify_crc=verify_crc, max_uncompressed_size=1 << 20))


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# The whole range of each field, its limits drawn often: base offsets and timestamps are int64s, offset
# deltas int32s, timestamp deltas int64s.
INT64S = st.one_of(
    st.sampled_from([INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX]), st.integers(INT64_MIN, INT64_MAX)
)
INT32S = st.one_of(st.sampled_from([-(2**31), -1, 0, 1, 2**31 - 1]), st.integers(-(2**31), 2**31 - 1))


def _raw_batch(base_offset: int, base_timestamp: int, log_append: bool, rows: list[tuple[int, int]]) -> bytes:
    """A batch as a broker could send it, header fields and deltas as drawn, with a correct CRC."""
    body = bytearray()
    for offset_delta, timestamp_delta in rows:
        append_record_py(body, -1, offset_delta, timestamp_delta, b"k", b"v", [])
    attributes = 0x08 if log_append else 0
    tail = struct.pack(">hiqqqhii", attributes, len(rows) - 1, base_timestamp, base_timestamp, -1, -1, -1, len(rows))
    crc = crc32c(tail + body)
    return struct.pack(">qiibI", base_offset, 49 + len(body), 0, 2, crc) + tail + body


@FUZZ
@given(
    base_offset=INT64S,
    base_timestamp=INT64S,
    log_append=st.booleans(),
    rows=st.lists(st.tuples(INT32S, INT64S), min_size=1, max_size=4),
)
def test_kafka_record_offsets_and_timestamps_at_the_int64_limits(
    base_offset: int, base_timestamp: int, log_append: bool, rows: list[tuple[int, int]]
) -> None:
    # Every offset and timestamp is the exact sum, inside int64; a record whose sum passes it is refused, and
    # so is a batch whose header puts its end (the offset a fetch goes on from) past int64.
    data = _raw_batch(base_offset, base_timestamp, log_append, rows)
    try:
        (batch,) = decode_batches(data)
    except ProtocolError:
        sums = [(base_offset + od, base_timestamp + td) for od, td in rows]
        past_end = base_offset + len(rows) - 1 >= INT64_MAX  # the header's last offset delta is len(rows) - 1
        assert past_end or any(
            not INT64_MIN <= o <= INT64_MAX or not (log_append or INT64_MIN <= t <= INT64_MAX) for o, t in sums
        )
        return
    for record, (offset_delta, timestamp_delta) in zip(batch.records, rows, strict=True):
        assert record.offset == base_offset + offset_delta
        assert record.timestamp == (base_timestamp if log_append else base_timestamp + timestamp_delta)


# ================================================================================================= Pulsar
def _pulsar_payload_frame(*, entry: bool, batch: bool) -> bytes:
    command = BaseCommand(
        type=BaseCommand.MESSAGE,
        message=CommandMessage(consumer_id=1, message_id=MessageIdData(ledgerId=4, entryId=5)),
    )
    payload = _pulsar_batch_payload() if batch else b"hello"
    metadata = encode_message_metadata(
        producer_name_field("p"),
        1,
        2,
        properties=key_values(b"\x22", [(b"k", b"v")]),
        num_messages_in_batch=3 if batch else None,
        partition_key=b"pk",
    )
    entry_metadata = BrokerEntryMetadata(broker_timestamp=9, index=3).SerializeToString() if entry else None
    return encode_payload_frame_raw(
        command.SerializeToString(), metadata, payload, broker_entry_metadata=entry_metadata
    )


def _pulsar_batch_payload() -> bytes:
    return pulsar_batch.encode_batch(
        [
            pulsar_batch.encode_entry(
                b"one", properties=key_values(pulsar_batch.PROPERTIES_TAG, [(b"a", b"b")]), partition_key=b"k"
            ),
            pulsar_batch.encode_entry(b"", event_time=7, sequence_id=9, ordering_key=b"o", null_value=True),
            pulsar_batch.encode_entry(b"three" * 40, partition_key_b64_encoded=True),
        ]
    )


def _connected() -> bytes:
    connected = CommandConnected(server_version="fake", protocol_version=21, max_message_size=1 << 20)
    return encode_command(BaseCommand(type=BaseCommand.CONNECTED, connected=connected))


def _metadata_answer() -> bytes:
    body = CommandPartitionedTopicMetadataResponse(partitions=3, request_id=11, message="ok")
    return encode_command(BaseCommand(type=BaseCommand.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=body))


PULSAR_STREAMS = [
    _connected(),
    _metadata_answer(),
    encode_command(commands.ping()),
    _pulsar_payload_frame(entry=False, batch=False),
    _pulsar_payload_frame(entry=True, batch=True),
]
# decode_frame takes a frame without its totalSize.
PULSAR_FRAMES = [frame[4:] for frame in PULSAR_STREAMS]


@FUZZ
@given(data=wire_input(PULSAR_FRAMES), require_checksum=st.booleans())
def test_pulsar_decode_frame(data: bytes, require_checksum: bool) -> None:
    only_protocol_errors(lambda: decode_frame(data, require_checksum=require_checksum))


@FUZZ
@given(data=wire_input([b"".join(PULSAR_STREAMS), *PULSAR_STREAMS]), cuts=CUTS)
def test_pulsar_frame_splitter(data: bytes, cuts: list[int]) -> None:
    splitter = PulsarFrameSplitter(64 * 1024)
    only_protocol_errors(lambda: feed_all(splitter, data, cuts))
    assert splitter.pending_bytes() <= 64 * 1024 + 4


def _response_request_id(data: bytes) -> None:
    # What the connection does with every frame before dispatching it.
    commands.response_request_id(decode_frame(data).command)


@FUZZ
@given(data=wire_input(PULSAR_FRAMES))
def test_pulsar_response_request_id(data: bytes) -> None:
    only_protocol_errors(lambda: _response_request_id(data))


BATCH_PAYLOAD = _pulsar_batch_payload()


@FUZZ
@given(data=wire_input([BATCH_PAYLOAD]), count=st.one_of(st.just(3), st.integers(-1, 8)))
def test_pulsar_decode_batch(data: bytes, count: int) -> None:
    only_protocol_errors(lambda: pulsar_batch.decode_batch(data, count))


COMPRESSED = {code: pulsar_batch.compress_payload(code, BATCH_PAYLOAD) for code in range(5)}


@FUZZ
@given(
    code=st.integers(0, 6),
    data=wire_input(list(COMPRESSED.values())),
    size=st.one_of(st.just(len(BATCH_PAYLOAD)), st.integers(-1, 1 << 21)),
)
def test_pulsar_decompress_payload(code: int, data: bytes, size: int) -> None:
    only_protocol_errors(lambda: pulsar_batch.decompress_payload(code, data, size, 1 << 20))


METADATA_SEEDS = [
    encode_message_metadata(producer_name_field("p"), 1, 2),
    encode_message_metadata(
        producer_name_field("producer-é"),
        2**40,
        1_700_000_000_000,
        properties=key_values(b"\x22", [(b"k", b"v"), (b"", b"")]),
        partition_key=b"key",
        compression=3,
        uncompressed_size=100,
        num_messages_in_batch=4,
        event_time=5,
        partition_key_b64_encoded=True,
        ordering_key=b"o",
        deliver_at_time=6,
        highest_sequence_id=7,
        null_value=True,
        uuid="u",
        num_chunks_from_msg=2,
        total_chunk_msg_size=10,
        chunk_id=1,
    ),
]


@FUZZ
@given(data=wire_input(METADATA_SEEDS))
def test_pulsar_message_metadata(data: bytes) -> None:
    only_protocol_errors(lambda: _parse(MessageMetadata, memoryview(data), "MessageMetadata"))


# ================================================================================================= TubeMQ
def _tube_payload(frame: bytes) -> bytes:
    (decoded,) = TubeFrameSplitter().feed(frame)
    return decoded.payload


TUBE_STREAMS = [
    rpc.encode_request(1, 1, Method.MASTER_PRODUCER_CLOSE, CloseRequestP2M(clientId="c")),
    rpc.encode_response(2, Method.MASTER_PRODUCER_CLOSE, CloseResponseM2P(success=True, errCode=200, errMsg="OK")),
    rpc.encode_response(
        3,
        Method.MASTER_PRODUCER_REGISTER,
        RegisterResponseM2P(success=True, errCode=200, errMsg="OK", brokerCheckSum=1),
    ),
    rpc.encode_exception(4, "org.apache.inlong.tubemq.corebase.TErrCodeConstants", "standby"),
    encode_frame(5, b"z" * 9000),  # two blocks
]
TUBE_PAYLOADS = [_tube_payload(frame) for frame in TUBE_STREAMS]


@FUZZ
@given(data=wire_input([b"".join(TUBE_STREAMS), *TUBE_STREAMS]), cuts=CUTS)
def test_tubemq_frame_splitter(data: bytes, cuts: list[int]) -> None:
    splitter = TubeFrameSplitter(max_list_size=4, max_block_size=8192, max_frame_bytes=16384)
    only_protocol_errors(lambda: feed_all(splitter, data, cuts))
    assert splitter.pending_bytes() <= 16384 + 12 + 4 * 8 + 8192


@FUZZ
@given(data=wire_input(TUBE_PAYLOADS))
def test_tubemq_decode_response(data: bytes) -> None:
    # An exception body is raised as the broker error its class name maps to, by design.
    def decode() -> None:
        rpc.parse_response(rpc.decode_response(TubeFrame(1, data)))

    only_protocol_errors(decode, (BrokerError,))


@FUZZ
@given(data=wire_input(TUBE_PAYLOADS))
def test_tubemq_decode_request(data: bytes) -> None:
    only_protocol_errors(lambda: rpc.decode_request(TubeFrame(1, data)))


PAYLOAD_SEEDS = [encode_payload(b"data", "$msgType$=t,$msgTime$=202401020304,k=v")[1], b"\x00\x00\x00\x00"]


@FUZZ
@given(flag=st.integers(0, 3), data=wire_input(PAYLOAD_SEEDS))
def test_tubemq_decode_payload(flag: int, data: bytes) -> None:
    only_protocol_errors(lambda: decode_payload(flag, data))


@st.composite
def mutated_text(draw: st.DrawFn, seeds: Sequence[str]) -> str:
    text = draw(st.sampled_from(seeds))
    pieces = st.sampled_from(["#", ":", ",", "@", " ", "-", "0", "99999999999", "-1", "\t", "é", "\x00", ""])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        stop = at + draw(st.integers(0, 3))
        text = text[:at] + draw(pieces) + text[stop:]
    return text


def text_input(seeds: Sequence[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=64),
        st.text(alphabet="0123456789abc#:,@ -", max_size=64),
        st.sampled_from(seeds),
        mutated_text(seeds),
    )


METADATA_PARSERS: list[tuple[str, Callable[[str], object], list[str]]] = [
    ("broker_info", tube_metadata.parse_broker_info, ["1:127.0.0.1:8123", "7:host: "]),
    ("topic_info", tube_metadata.parse_topic_info, ["t#1:3:2,2:1:1#1048576", "t#1:3:2#"]),
    ("partition", tube_metadata.parse_partition, ["1:h:8123#t:2"]),
    ("partition_key", tube_metadata.parse_partition_key, ["1:t:2"]),
    ("subscribe_info", tube_metadata.parse_subscribe_info, ["c1@g#1:h:8123#t:2"]),
]


@pytest.mark.parametrize(
    ("parse", "seeds"), [pytest.param(parse, seeds, id=name) for name, parse, seeds in METADATA_PARSERS]
)
def test_tubemq_metadata_parsers(parse: Callable[[str], object], seeds: list[str]) -> None:
    @FUZZ
    @given(text=text_input(seeds))
    def check(text: str) -> None:
        only_protocol_errors(lambda: parse(text))

    check()
