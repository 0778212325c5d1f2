"""Serializer hooks and the deserializing gate, without a broker."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from mqwire.common.errors import DeserializationError, SerializationError
from mqwire.common.serde import Deserializing, check_serializer, to_bytes


@dataclass
class Msg:
    topic: str
    partition: int
    key: Any
    value: Any
    offset: int


def gate(**kw: Any) -> Deserializing[Msg]:
    return Deserializing(kw.get("key"), kw.get("value"), lambda m: m.offset)


def test_bytes_pass_and_other_types_name_the_option() -> None:
    assert to_bytes(b"x", None, "value") == b"x"
    assert to_bytes(bytearray(b"x"), None, "key") == b"x"
    assert to_bytes(None, None, "value") is None
    with pytest.raises(SerializationError, match="value_serializer") as refused:
        to_bytes("text", None, "value")
    assert isinstance(refused.value, TypeError) and "str.encode" in str(refused.value)
    with pytest.raises(SerializationError, match="key_serializer"):
        to_bytes(42, None, "key")


def test_serializers_are_applied_and_checked() -> None:
    assert to_bytes({"a": 1}, lambda v: json.dumps(v).encode(), "value") == b'{"a": 1}'
    assert to_bytes(None, lambda v: b"never called", "value") is None  # a tombstone stays one
    with pytest.raises(SerializationError, match="returned str"):
        to_bytes(1, str, "value")
    with pytest.raises(SerializationError, match="value_serializer raised ZeroDivisionError") as failed:
        to_bytes(1, lambda v: v / 0, "value")
    assert isinstance(failed.value.__cause__, ZeroDivisionError)
    with pytest.raises(TypeError, match="value_serializer"):
        check_serializer("value_serializer", "json")


def test_without_deserializers_the_gate_is_inactive_and_changes_nothing() -> None:
    g = gate()
    messages = [Msg("t", 0, b"k", b"v", 1)]
    assert not g.active
    assert g.many(messages) == messages and messages[0].value == b"v"


def test_a_failure_is_held_with_what_follows_until_skipped() -> None:
    g = gate(value=lambda b: int(b), key=bytes.decode)
    batch = [Msg("t", 0, b"a", b"1", 10), Msg("t", 0, None, b"x", 11), Msg("t", 0, b"c", b"3", 12)]
    delivered = g.many(batch)
    assert [(m.key, m.value) for m in delivered] == [("a", 1)]
    assert g.held == 2
    held = g.take_held()
    with pytest.raises(DeserializationError) as failed:
        g.many(held)
    error = failed.value
    assert (error.position, error.field, error.partition) == (11, "value", 0)
    assert error.message.value == b"x" and error.message.key is None  # left as received
    with pytest.raises(DeserializationError):
        g.one(g.take_held(1)[0])
    with pytest.raises(ValueError, match=r"error\.message"):
        g.skip(batch[2])
    g.skip(error.message)
    (last,) = g.many(g.take_held())
    assert (last.key, last.value) == ("c", 3)
    assert g.held == 0


def test_discard_forgets_held_messages() -> None:
    g = gate(value=int)
    with pytest.raises(DeserializationError):
        g.many([Msg("t", 0, None, b"x", 1), Msg("t", 1, None, b"2", 2)])
    g.discard(lambda m: m.partition == 1)
    assert [m.offset for m in g.take_held()] == [2]
