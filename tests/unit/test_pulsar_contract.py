"""pulsarwire's side of the shared API without a broker: option names, receipts, messages, getmany and the
deserializing gate over the receive queue."""

from __future__ import annotations

import asyncio
import json

import pytest

import pulsarwire
from mqwire.common.errors import DeserializationError, ReceiveTimeoutError, UnknownOptionError
from pulsarwire.message import Message, MessageId, Receipt, receipt


def client() -> pulsarwire.Client:
    return pulsarwire.connect("pulsar://localhost:6650")


class Owner:
    """Stands for the per-partition consumer a message came from."""

    def __init__(self) -> None:
        self.dequeued_ids: list[MessageId] = []
        self.acked_ids: list[MessageId] = []

    def dequeued(self, message: Message) -> None:
        self.dequeued_ids.append(message.message_id)

    def ack(self, message: Message) -> None:
        self.acked_ids.append(message.message_id)


def message(owner: Owner, entry: int, value: bytes, key: str | None = None) -> Message:
    return Message("t", "persistent://public/default/t", -1, MessageId(1, entry), value, {}, key, owner=owner)


def started(**options: object) -> tuple[pulsarwire.Consumer, Owner]:
    consumer = client().consumer("t", group="g", **options)  # type: ignore[arg-type]
    consumer._started = True  # as if subscribed: messages are pushed into its queue below
    owner = Owner()
    consumer._owner_of = lambda message: owner  # type: ignore[method-assign,assignment,return-value]
    return consumer, owner


def test_misspelled_options_name_themselves() -> None:
    with pytest.raises(UnknownOptionError, match=r"producer: unknown option 'batching_max_mesages' \(did you mean"):
        client().producer("t", batching_max_mesages=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="subscription_name"):
        client().consumer("t", subscription_name="s")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="value_serializer"):
        client().producer("t", value_serializer=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value_deserializer"):
        client().consumer("t", group="g", value_deserializer="json")  # type: ignore[arg-type]


def test_receipt_is_a_message_id_that_knows_its_topic() -> None:
    made = receipt("persistent://public/default/t", 3, 4, 1, 2, 5)
    assert isinstance(made, Receipt) and isinstance(made, MessageId)
    assert (made.topic, made.partition) == ("persistent://public/default/t", 2)
    plain = MessageId(3, 4, 1, 2, 5)
    assert made == plain and hash(made) == hash(plain) and made.message_id == plain
    assert type(made.message_id) is MessageId
    assert MessageId.deserialize(made.serialize()) == plain


def test_message_key_payload_and_deserialized_fields() -> None:
    received = message(Owner(), 1, b"v", "k")
    assert received.key == b"k" and received.raw_key == b"k" and received.payload == b"v"
    received.key, received.value = "k", "v"
    assert received.key == "k" and received.raw_key == b"k" and received.payload == b"v"
    assert "value='v'" in repr(received)


async def test_getmany_takes_what_is_queued_up_to_max_records() -> None:
    consumer, owner = started()
    assert await consumer.getmany() == []
    consumer._queue.extend([message(owner, i, b"%d" % i) for i in range(5)])
    assert [m.value for m in await consumer.getmany(max_records=2)] == [b"0", b"1"]
    assert [m.value for m in await consumer.getmany(timeout=1)] == [b"2", b"3", b"4"]
    assert owner.dequeued_ids == [MessageId(1, i) for i in range(5)]
    with pytest.raises(ReceiveTimeoutError):
        await consumer.receive(timeout=0.05)


async def test_getmany_waits_for_the_first_message() -> None:
    consumer, owner = started()
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, consumer._queue.extend, [message(owner, 1, b"late")])
    assert [m.value for m in await consumer.getmany(timeout=5)] == [b"late"]


async def test_deserializer_failure_holds_the_message_until_skipped() -> None:
    consumer, owner = started(value_deserializer=json.loads, key_deserializer=bytes.decode)
    consumer._queue.extend([
        message(owner, 1, b"1", "a"), message(owner, 2, b"{bad"), message(owner, 3, b"3"), message(owner, 4, b"4"),
    ])
    good = await consumer.getmany(timeout=1)
    assert [(m.key, m.value) for m in good] == [("a", 1)]
    with pytest.raises(DeserializationError) as caught:
        await consumer.getmany(timeout=1)
    assert caught.value.position == MessageId(1, 2) and caught.value.field == "value"
    with pytest.raises(DeserializationError):
        await consumer.receive(timeout=1)
    with pytest.raises(ValueError):
        consumer.skip(good[0])
    consumer.skip(caught.value.message)
    assert owner.acked_ids == [MessageId(1, 2)]  # skipped on purpose: acknowledged
    assert (await consumer.receive(timeout=1)).value == 3
    assert [m.value for m in await consumer.getmany()] == [4]
    # Every message was taken from the queue once, the failed one included.
    assert owner.dequeued_ids == [MessageId(1, i) for i in range(1, 5)]


async def test_no_deserializer_keeps_bytes() -> None:
    consumer, owner = started()
    consumer._queue.extend([message(owner, 1, b"{bad", "k")])
    got = await consumer.receive(timeout=1)
    assert (got.key, got.value) == (b"k", b"{bad")
