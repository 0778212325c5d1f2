"""The share consumer's sans-IO parts: acknowledgement bookkeeping, acknowledgement batches, the share
session's requests, and the records a ShareFetch partition hands to this member."""

from __future__ import annotations

import uuid

import pytest

from kafkawire.metadata import TopicPartition
from kafkawire.protocol import decode_body, encode_body
from kafkawire.protocol.messages import AcquiredRecords, ShareFetchRequest
from kafkawire.protocol.records import BatchBuilder
from kafkawire.share.acks import (
    GAP,
    RENEW,
    AcknowledgeType,
    AcquisitionLockExpiredError,
    AlreadyAcknowledgedError,
    NotAcquiredError,
    ShareAcks,
    ack_batches,
)
from kafkawire.share.session import FetchSettings, ShareSession, acquired_messages

TP = TopicPartition("t", 0)
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT
SETTINGS = FetchSettings(
    max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10, acquire_mode=0
)


def test_ack_batches_join_runs_and_compact_one_type() -> None:
    assert ack_batches({}) == []
    assert ack_batches({5: ACCEPT, 6: ACCEPT, 7: ACCEPT}) == [(5, 7, [ACCEPT])]
    assert ack_batches({5: ACCEPT, 6: RELEASE, 7: ACCEPT, 9: REJECT}) == [
        (5, 7, [ACCEPT, RELEASE, ACCEPT]),
        (9, 9, [REJECT]),
    ]


def test_an_acknowledgement_is_taken_once_and_twice_is_refused() -> None:
    acks = ShareAcks()
    serial = acks.acquire(TP, 3, deadline=100.0)
    acks.ack(TP, 3, serial, RELEASE, now=1.0)
    with pytest.raises(AlreadyAcknowledgedError):
        acks.ack(TP, 3, serial, ACCEPT, now=1.0)
    sent, expired = acks.take([TP], now=2.0)
    assert sent == {TP: {3: RELEASE}} and expired == []
    assert acks.take([TP], now=2.0) == ({}, [])


def test_records_not_held_are_refused() -> None:
    acks = ShareAcks()
    with pytest.raises(NotAcquiredError):
        acks.ack(TP, 0, 1, ACCEPT, now=0.0)
    old = acks.acquire(TP, 0, deadline=10.0)
    new = acks.acquire(TP, 0, deadline=50.0)  # delivered again after the first lock ran out
    with pytest.raises(NotAcquiredError):
        acks.ack(TP, 0, old, ACCEPT, now=20.0)
    acks.ack(TP, 0, new, ACCEPT, now=20.0)
    assert acks.take([TP], now=21.0)[0] == {TP: {0: ACCEPT}}


def test_an_expired_lock_is_never_acknowledged() -> None:
    acks = ShareAcks()
    serial = acks.acquire(TP, 0, deadline=10.0)
    with pytest.raises(AcquisitionLockExpiredError):
        acks.ack(TP, 0, serial, ACCEPT, now=10.0)
    assert not acks.has_pending()
    # Queued in time, but the lock runs out before the request goes: left out and reported.
    serial = acks.acquire(TP, 1, deadline=10.0)
    acks.ack(TP, 1, serial, ACCEPT, now=5.0)
    assert acks.take([TP], now=11.0) == ({}, [(TP, 1)])


def test_implicit_mode_accepts_only_what_was_delivered() -> None:
    acks = ShareAcks()
    serials = {offset: acks.acquire(TP, offset, deadline=100.0) for offset in range(4)}
    acks.delivered(TP, 0)
    acks.delivered(TP, 1)
    acks.ack(TP, 1, serials[1], REJECT, now=0.0)
    assert acks.accept_delivered() == 1
    with pytest.raises(AlreadyAcknowledgedError):
        acks.ack(TP, 0, serials[0], ACCEPT, now=0.0)
    assert acks.release_undelivered() == [(TP, 2), (TP, 3)]
    assert acks.take([TP], now=1.0)[0] == {TP: {0: ACCEPT, 1: REJECT, 2: RELEASE, 3: RELEASE}}
    assert acks.held_count() == 0


def test_is_held_forgets_an_expired_record() -> None:
    acks = ShareAcks()
    serial = acks.acquire(TP, 0, deadline=5.0)
    assert acks.is_held(TP, 0, serial, now=1.0)
    assert not acks.is_held(TP, 0, serial, now=5.0)
    assert acks.held_count() == 0


def test_the_session_sends_only_changes_and_no_acks_when_opening() -> None:
    ids = {"t": uuid.uuid4(), "u": uuid.uuid4()}
    session = ShareSession("g", "m")
    other = TopicPartition("u", 1)
    with pytest.raises(ValueError, match="opening"):
        session.fetch_request([TP], {TP: {0: ACCEPT}}, ids, SETTINGS)
    first = session.fetch_request([TP, other], {}, ids, SETTINGS)
    assert first.share_session_epoch == 0
    assert sorted((t.topic_id, p.partition_index) for t in first.topics for p in t.partitions) == sorted(
        [(ids["t"], 0), (ids["u"], 1)]
    )
    session.answered()
    second = session.fetch_request([TP], {TP: {4: ACCEPT, 5: RELEASE}}, ids, SETTINGS)
    assert second.share_session_epoch == 1
    [topic] = second.topics
    [partition] = topic.partitions
    assert [
        (b.first_offset, b.last_offset, b.acknowledge_types) for b in partition.acknowledgement_batches
    ] == [(4, 5, [ACCEPT, RELEASE])]
    assert [(f.topic_id, f.partitions) for f in second.forgotten_topics_data] == [(ids["u"], [1])]
    # It is a valid v1 and v2 body.
    for version in (1, 2):
        again = decode_body(ShareFetchRequest, version, encode_body(second, version))
        assert again.topics == second.topics
    session.answered()
    closing = session.acknowledge_request({TP: {6: REJECT}}, ids, close=True)
    assert closing.share_session_epoch == -1
    session.reset()
    assert session.epoch == 0 and not session.can_acknowledge


def _records(first_offset: int, values: list[bytes]) -> bytes:
    builder = BatchBuilder()
    for value in values:
        builder.append(0, None, value)
    return builder.build(base_offset=first_offset)


def test_acquired_messages_keep_only_this_members_records_and_gap_the_rest() -> None:
    acks = ShareAcks()
    data = _records(10, [b"a", b"b", b"c", b"d"])
    acquired = [AcquiredRecords(first_offset=11, last_offset=12, delivery_count=3)]
    messages = acquired_messages(TP, data, acquired, 50.0, acks)
    assert [(m.offset, m.value, m.delivery_count) for m in messages] == [(11, b"b", 3), (12, b"c", 3)]
    assert acks.held_count() == 2
    # Acquired offsets past the returned batches (a response cut short) are left to their lock, never
    # settled blind.
    acks2 = ShareAcks()
    sparse = _records(20, [b"x"])
    acquired = [AcquiredRecords(first_offset=20, last_offset=22, delivery_count=1)]
    assert [m.offset for m in acquired_messages(TP, sparse, acquired, 50.0, acks2)] == [20]
    assert acks2.take([TP], now=0.0)[0] == {}


def test_gaps_are_acknowledged_as_gaps() -> None:
    acks = ShareAcks()
    acks.gap(TP, 7, deadline=10.0)
    assert acks.take([TP], now=1.0)[0] == {TP: {7: GAP}}


def test_a_renewed_lock_moves_the_deadline_of_that_delivery_only() -> None:
    acks = ShareAcks()
    serial = acks.acquire(TP, 0, deadline=10.0)
    assert acks.check(TP, 0, serial, now=5.0) == 10.0
    acks.renewed(TP, 0, serial + 1, deadline=40.0)  # another delivery: ignored
    assert acks.check(TP, 0, serial, now=5.0) == 10.0
    acks.renewed(TP, 0, serial, deadline=40.0)
    acks.ack(TP, 0, serial, ACCEPT, now=20.0)
    assert acks.take([TP], now=21.0)[0] == {TP: {0: ACCEPT}}


def test_a_renew_request_is_marked() -> None:
    session = ShareSession("g", "m")
    session.answered()
    body = session.acknowledge_request({TP: {3: RENEW}}, {"t": uuid.uuid4()}, renew=True)
    assert body.is_renew_ack and body.topics[0].partitions[0].acknowledgement_batches[0].acknowledge_types == [RENEW]


def test_share_consumer_options_are_checked_at_construction() -> None:
    import kafkawire
    from mqwire.common.errors import ConfigurationError

    client = kafkawire.connect("kafka://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match="group"):
        client.share_consumer("t")
    with pytest.raises(ConfigurationError, match="share_acknowledgement_mode"):
        client.share_consumer("t", group="g", share_acknowledgement_mode="manual")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_poll_records"):
        client.share_consumer("t", group="g", max_poll_records=0)
    with pytest.raises(kafkawire.UnknownOptionError, match="share_acquire_mode"):
        client.share_consumer("t", group="g", share_acquire_modes="record_limit")  # type: ignore[call-arg]
    consumer = client.share_consumer(["t", "u"], group="g", share_acquire_mode="record_limit")
    assert consumer.topics == ["t", "u"] and consumer.acknowledgement_mode == "implicit"


def test_another_consumers_message_never_passes_for_a_delivery_held_here() -> None:
    first, second = ShareAcks(), ShareAcks()
    stale = first.acquire(TP, 0, deadline=10.0)  # the first consumer's delivery, lock ran out
    current = second.acquire(TP, 0, deadline=50.0)  # delivered again, to the second consumer
    assert stale != current
    with pytest.raises(NotAcquiredError):
        second.ack(TP, 0, stale, ACCEPT, now=20.0)


def test_malformed_records_raise_and_register_nothing() -> None:
    from mqwire.common.errors import MqwireError

    acks = ShareAcks()
    data = bytearray(_records(0, [b"a", b"b"]))
    data[-1] ^= 0xFF  # the CRC no longer matches
    acquired = [AcquiredRecords(first_offset=0, last_offset=1, delivery_count=1)]
    with pytest.raises(MqwireError):
        acquired_messages(TP, bytes(data), acquired, 50.0, acks)
    assert acks.held_count() == 0 and not acks.has_pending()
