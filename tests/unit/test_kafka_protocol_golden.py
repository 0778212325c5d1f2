"""Hand-computed frames for the first exchange on a connection: ApiVersions, then Metadata."""

from __future__ import annotations

import uuid

from kafkawire.protocol import decode_request, decode_response, encode_request, encode_response, response_correlation_id
from kafkawire.protocol.messages import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


# Request header v1: api key, version, correlation id, int16-length client id "test". No body in v0.
API_VERSIONS_V0_REQUEST = h("0000000e  0012 0000 00000001 0004 74657374")

# Request header v2 adds an empty tag buffer after the (still non-compact) client id; the v3 body has two
# compact strings (length + 1) and its own empty tag buffer.
API_VERSIONS_V3_REQUEST = h("0000001b  0012 0003 00000007 0004 74657374 0007 6d7177697265  04 312e30  00")

# Response header v0 (correlation id only); error 0; int32 count 2; three int16 per entry.
API_VERSIONS_V0_RESPONSE = h("00000016  00000001  0000  00000002  0000 0003 000b  0012 0000 0004")

# ApiVersions answers always use response header v0, even at v3 where the body is flexible: no tag
# buffer after the correlation id. Body: error, compact array (count + 1) of entries each ending in an empty
# tag buffer, throttle time, then tag 1 (finalized features epoch, int64) set to 5.
API_VERSIONS_V3_RESPONSE = h("0000001d  00000007  0000  02 0012 0000 0004 00  00000000  01 01 08 0000000000000005")


def test_api_versions_v0_request() -> None:
    frame = encode_request(ApiVersionsRequest(), version=0, correlation_id=1, client_id="test")
    assert frame == API_VERSIONS_V0_REQUEST
    header, body = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 0, 1, "test")
    assert body == ApiVersionsRequest()


def test_api_versions_v3_request() -> None:
    body = ApiVersionsRequest(client_software_name="mqwire", client_software_version="1.0")
    frame = encode_request(body, version=3, correlation_id=7, client_id="test")
    assert frame == API_VERSIONS_V3_REQUEST
    assert decode_request(frame[4:])[1] == body


def test_api_versions_v0_response() -> None:
    body = ApiVersionsResponse(
        api_keys=[ApiVersion(api_key=0, min_version=3, max_version=11), ApiVersion(api_key=18, max_version=4)]
    )
    frame = API_VERSIONS_V0_RESPONSE[4:]
    assert response_correlation_id(frame) == 1
    assert decode_response(18, 0, frame) == body
    assert encode_response(body, version=0, correlation_id=1) == API_VERSIONS_V0_RESPONSE


def test_api_versions_v3_response_uses_header_v0() -> None:
    body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, max_version=4)], finalized_features_epoch=5)
    assert encode_response(body, version=3, correlation_id=7) == API_VERSIONS_V3_RESPONSE
    decoded = decode_response(18, 3, API_VERSIONS_V3_RESPONSE[4:])
    assert decoded == body
    assert decoded.finalized_features_epoch == 5
    assert decoded.supported_features == []


def test_metadata_v1_request() -> None:
    frame = encode_request(
        MetadataRequest(topics=[MetadataRequestTopic(name="a")]), version=1, correlation_id=2, client_id=None
    )
    # Null client id is int16 -1; topics: int32 count, then an int16-length string.
    assert frame == h("00000011  0003 0001 00000002 ffff  00000001 0001 61")


def test_metadata_v12_request_all_topics() -> None:
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    frame = encode_request(body, version=12, correlation_id=2, client_id="c")
    # Header v2; body: null compact array (0), two booleans, empty tag buffer.
    assert frame == h("00000010  0003 000c 00000002 0001 63 00  00 00 00 00")
    assert decode_request(frame[4:])[1] == body


def test_metadata_v12_response() -> None:
    frame = h(
        "00000003 00"  # correlation id 3, response header v1 tag buffer
        "00000000"  # throttle time
        "02 00000001 0a 6c6f63616c686f7374 00002384 00 00"  # one broker: 1, "localhost", 9092, rack null
        "04 636c75 00000001"  # cluster id "clu", controller 1
        "02 0000 02 74 00000000000000000000000000000001 00"  # topic: error 0, name "t", topic id 1, internal
        "02 0000 00000000 00000001 00000000 02 00000001 02 00000001 01 00"  # partition 0, leader 1, epoch 0
        "80000000 00"  # topic authorized operations, tag buffer of the topic
        "00"  # tag buffer of the response
    )
    decoded = decode_response(3, 12, frame)
    expected = MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="localhost", port=9092)],
        cluster_id="clu",
        controller_id=1,
        topics=[
            MetadataResponseTopic(
                name="t",
                topic_id=uuid.UUID(int=1),
                partitions=[MetadataResponsePartition(leader_id=1, leader_epoch=0, replica_nodes=[1], isr_nodes=[1])],
            )
        ],
    )
    assert decoded == expected
    assert encode_response(expected, version=12, correlation_id=3)[4:] == frame
