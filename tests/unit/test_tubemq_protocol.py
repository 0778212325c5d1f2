"""The TubeMQ protocol layer with bytes alone: frames around the block size, the RPC envelope, message
payloads, metadata strings and the producer's master calls."""

from __future__ import annotations

import contextlib
import struct
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqwire.common.errors import (
    AuthenticationError,
    BrokerError,
    ChecksumError,
    FatalBrokerError,
    FrameTooLargeError,
    ProtocolError,
    RetriableBrokerError,
)
from tubemqwire import errors
from tubemqwire.protocol import broker_service_pb2 as broker
from tubemqwire.protocol import master_service_pb2 as master
from tubemqwire.protocol import messages, metadata, producer, rpc
from tubemqwire.protocol.constants import BLOCK_SIZE, MAX_LIST_SIZE, ErrorCode, Method, ServiceType
from tubemqwire.protocol.frames import TubeFrame, TubeFrameSplitter, encode_frame

SIZES = [0, 1, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 3 * BLOCK_SIZE + 5]


def pattern(size: int) -> bytes:
    return bytes((i * 7 + size) % 251 for i in range(size))


def blocks_of(frame: bytes) -> list[int]:
    token, _, count = struct.unpack_from(">IIi", frame)
    assert token == 0xFF7FF4FE
    lengths, position = [], 12
    for _ in range(count):
        (length,) = struct.unpack_from(">i", frame, position)
        lengths.append(length)
        position += 4 + length
    assert position == len(frame)
    return lengths


# ------------------------------------------------------------------------------------------------ frames
@pytest.mark.parametrize("size", SIZES)
def test_frame_round_trip_around_block_boundaries(size: int) -> None:
    payload = pattern(size)
    data = encode_frame(0xFFFFFFFF, payload)
    lengths = blocks_of(data)
    assert sum(lengths) == size
    assert all(0 < n <= BLOCK_SIZE for n in lengths) or lengths == [0]
    assert lengths[:-1] == [BLOCK_SIZE] * (len(lengths) - 1)
    splitter = TubeFrameSplitter()
    assert splitter.feed(data) == [TubeFrame(0xFFFFFFFF, payload)]
    assert splitter.pending_bytes() == 0


def test_frame_header_golden_bytes() -> None:
    assert encode_frame(5, b"ab") == bytes.fromhex("ff7ff4fe 00000005 00000001 00000002 6162")
    # An empty payload is one empty block: the Java decoder cannot read a frame of no blocks.
    assert encode_frame(1, b"") == bytes.fromhex("ff7ff4fe 00000001 00000001 00000000")
    assert blocks_of(encode_frame(1, pattern(BLOCK_SIZE + 1))) == [BLOCK_SIZE, 1]


def test_splitter_at_every_byte_boundary() -> None:
    payloads = [pattern(n) for n in SIZES]
    encoded = [encode_frame(serial, p) for serial, p in enumerate(payloads)]
    stream = b"".join(encoded)
    expected = [TubeFrame(serial, p) for serial, p in enumerate(payloads)]
    for cut in range(len(stream) + 1):
        splitter = TubeFrameSplitter()
        frames = splitter.feed(stream[:cut])
        assert splitter.pending_bytes() == cut - sum(len(encoded[f.serial]) for f in frames)
        frames += splitter.feed(stream[cut:])
        assert frames == expected, cut
        assert splitter.pending_bytes() == 0


def test_splitter_one_byte_at_a_time() -> None:
    payloads = [pattern(n) for n in SIZES]
    stream = b"".join(encode_frame(serial, p) for serial, p in enumerate(payloads))
    splitter = TubeFrameSplitter()
    frames: list[TubeFrame] = []
    for index in range(len(stream)):
        frames += splitter.feed(stream[index : index + 1])
    assert frames == [TubeFrame(serial, p) for serial, p in enumerate(payloads)]
    assert splitter.pending_bytes() == 0


def test_empty_list_is_an_empty_frame() -> None:
    splitter = TubeFrameSplitter()
    assert splitter.feed(struct.pack(">IIi", 0xFF7FF4FE, 3, 0)) == [TubeFrame(3, b"")]


def test_wrong_token() -> None:
    splitter = TubeFrameSplitter()
    with pytest.raises(ProtocolError):
        splitter.feed(struct.pack(">IIi", 0xFF7FF4FF, 1, 1))
    assert splitter.pending_bytes() == 0


@pytest.mark.parametrize("count", [MAX_LIST_SIZE + 1, -1, 2**31 - 1])
def test_oversize_list_is_refused_on_the_header_alone(count: int) -> None:
    splitter = TubeFrameSplitter()
    # Only the 12 header bytes: the error must come before any block is waited for.
    with pytest.raises(ProtocolError):
        splitter.feed(struct.pack(">IIi", 0xFF7FF4FE, 1, count))
    assert splitter.pending_bytes() == 0


@pytest.mark.parametrize("length", [BLOCK_SIZE + 1, -5, 2**31 - 1])
def test_oversize_block_is_refused_on_its_length_alone(length: int) -> None:
    splitter = TubeFrameSplitter()
    with pytest.raises(ProtocolError):
        splitter.feed(struct.pack(">IIii", 0xFF7FF4FE, 1, 2, length))
    assert splitter.pending_bytes() == 0


def test_total_frame_size_limit() -> None:
    splitter = TubeFrameSplitter(max_frame_bytes=10_000)
    data = encode_frame(1, pattern(10_001))
    with pytest.raises(FrameTooLargeError):
        splitter.feed(data)
    assert TubeFrameSplitter(max_frame_bytes=10_001).feed(data)[0].payload == pattern(10_001)


def test_configured_limits() -> None:
    with pytest.raises(ProtocolError):
        TubeFrameSplitter(max_list_size=2).feed(encode_frame(1, pattern(3 * BLOCK_SIZE)))
    with pytest.raises(ProtocolError):
        TubeFrameSplitter(max_block_size=100).feed(encode_frame(1, pattern(101)))
    with pytest.raises(ValueError):
        TubeFrameSplitter(max_list_size=0)


def test_pending_bytes_mid_frame() -> None:
    data = encode_frame(1, pattern(BLOCK_SIZE + 10))
    splitter = TubeFrameSplitter()
    assert splitter.feed(data[:20]) == []
    assert splitter.pending_bytes() == 20
    assert splitter.feed(data[20 : BLOCK_SIZE + 20]) == []
    assert splitter.pending_bytes() == BLOCK_SIZE + 20
    assert len(splitter.feed(data[BLOCK_SIZE + 20 :])) == 1


@settings(max_examples=400, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_random_chunks_into_the_splitter(chunks: list[bytes]) -> None:
    splitter = TubeFrameSplitter(max_list_size=16, max_frame_bytes=4096)
    with contextlib.suppress(ProtocolError):
        for chunk in chunks:
            splitter.feed(chunk)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_after_a_valid_header(tail: bytes) -> None:
    splitter = TubeFrameSplitter(max_list_size=16, max_frame_bytes=4096)
    with contextlib.suppress(ProtocolError):
        splitter.feed(struct.pack(">IIi", 0xFF7FF4FE, 1, 3) + tail)


# --------------------------------------------------------------------------------------------------- RPC
def test_request_golden_bytes() -> None:
    data = rpc.encode_request(1, ServiceType.MASTER, Method.MASTER_PRODUCER_REGISTER, b"")
    stream = bytes.fromhex(
        "02 0800"  # RpcConnHeader{flag: 0}
        " 04 0801 1003"  # RequestHeader{serviceType: 1, protocolVer: 3}
        " 07 0801 10904e 1a00"  # RequestBody{method: 1, timeout: 10000, request: ""}
    )
    assert data == bytes.fromhex("ff7ff4fe 00000001 00000001") + struct.pack(">I", len(stream)) + stream


def test_request_round_trip_straddling_blocks() -> None:
    request = broker.SendMessageRequestP2B(
        clientId="c", topicName="t", partitionId=1, data=pattern(3 * BLOCK_SIZE), flag=0, checkSum=-1, sentAddr=1
    )
    method = Method.BROKER_PRODUCER_SEND_MESSAGE
    data = rpc.encode_request(77, ServiceType.BROKER_WRITE, method, request, timeout_ms=500)
    assert len(blocks_of(data)) == 4
    frames = TubeFrameSplitter().feed(data)
    decoded = rpc.decode_request(frames[0])
    assert (decoded.serial, decoded.service_type, decoded.method) == (77, 3, 13)
    assert (decoded.protocol_version, decoded.timeout_ms) == (3, 500)
    assert rpc.parse_message(broker.SendMessageRequestP2B, decoded.request) == request


def test_request_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError):
        rpc.encode_request(1, ServiceType.MASTER, 1, b"", timeout_ms=0)


def test_response_round_trip() -> None:
    answer = master.RegisterResponseM2P(success=True, errCode=200, errMsg="OK!", brokerCheckSum=5)
    frames = TubeFrameSplitter().feed(rpc.encode_response(8, Method.MASTER_PRODUCER_REGISTER, answer))
    response = rpc.decode_response(frames[0])
    assert (response.serial, response.method) == (8, 1)
    assert rpc.parse_response(response) == answer


@pytest.mark.parametrize(
    ("name", "cls", "retriable"),
    [
        ("org.apache.inlong.tubemq.corerpc.exception.StandbyException", errors.MasterStandbyError, True),
        ("com.apache.tubemq.corerpc.exception.StandbyException", errors.MasterStandbyError, True),
        ("org.apache.inlong.tubemq.corerpc.exception.ServiceStoppingException", errors.ServiceStoppingError, True),
        ("org.apache.inlong.tubemq.corerpc.exception.UnknownProtocolException", errors.UnknownProtocolError, False),
        ("java.lang.Exception", errors.RemoteServerError, False),
    ],
)
def test_exception_answers_raise_typed_errors(name: str, cls: type[BrokerError], retriable: bool) -> None:
    frame = TubeFrameSplitter().feed(rpc.encode_exception(4, name, "the reason"))[0]
    with pytest.raises(cls) as caught:
        rpc.decode_response(frame)
    assert type(caught.value) is cls
    assert caught.value.retriable is retriable
    assert caught.value.code == name
    assert "the reason" in str(caught.value)


def test_truncated_envelopes() -> None:
    full = rpc.encode_response(8, 1, master.CloseResponseM2P(success=True, errCode=200, errMsg="OK"))
    payload = TubeFrameSplitter().feed(full)[0].payload
    for end in range(len(payload)):
        with pytest.raises(ProtocolError):
            rpc.decode_response(TubeFrame(8, payload[:end]))
    with pytest.raises(ProtocolError):
        rpc.decode_response(TubeFrame(1, b"\xff\xff\xff\xff\xff\x01"))
    with pytest.raises(ProtocolError):
        rpc.parse_response(rpc.RpcResponse(1, 99, b""))
    with pytest.raises(ProtocolError, match="errCode"):
        rpc.parse_message(master.CloseResponseM2P, master.CloseResponseM2P(success=True).SerializePartialToString())


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_into_the_rpc_decoders(raw: bytes) -> None:
    frame = TubeFrame(1, raw)
    # An exception body is a BrokerError by design; anything else malformed is a ProtocolError.
    with contextlib.suppress(ProtocolError, BrokerError):
        rpc.parse_response(rpc.decode_response(frame))
    with contextlib.suppress(ProtocolError):
        rpc.decode_request(frame)


# ---------------------------------------------------------------------------------------------- messages
def test_payload_round_trip_with_attribute() -> None:
    attribute = messages.format_attributes({"k": "v", "ü": "ß"}, msg_type="orders", msg_time="202401020304")
    assert attribute == "$msgType$=orders,$msgTime$=202401020304,k=v,ü=ß"
    flag, payload = messages.encode_payload(b"data", attribute)
    assert flag == 1
    assert payload[:4] == struct.pack(">i", len(attribute.encode()))
    assert messages.decode_payload(flag, payload) == (attribute, b"data")
    stored = broker.TransferedMessage(messageId=42, checkSum=messages.checksum(payload), payLoadData=payload, flag=flag)
    received = messages.decode_message(stored)
    assert received.data == b"data"
    assert received.attributes == {"k": "v", "ü": "ß"}
    assert (received.msg_type, received.msg_time, received.message_id) == ("orders", "202401020304", 42)


def test_payload_without_attribute() -> None:
    assert messages.encode_payload(b"data") == (0, b"data")
    assert messages.encode_payload(b"data", "") == (0, b"data")
    assert messages.decode_payload(0, b"data") == (None, b"data")
    assert messages.decode_payload(1, struct.pack(">i", 0) + b"x") == ("", b"x")


def test_checksum_is_masked_crc32() -> None:
    # CRC-32 of "123456789" is 0xCBF43926; the sign bit is cleared.
    assert messages.checksum(b"123456789") == 0xCBF43926 & 0x7FFFFFFF
    flag, payload = messages.encode_payload(b"data", "a=b")
    wrong = messages.checksum(payload) ^ 1
    stored = broker.TransferedMessage(messageId=1, checkSum=wrong, payLoadData=payload, flag=flag)
    with pytest.raises(ChecksumError):
        messages.decode_message(stored)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00\x00\x00",
        struct.pack(">i", 5) + b"abcd",
        struct.pack(">i", -1) + b"x",
        struct.pack(">i", 2) + b"\xff\xfe",
    ],
)
def test_bad_attribute_headers(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        messages.decode_payload(1, payload)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=3), st.binary(max_size=64))
def test_random_payloads_only_raise_protocol_error(flag: int, payload: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        messages.decode_payload(flag, payload)


@pytest.mark.parametrize(
    ("kwargs", "attributes"),
    [
        ({}, {"a,b": "c"}),
        ({}, {"a": "b=c"}),
        ({}, {"": "x"}),
        ({}, {"a": " "}),
        ({}, {"$msgType$": "x"}),
        ({"msg_type": "a,b"}, {}),
        ({"msg_time": "2024010203"}, {}),
        ({"msg_time": "202413010000"}, {}),
    ],
)
def test_attribute_values_the_format_cannot_carry(kwargs: dict[str, str], attributes: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        messages.format_attributes(attributes, **kwargs)


def test_attribute_parsing_is_lenient_like_the_java_client() -> None:
    assert messages.parse_attributes("a=1,,b=2,junk,=3,c=") == {"a": "1", "b": "2", "c": ""}


def test_msg_time_and_addresses() -> None:
    assert messages.format_msg_time(datetime(2024, 1, 2, 3, 4, 59)) == "202401020304"
    assert messages.parse_msg_time("202401020304") == datetime(2024, 1, 2, 3, 4)
    assert messages.ipv4_to_int32("127.0.0.1") == 0x7F000001
    assert messages.ipv4_to_int32("192.168.1.1") == 0xC0A80101 - 2**32
    assert messages.int32_to_ipv4(0xC0A80101 - 2**32) == "192.168.1.1"


# ---------------------------------------------------------------------------------------------- metadata
def test_broker_info() -> None:
    assert metadata.parse_broker_info("1:127.0.0.1:8123") == metadata.BrokerInfo(1, "127.0.0.1", 8123)
    # The master leaves the port blank when the broker uses the default one.
    assert metadata.parse_broker_info("2:10.0.0.2: ").port == 8123
    assert metadata.parse_broker_info("2:10.0.0.2: ", default_port=8124).port == 8124
    assert metadata.parse_broker_info("3:host").port == 8123
    assert str(metadata.parse_broker_info("1:h:9000")) == "1:h:9000"


@pytest.mark.parametrize("text", ["", "1", "x:h:1", "1::1", "1:h:0", "1:h:70000", "1:h:p", "1:h:1:2", "-1:h:1"])
def test_bad_broker_info(text: str) -> None:
    with pytest.raises(ProtocolError):
        metadata.parse_broker_info(text)


def test_topic_info() -> None:
    info = metadata.parse_topic_info("orders#1:3:1,2:2:2#1048576")
    assert info.topic == "orders"
    assert info.max_message_size == 1048576
    assert info.brokers == (metadata.TopicOnBroker(1, 3, 1), metadata.TopicOnBroker(2, 2, 2))
    assert info.brokers[1].partition_ids() == [0, 1, 10000, 10001]
    assert metadata.parse_topic_info("orders#1:3:1#").max_message_size is None
    assert metadata.parse_topic_info("orders#1:3:1").max_message_size is None


@pytest.mark.parametrize(
    "text", ["orders", "orders#", "#1:3:1", "orders#1:3", "orders#1:x:1", "orders#1:3:1#big", "a#1:1:1#1#2"]
)
def test_bad_topic_info(text: str) -> None:
    with pytest.raises(ProtocolError):
        metadata.parse_topic_info(text)


def test_subscribe_info_and_partitions() -> None:
    text = "group1_10.0.0.1-123-1700000000000-1-Push-2.4.0@group1#1:10.0.0.2:8123#orders:10001"
    info = metadata.parse_subscribe_info(text)
    assert info.consumer_id == "group1_10.0.0.1-123-1700000000000-1-Push-2.4.0"
    assert info.group == "group1"
    assert info.partition == metadata.PartitionInfo(metadata.BrokerInfo(1, "10.0.0.2", 8123), "orders", 10001)
    assert info.partition.key == "1:orders:10001"
    assert str(info) == text
    assert metadata.parse_partition("1:10.0.0.2:8123#orders:10001") == info.partition
    assert metadata.parse_partition_key("1:orders:10001") == (1, "orders", 10001)


@pytest.mark.parametrize(
    "text",
    [
        "c@g-1:h:8123-orders:1",  # the hyphenated form of the .proto comments is not what servers send
        "c#1:h:8123#orders:1",
        "c@g@x#1:h:8123#orders:1",
        "c@#1:h:8123#orders:1",
        "c@g#1:h:8123#orders",
        "c@g#1:h:8123#orders:one",
        "c@g#h:8123#orders:1",
        "c@g#1:h:8123#orders:1#extra",
    ],
)
def test_bad_subscribe_info(text: str) -> None:
    with pytest.raises(ProtocolError):
        metadata.parse_subscribe_info(text)


@pytest.mark.parametrize("text", ["1:orders", "x:orders:1", "1:orders:1:2", "1::1"])
def test_bad_partition_key(text: str) -> None:
    with pytest.raises(ProtocolError):
        metadata.parse_partition_key(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789:#,@-abc. ", max_size=40))
def test_random_metadata_strings_only_raise_protocol_error(text: str) -> None:
    for parse in (
        metadata.parse_broker_info,
        metadata.parse_topic_info,
        metadata.parse_partition,
        metadata.parse_partition_key,
        metadata.parse_subscribe_info,
    ):
        with contextlib.suppress(ProtocolError):
            parse(text)


# ------------------------------------------------------------------------------------ producer register
def test_producer_register_request() -> None:
    request = producer.register_request(
        "10.0.0.1-42-1-1-mqwire", ["orders", " orders ", "", "audit"], "10.0.0.1", client_description="python-3.11"
    )
    assert request.IsInitialized()
    assert list(request.topicList) == ["audit", "orders"]
    assert request.brokerCheckSum == -1
    assert request.appdConfig.configId == -2
    assert request.jdkVersion == "python-3.11"
    assert not request.HasField("authInfo")
    frame = TubeFrameSplitter().feed(producer.encode_register(3, request))[0]
    decoded = rpc.decode_request(frame)
    assert (decoded.service_type, decoded.method, decoded.timeout_ms) == (1, 1, 10_000)
    assert rpc.parse_message(master.RegisterRequestP2M, decoded.request) == request


def test_producer_register_request_validation() -> None:
    with pytest.raises(ValueError):
        producer.register_request(" ", ["t"], "10.0.0.1")
    with pytest.raises(ValueError):
        producer.register_request("id", ["t"], "")
    with pytest.raises(ValueError):
        producer.register_request("id", [f"t{i}" for i in range(1025)], "10.0.0.1")


def test_producer_register_response() -> None:
    answer = master.RegisterResponseM2P(
        success=True,
        errCode=200,
        errMsg="OK!",
        brokerCheckSum=1234,
        brokerInfos=["1:127.0.0.1: ", "2:10.0.0.2:8200"],
        authorizedInfo=master.MasterAuthorizedInfo(visitAuthorizedToken=99),
        appdConfig=master.ApprovedClientConfig(configId=7, maxMsgSize=2048),
    )
    frame = TubeFrameSplitter().feed(rpc.encode_response(3, Method.MASTER_PRODUCER_REGISTER, answer))[0]
    result = producer.parse_register_response(rpc.decode_response(frame).data)
    assert result.success and result.err_code == ErrorCode.SUCCESS
    assert result.broker_checksum == 1234
    assert result.brokers == (metadata.BrokerInfo(1, "127.0.0.1", 8123), metadata.BrokerInfo(2, "10.0.0.2", 8200))
    assert (result.visit_token, result.auth_token) == (99, None)
    assert (result.config_id, result.max_message_size) == (7, 2048)


def test_producer_register_failure_is_data() -> None:
    answer = master.RegisterResponseM2P(success=False, errCode=401, errMsg="bad user", brokerCheckSum=-1)
    result = producer.parse_register_response(answer.SerializeToString())
    assert not result.success and result.brokers == ()
    error = errors.error_for_code(result.err_code, result.err_msg)
    assert isinstance(error, errors.UnauthorizedError) and isinstance(error, AuthenticationError)


def test_producer_heartbeat_and_close() -> None:
    request = producer.heartbeat_request("id", ["orders"], "10.0.0.1", broker_checksum=1234)
    assert request.IsInitialized()
    answer = master.HeartResponseM2P(
        success=True, errCode=200, errMsg="OK", brokerCheckSum=1234, topicInfos=["orders#1:3:1#", ""]
    )
    result = producer.parse_heartbeat_response(answer.SerializeToString())
    assert result.brokers == ()
    assert result.topics == (metadata.TopicInfo("orders", (metadata.TopicOnBroker(1, 3, 1),)),)
    close = producer.close_request("id")
    frame = TubeFrameSplitter().feed(producer.encode_close(4, close))[0]
    assert rpc.decode_request(frame).method == Method.MASTER_PRODUCER_CLOSE
    reply = master.CloseResponseM2P(success=True, errCode=200, errMsg="OK").SerializeToString()
    assert producer.parse_close_response(reply) == (True, 200, "OK")


# ------------------------------------------------------------------------------------------------ errors
def test_every_error_code_maps_to_a_named_exception() -> None:
    for code in ErrorCode:
        if code is ErrorCode.SUCCESS:
            continue
        error = errors.error_for_code(code, "why")
        assert type(error) is not errors.UnknownErrorCodeError, code
        assert error.code == code and str(error) == "why"
        assert isinstance(error, RetriableBrokerError | FatalBrokerError)
    assert type(errors.error_for_code(777, "")) is errors.UnknownErrorCodeError


@pytest.mark.parametrize(
    ("code", "retriable"),
    [
        (ErrorCode.HB_NO_NODE, True),
        (ErrorCode.PARTITION_OCCUPIED, True),
        (ErrorCode.NO_PARTITION_ASSIGNED, True),
        (ErrorCode.CERTIFICATE_FAILURE, False),
        (ErrorCode.TOPIC_NOT_DEPLOYED, False),
        (ErrorCode.BAD_REQUEST, False),
        (ErrorCode.SERVICE_UNAVAILABLE, True),
    ],
)
def test_error_code_retriability(code: int, retriable: bool) -> None:
    assert errors.error_for_code(code, "").retriable is retriable


def test_invalid_utf8_in_a_string_field() -> None:
    answer = master.RegisterResponseM2P(success=True, errCode=200, errMsg="OK", brokerCheckSum=1, brokerInfos=["A"])
    broken = answer.SerializeToString().replace(b"\x2a\x01A", b"\x2a\x01\xff")
    with pytest.raises(ProtocolError, match="brokerInfos"):
        producer.parse_register_response(broken)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=4), st.lists(st.text(max_size=30), max_size=4), st.binary(max_size=8))
def test_producer_answers_with_arbitrary_strings(brokers: list[str], topics: list[str], noise: bytes) -> None:
    answer = master.HeartResponseM2P(
        success=True, errCode=200, errMsg="OK", brokerCheckSum=1, brokerInfos=brokers, topicInfos=topics
    )
    for data in (answer.SerializeToString(), answer.SerializeToString() + noise, noise):
        with contextlib.suppress(ProtocolError):
            producer.parse_heartbeat_response(data)
        with contextlib.suppress(ProtocolError):
            producer.parse_register_response(data)


@given(
    serial=st.integers(0, 2**31 - 1),
    service=st.integers(0, 10),
    method=st.integers(0, 2**31 - 1),
    timeout=st.integers(1, 2**40),
    data=st.binary(max_size=300),
)
@settings(max_examples=200)
def test_hand_written_request_equals_the_protobuf_encoding(
    serial: int, service: int, method: int, timeout: int, data: bytes
) -> None:
    from tubemqwire.protocol.rpc_pb2 import RequestBody, RequestHeader, RpcConnHeader

    def delimited(message: object) -> bytes:
        body = message.SerializeToString()  # type: ignore[attr-defined]
        return rpc._varint(len(body)) + body

    stream = (
        delimited(RpcConnHeader(flag=0))
        + delimited(RequestHeader(serviceType=service, protocolVer=rpc.RPC_PROTOCOL_VERSION))
        + delimited(RequestBody(method=method, timeout=timeout, request=data))
    )
    assert rpc.encode_request(serial, service, method, data, timeout_ms=timeout) == encode_frame(serial, stream)
    decoded = rpc.decode_request(TubeFrameSplitter().feed(encode_frame(serial, stream))[0])
    assert (decoded.method, decoded.timeout_ms, decoded.request) == (method, timeout, data)
