"""The shared contract on tubemqwire against the in-process fake cluster: receive and getmany with timeouts,
serializers and deserializers (a failing one holds its message until skipped), keys carried in an
attribute, seeking, pausing, and the typed options."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import tubemqwire
from mqwire.common.errors import DeserializationError, ReceiveTimeoutError, SerializationError
from tests.unit.test_tubemq_client_fake import GROUP, TOPIC, FakeCluster, connected
from tubemqwire.keys import KEY_ATTRIBUTE, decode_key, encode_key
from tubemqwire.protocol import messages


@pytest.mark.parametrize("key", [b"", b"k", b"\x00\xff,=", b"x" * 100])
def test_keys_round_trip_through_the_attribute(key: bytes) -> None:
    text = encode_key(key)
    assert "," not in text and "=" not in text and text.strip()
    assert decode_key(text) == key


def test_a_foreign_key_attribute_is_not_a_key() -> None:
    assert decode_key("not base64!") is None


async def test_receive_times_out_with_the_shared_error() -> None:
    async with connected(FakeCluster(partitions=1)) as client, client.consumer(TOPIC, group=GROUP) as consumer:
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=0.2)
        with pytest.raises(TimeoutError):  # the built-in class, for code written before
            await consumer.getone(timeout=0.1)
        assert await consumer.getmany(timeout=0) == []
        assert await consumer.getmany(timeout=0.2) == []


async def test_getmany_returns_what_is_ready_up_to_max_records() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for i in range(3):
                await producer.send(b"m%d" % i)
        async with client.consumer(TOPIC, group=GROUP, start="earliest") as consumer:
            first = await consumer.getmany(timeout=5, max_records=2)
            assert [m.value for m in first] == [b"m0", b"m1"]
            rest = await consumer.getmany(timeout=5)
            assert [m.value for m in rest] == [b"m2"]
            with pytest.raises(ValueError, match="max_records"):
                await consumer.getmany(max_records=0)


async def test_serializers_keys_and_headers_round_trip() -> None:
    cluster = FakeCluster(partitions=2)
    async with connected(cluster) as client:
        async with client.producer(TOPIC, value_serializer=lambda v: json.dumps(v).encode(),
                                   key_serializer=str.encode) as producer:
            receipts = [await producer.send({"n": i}, key="same", headers={"h": b"v"}) for i in range(4)]
            assert len({r.partition for r in receipts}) == 1  # the key picks the partition
        stored = cluster.store[receipts[0].partition][0]
        attribute, _ = messages.decode_payload(stored.flag, stored.payload)
        assert f"{KEY_ATTRIBUTE}={encode_key(b'same')}" in attribute
        async with client.consumer(TOPIC, group=GROUP, start="earliest", value_deserializer=json.loads,
                                   key_deserializer=bytes.decode) as consumer:
            got = []
            for _ in range(4):  # a batch at a time: the next comes once this one is acknowledged
                got.append(await consumer.receive(timeout=5))
                await consumer.ack(got[-1])
        assert sorted(m.value["n"] for m in got) == [0, 1, 2, 3]
        assert {m.key for m in got} == {"same"}
        assert all(m.headers == {"h": b"v"} for m in got)


async def test_values_and_keys_must_be_bytes_without_a_serializer() -> None:
    async with connected(FakeCluster()) as client, client.producer(TOPIC) as producer:
        with pytest.raises(SerializationError, match="value_serializer"):
            await producer.send("text")
        with pytest.raises(SerializationError, match="key_serializer"):
            await producer.send(b"v", key="text")
        with pytest.raises(ValueError, match="reserved"):
            await producer.send(b"v", headers={KEY_ATTRIBUTE: b"x"})


async def test_a_failing_deserializer_holds_its_message_until_skipped() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for value in (b"1", b"oops", b"3"):
                await producer.send(value)
        async with client.consumer(TOPIC, group=GROUP, start="earliest", value_deserializer=int) as consumer:
            good = await consumer.getmany(timeout=5)
            assert [m.value for m in good] == [1]
            await consumer.ack(good[0])
            for _ in range(2):  # raised again and again, nothing skipped silently
                with pytest.raises(DeserializationError) as caught:
                    await consumer.receive(timeout=5)
            error = caught.value
            assert error.message.value == b"oops" and error.field == "value" and error.partition == 0
            consumer.skip(error.message)
            last = await consumer.receive(timeout=5)
            assert last.value == 3
            await consumer.ack(last)
            await asyncio.sleep(0.1)
        # The skipped message counted as acknowledged: the batch was confirmed.
        assert cluster.committed[0] == 3


async def test_seek_to_beginning_and_end() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for i in range(3):
                await producer.send(b"m%d" % i)
        async with client.consumer(TOPIC, group=GROUP, start="earliest", msg_not_found_wait_ms=20) as consumer:
            seen = []
            while len(seen) < 3:
                message = await consumer.receive(timeout=5)
                seen.append(message.value)
                await consumer.ack(message)
            await consumer.seek_to_beginning()
            again = await consumer.receive(timeout=5)
            assert again.value == b"m0"
            await consumer.seek_to_end()
            assert await consumer.getmany(timeout=0.3) == []
            async with client.producer(TOPIC) as producer:
                await producer.send(b"later")
            assert (await consumer.receive(timeout=5)).value == b"later"


async def test_pause_holds_fetching_back_until_resume() -> None:
    cluster = FakeCluster(partitions=1)
    async with (
        connected(cluster) as client,
        client.consumer(TOPIC, group=GROUP, start="earliest", msg_not_found_wait_ms=20) as consumer,
    ):
        for _ in range(250):
            if consumer.assignment:
                break
            await asyncio.sleep(0.02)
        (key,) = consumer.assignment
        consumer.pause(key)
        assert consumer.paused() == {key}
        await asyncio.sleep(0.1)
        async with client.producer(TOPIC) as producer:
            await producer.send(b"while paused")
        with pytest.raises(ReceiveTimeoutError):
            await consumer.receive(timeout=0.5)
        consumer.resume(key)
        assert (await consumer.receive(timeout=5)).value == b"while paused"
        with pytest.raises(ValueError):
            consumer.pause("1:other:0")


def test_options_are_declared() -> None:
    client = tubemqwire.connect("tubemq://127.0.0.1:8715")
    options: dict[str, Any] = {"compression": "lz4"}
    with pytest.raises(TypeError, match="compression"):
        client.producer(TOPIC, **options)
    with pytest.raises(TypeError, match="key_serializer"):
        client.producer(TOPIC, key_serializer="utf-8")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value_deserializer"):
        client.consumer(TOPIC, value_deserializer=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="linger_ms"):
        tubemqwire.connect("tubemq://127.0.0.1:8715", **{"linger_ms": 5})
    anonymous = client.consumer(TOPIC)
    assert anonymous.group.startswith("mqwire_") and anonymous.start_position == "latest"
