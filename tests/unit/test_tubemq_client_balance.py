"""Client-side balance without a broker: the partition-meta strings, the held-partition report, the
V2 requests and answers, and the options checked when the consumer is built."""

from __future__ import annotations

from typing import Any

import pytest

import tubemqwire
from mqwire.common.errors import ProtocolError
from tubemqwire.protocol import client_balance as proto
from tubemqwire.protocol.client_balance import ClusterView
from tubemqwire.protocol.master_service_pb2 import GetPartMetaResponseM2C, HeartResponseM2CV2
from tubemqwire.protocol.metadata import BrokerInfo, PartitionInfo, format_subscribed, parse_topic_meta

BROKERS = {1: BrokerInfo(1, "10.0.0.1", 8123), 2: BrokerInfo(2, "10.0.0.2", 8123)}


def test_topic_meta_lists_every_partition_of_every_store() -> None:
    metas = parse_topic_meta("orders#1:2:3:1,2:1:2:0", BROKERS)
    keys = {m.partition.key: m.subscribable for m in metas}
    assert keys == {
        **{f"1:orders:{pid}": True for pid in (0, 1, 2, 10000, 10001, 10002)},
        **{f"2:orders:{pid}": False for pid in (0, 1)},
    }


def test_topic_meta_leaves_out_brokers_not_yet_known() -> None:
    assert [m.partition.key for m in parse_topic_meta("t#3:1:1:1,1:1:1:1", BROKERS)] == ["1:t:0"]


@pytest.mark.parametrize(
    "text",
    ["", "orders", "orders#1:1:1", "orders#1:1:1:1#x", "orders#x:1:1:1", "orders#1:0:1:1", "or ders#1:1:1:1",
     "orders#1:1:10001:1", "orders#1:1:1:1,"],
)
def test_malformed_topic_meta_is_a_protocol_error_naming_it(text: str) -> None:
    with pytest.raises(ProtocolError):
        parse_topic_meta(text, BROKERS)


def test_held_partitions_are_reported_per_topic() -> None:
    held = [PartitionInfo(BROKERS[1], "a", 0), PartitionInfo(BROKERS[2], "b", 3), PartitionInfo(BROKERS[2], "a", 1)]
    assert format_subscribed(held) == ["a#1:0,2:1", "b#2:3"]


def test_heartbeat_reports_list_versions_and_held_partitions() -> None:
    view = ClusterView(broker_config_id=7, topic_meta_id=9)
    request = proto.heartbeat_request("c1", "g", view=view, held=[PartitionInfo(BROKERS[1], "a", 0)])
    assert request.subRepInfo.brokerConfigId == 7 and request.subRepInfo.topicMetaInfoId == 9
    assert request.subRepInfo.reportSubInfo and list(request.subRepInfo.partSubInfo) == ["a#1:0"]
    quiet = proto.heartbeat_request("c1", "g", view=view, held=None)
    assert not quiet.subRepInfo.reportSubInfo and not quiet.subRepInfo.partSubInfo


def test_answers_carry_new_lists_only() -> None:
    answer = HeartResponseM2CV2(errCode=200, errMsg="OK", brokerConfigId=5, brokerConfigList=["1:10.0.0.1:8123"])
    parsed = proto.parse_heartbeat_response(answer.SerializeToString())
    assert parsed.success and parsed.brokers == (5, (BROKERS[1],)) and parsed.topic_meta is None
    meta = GetPartMetaResponseM2C(errCode=200, errMsg="OK", topicMetaInfoId=3, topicMetaInfoList=["t#1:1:1:1"])
    assert proto.parse_part_meta_response(meta.SerializeToString()).topic_meta == (3, ("t#1:1:1:1",))
    refused = GetPartMetaResponseM2C(errCode=403, errMsg="forbidden")
    assert not proto.parse_part_meta_response(refused.SerializeToString()).success


def test_garbled_answer_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        proto.parse_heartbeat_response(b"\xff\xff\xff")


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"partitions": ["1:orders"]}, ValueError),
        ({"partitions": ["1:other:0"]}, ValueError),
        ({"partitions": {"1:orders:0": -1}}, ValueError),
        ({"partitions": {"1:orders:0": "0"}}, ValueError),
        ({"partitions": [5]}, TypeError),
        ({"source_count": 2, "node_id": 2}, ValueError),
        ({"source_count": "2"}, TypeError),
        ({"start": "middle"}, ValueError),
    ],
)
def test_wrong_options_fail_when_built(options: dict[str, Any], error: type[Exception]) -> None:
    client = tubemqwire.connect("tubemq://127.0.0.1:8715")
    with pytest.raises(error):
        client.client_balance_consumer("orders", group="billing", **options)


def test_good_options() -> None:
    client = tubemqwire.connect("tubemq://127.0.0.1:8715")
    consumer = client.client_balance_consumer(
        "orders", group="billing", partitions={"1:orders:0": 0, "1:orders:1": None}, source_count=2, node_id=1
    )
    assert consumer.source_count == 2 and consumer.node_id == 1
    assert consumer.offsets() == {} and consumer.assignment == frozenset()
