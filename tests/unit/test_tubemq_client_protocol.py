"""The client's sans-IO pieces with bytes alone: broker and consumer requests and answers, rebalance
instructions, the user signature, partition placement and fetched-message conversion."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import urllib.parse
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqwire.common.errors import ProtocolError
from tubemqwire.auth import Credentials, signature
from tubemqwire.fetcher import Batch, to_message
from tubemqwire.identity import consumer_id, producer_id
from tubemqwire.producer import msg_time_text
from tubemqwire.producer_membership import place_partitions
from tubemqwire.protocol import broker, consumer, messages
from tubemqwire.protocol import broker_service_pb2 as b
from tubemqwire.protocol import master_service_pb2 as m
from tubemqwire.protocol.constants import EventStatus, EventType, OpType
from tubemqwire.protocol.metadata import (
    BrokerInfo,
    PartitionInfo,
    SubscribeInfo,
    parse_subscribe_info,
    parse_topic_info,
)

BROKER = BrokerInfo(3, "10.1.2.3", 8123)
PART = PartitionInfo(BROKER, "orders", 10001)


# ------------------------------------------------------------------------------------------- producing
def test_send_request_carries_type_time_and_tokens() -> None:
    flag, payload = messages.encode_payload(b"data", "$msgType$=t1,$msgTime$=202401020304,k=v")
    request = broker.send_message_request(
        "p1", "orders", 7, payload, flag, -5, msg_type="t1", msg_time="202401020304",
        auth=broker.authorized_info(99, "tok"),
    )
    parsed = b.SendMessageRequestP2B.FromString(request.SerializeToString())
    assert (parsed.clientId, parsed.topicName, parsed.partitionId, parsed.flag) == ("p1", "orders", 7, 1)
    assert (parsed.checkSum, parsed.sentAddr, parsed.msgType, parsed.msgTime) == (-1, -5, "t1", "202401020304")
    assert (parsed.authInfo.visitAuthorizedToken, parsed.authInfo.authAuthorizedToken) == (99, "tok")
    plain = broker.send_message_request("p1", "orders", 0, b"d", 0, 1)
    assert not plain.HasField("msgType") and not plain.HasField("authInfo")


def test_send_answers() -> None:
    ok = b.SendMessageResponseB2P(success=True, errCode=200, errMsg="OK", messageId=5, appendTime=6, appendOffset=7)
    assert broker.parse_send_response(ok.SerializeToString()) == broker.SendAnswer(True, 200, "OK", 5, 6, 7)
    # Older brokers put the id in errMsg.
    old = b.SendMessageResponseB2P(success=True, errCode=200, errMsg="123456")
    assert broker.parse_send_response(old.SerializeToString()).message_id == 123456
    failed = b.SendMessageResponseB2P(success=False, errCode=503, errMsg="read only")
    answer = broker.parse_send_response(failed.SerializeToString())
    assert (answer.success, answer.err_code, answer.message_id) == (False, 503, None)
    with pytest.raises(ProtocolError):
        broker.parse_send_response(b"\x08\x01")  # lacks the required fields


# ------------------------------------------------------------------------------------------- consuming
def test_register_and_unregister_requests() -> None:
    claim = broker.register_request("c1", "g1", "orders", 3, read_status=broker.READ_FROM_MAX, filters=["b", "a", "b"])
    assert (claim.opType, claim.readStatus, list(claim.filterCondStr)) == (OpType.REGISTER, 1, ["a", "b"])
    assert not claim.HasField("currOffset")
    release = broker.unregister_request("c1", "g1", "orders", 3, last_pack_consumed=False)
    assert (release.opType, release.readStatus) == (OpType.UNREGISTER, 1)
    assert broker.unregister_request("c1", "g1", "orders", 3, last_pack_consumed=True).readStatus == 0


def test_fetch_and_commit() -> None:
    request = broker.get_message_request("c1", "g1", "orders", 2, last_pack_consumed=True)
    assert (request.lastPackConsumed, request.manualCommitOffset, request.escFlowCtrl) == (True, False, False)
    answer = b.GetMessageResponseB2C(
        success=True, errCode=200, errMsg="OK", currOffset=40, maxOffset=80, minLimitTime=-3,
        messages=[b.TransferedMessage(messageId=1, checkSum=0, payLoadData=b"x", flag=0)],
    )
    parsed = broker.parse_get_message_response(answer.SerializeToString())
    assert (parsed.curr_offset, parsed.max_offset, parsed.min_limit_time, len(parsed.messages)) == (40, 80, 0, 1)
    empty = broker.parse_get_message_response(b.GetMessageResponseB2C(success=False, errCode=404).SerializeToString())
    assert (empty.err_code, empty.messages, empty.curr_offset) == (404, (), None)
    commit = broker.commit_request("c1", "g1", "orders", 2)
    assert commit.lastPackConsumed
    done = b.CommitOffsetResponseB2C(success=True, errCode=200, errMsg="OK", currOffset=43)
    assert broker.parse_commit_response(done.SerializeToString()) == broker.OffsetAnswer(True, 200, "OK", 43, None)


def test_broker_heartbeat_lists_partitions_and_reads_failures() -> None:
    request = broker.heartbeat_request("c1", "g1", [PART], auth=broker.authorized_info(1))
    assert list(request.partitionInfo) == ["3:10.1.2.3:8123#orders:10001"]
    answer = b.HeartBeatResponseB2C(
        success=True, errCode=200, errMsg="OK", hasPartFailure=True, failureInfo=["411:3:10.1.2.3:8123#orders:10001"]
    )
    parsed = broker.parse_heartbeat_response(answer.SerializeToString())
    assert parsed.failures == ((411, PART),)
    # Without hasPartFailure the list is not looked at.
    quiet = b.HeartBeatResponseB2C(success=True, errCode=200, errMsg="OK", failureInfo=["junk"])
    assert broker.parse_heartbeat_response(quiet.SerializeToString()).failures == ()


@pytest.mark.parametrize("text", ["", "411", "x:3:h:1#t:1", "411:3:h:1", "411:3:h:1#t"])
def test_bad_failure_info(text: str) -> None:
    with pytest.raises(ProtocolError):
        broker.parse_failure_info(text)


@given(st.text(max_size=60))
def test_random_failure_info_only_raises_protocol_error(text: str) -> None:
    with contextlib.suppress(ProtocolError):
        broker.parse_failure_info(text)


# --------------------------------------------------------------------------------------- master, consumer
def test_consumer_register_request() -> None:
    held = SubscribeInfo("c1", "g1", PART)
    request = consumer.register_request(
        "c1", "g1", "10.0.0.9", ["refunds", "orders", "orders"], session_time_ms=5,
        subscriptions=[held], filters={"orders": ["b", "a"], "refunds": []}, client_description="py",
    )
    assert list(request.topicList) == ["orders", "refunds"]
    assert list(request.subscribeInfo) == ["c1@g1#3:10.1.2.3:8123#orders:10001"]
    assert list(request.topicCondition) == ["orders#a,b"]
    assert (request.requireBound, request.sessionTime, request.jdkVersion) == (False, 5, "py")
    with pytest.raises(ValueError):
        consumer.register_request("c1", "g1", "h", [], session_time_ms=1)
    with pytest.raises(ValueError):
        consumer.register_request(" ", "g1", "h", ["t"], session_time_ms=1)


def test_rebalance_instruction_round_trip() -> None:
    text = "c1@g1#3:10.1.2.3:#orders:10001"  # blank port: the default one
    proto = m.EventProto(rebalanceId=8, opType=EventType.CONNECT, status=EventStatus.PROCESSING, subscribeInfo=[text])
    answer = m.HeartResponseM2C(success=True, errCode=200, errMsg="OK", event=proto)
    parsed = consumer.parse_heartbeat_response(answer.SerializeToString())
    assert parsed.event is not None
    assert parsed.event.subscriptions == (SubscribeInfo("c1", "g1", PART),)
    done = parsed.event.with_status(EventStatus.DONE)
    request = consumer.heartbeat_request("c1", "g1", subscriptions=[], event=done)
    assert request.reportSubscribeInfo and list(request.subscribeInfo) == []
    assert (request.event.rebalanceId, request.event.opType, request.event.status) == (8, 1, 2)
    assert list(request.event.subscribeInfo) == ["c1@g1#3:10.1.2.3:8123#orders:10001"]
    quiet = consumer.heartbeat_request("c1", "g1")
    assert not quiet.reportSubscribeInfo and not quiet.HasField("event")


def test_heartbeat_without_instruction() -> None:
    # The master sends no event, or one with rebalance id 0: nothing to do.
    for event in (None, m.EventProto(rebalanceId=0, opType=1)):
        answer = m.HeartResponseM2C(success=True, errCode=200, errMsg="OK")
        if event is not None:
            answer.event.CopyFrom(event)
        assert consumer.parse_heartbeat_response(answer.SerializeToString()).event is None
    bad = m.HeartResponseM2C(
        success=True, errCode=200, errMsg="OK", event=m.EventProto(rebalanceId=1, subscribeInfo=["nonsense"])
    )
    with pytest.raises(ProtocolError):
        consumer.parse_heartbeat_response(bad.SerializeToString())


def test_consumer_register_answer_tokens() -> None:
    answer = m.RegisterResponseM2C(
        success=True, errCode=200, errMsg="OK",
        authorizedInfo=m.MasterAuthorizedInfo(visitAuthorizedToken=77, authAuthorizedToken="tok"),
    )
    parsed = consumer.parse_register_response(answer.SerializeToString())
    assert (parsed.visit_token, parsed.auth_token) == (77, "tok")
    assert consumer.parse_close_response(m.CloseResponseM2C(success=True, errCode=200, errMsg="OK").SerializeToString())


# ---------------------------------------------------------------------------------------------- tokens
def test_signature_is_url_encoded_base64_hmac_sha1() -> None:
    digest = hmac.new(b"pw", b"alice1700000000000" + b"42", hashlib.sha1).digest()
    expected = urllib.parse.quote(base64.b64encode(digest).decode(), safe="")
    assert signature("alice", "pw", 1700000000000, 42) == expected
    assert "+" not in expected and "/" not in expected


def test_credentials() -> None:
    anonymous = Credentials()
    assert anonymous.master_certificate(force=True) is None
    assert anonymous.producer_broker_auth().visitAuthorizedToken == -2
    user = Credentials("alice", "pw")
    first = user.master_certificate()
    assert first is not None and first.authInfo.userName == "alice" and first.authInfo.signature
    user.update(5, "granted")
    token = user.master_certificate()
    assert token is not None and token.authorizedToken == "granted" and not token.HasField("authInfo")
    user.update(None, None, require_auth=True)
    again = user.master_certificate()
    assert again is not None and again.HasField("authInfo")
    assert user.producer_broker_auth().authAuthorizedToken == "granted"
    signed = user.consumer_broker_auth(sign=True)
    assert signed.visitAuthorizedToken == 5 and signed.authAuthorizedToken.startswith("alice ")


# ----------------------------------------------------------------------------------------- placement
def test_partitions_of_several_stores() -> None:
    brokers = {1: BrokerInfo(1, "h1", 8123), 2: BrokerInfo(2, "h2", 8123)}
    infos = [parse_topic_info("orders#1:2:2,2:1:1,9:4:1#2048"), parse_topic_info("refunds#2:1:1")]
    placed = place_partitions(infos, brokers)
    assert [(p.broker.broker_id, p.partition_id) for p in placed["orders"]] == [
        (1, 0), (1, 1), (1, 10000), (1, 10001), (2, 0)
    ]
    assert [p.key for p in placed["refunds"]] == ["2:refunds:0"]
    # Broker 9 is unknown: its partitions are left out; a topic left with none is absent.
    assert place_partitions([parse_topic_info("lost#9:4:1")], brokers) == {}


def test_fetched_message_becomes_a_record() -> None:
    flag, payload = messages.encode_payload(b"body", "$msgType$=paid,$msgTime$=202401020304,region=eu")
    raw = b.TransferedMessage(messageId=11, checkSum=messages.checksum(payload), payLoadData=payload, flag=flag)
    batch = Batch.__new__(Batch)
    record = to_message("orders", PART, raw, batch, 4)
    assert (record.value, record.headers, record.msg_type, record.msg_time) == (
        b"body", {"region": b"eu"}, "paid", "202401020304"
    )
    assert record.timestamp == int(datetime(2024, 1, 2, 3, 4).timestamp() * 1000)
    assert (record.partition, record.broker_id, record.partition_key, record.message_id) == (
        10001, 3, "3:orders:10001", 11
    )
    assert (record.batch, record.index, record.key) == (batch, 4, None)
    corrupt = b.TransferedMessage(messageId=1, checkSum=1, payLoadData=payload, flag=flag)
    with pytest.raises(ProtocolError):
        to_message("orders", PART, corrupt, batch, 0)


def test_client_ids_fit_the_subscribe_info_grammar() -> None:
    cid = consumer_id("billing", "10.0.0.1")
    info = parse_subscribe_info(f"{cid}@billing#1:h:1#orders:0")
    assert info.consumer_id == cid
    assert cid != consumer_id("billing", "10.0.0.1")
    assert producer_id("10.0.0.1").startswith("10.0.0.1-")


def test_msg_time_forms() -> None:
    local = datetime(2024, 1, 2, 3, 4, 59)
    assert msg_time_text(local) == "202401020304"
    assert msg_time_text(int(local.timestamp() * 1000)) == "202401020304"
    aware = local.astimezone(UTC)
    assert msg_time_text(aware) == "202401020304"
    assert msg_time_text("202401020304") == "202401020304"
    assert msg_time_text(None) is None
    for bad in ("2024010203", "2024-01-02", 10**20, datetime(999, 1, 1)):
        with pytest.raises(ValueError):
            msg_time_text(bad)  # type: ignore[arg-type]
    for wrong in (True, 1.5, b"202401020304"):
        with pytest.raises(TypeError):
            msg_time_text(wrong)  # type: ignore[arg-type]
