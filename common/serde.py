"""Keys and values between application objects and bytes: the serializer hooks of the three clients.

Producers call ``to_bytes`` for each key and value; consumers hand every message to the application through
a ``Deserializing`` gate, which applies the deserializers and holds back a message whose deserializer failed
until the application skips it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar

from mqwire.common.errors import DeserializationError, SerializationError

__all__ = ["Deserializing", "check_serializer", "to_bytes"]

Field = Literal["key", "value"]


def check_serializer(option: str, value: object) -> Callable[[Any], Any] | None:
    """Validate a ``*_serializer`` / ``*_deserializer`` option at construction."""
    if value is not None and not callable(value):
        raise TypeError(f"option {option} must be a callable or None, not {type(value).__name__}")
    return value


def to_bytes(obj: object, serializer: Callable[[Any], Any] | None, field: Field) -> bytes | None:
    """``obj`` as the bytes to send: through ``serializer`` if there is one, else it must already be bytes."""
    if obj is None:
        return None  # no key, or a null value (a Kafka tombstone): not something to serialize
    if serializer is None:
        # The common case first: no serializer and bytes given.
        if type(obj) is bytes:
            return obj
        if isinstance(obj, bytes | bytearray | memoryview):
            return bytes(obj)
        hint = " (encode it, or pass {0}_serializer=str.encode)" if isinstance(obj, str) else ""
        raise SerializationError(
            f"a {field} must be bytes or None, not {type(obj).__name__}; pass {field}_serializer= to send other"
            f" types{hint.format(field)}"
        )
    try:
        out = serializer(obj)
    except Exception as exc:
        raise SerializationError(f"{field}_serializer raised {type(exc).__name__}: {exc}") from exc
    if out is None or type(out) is bytes:
        return out
    if isinstance(out, bytes | bytearray | memoryview):
        return bytes(out)
    raise SerializationError(f"{field}_serializer returned {type(out).__name__}, not bytes")


class RawMessage(Protocol):
    """What the gate needs of a message: a writable key and value and where it came from."""

    topic: str
    partition: int
    key: Any
    value: Any


M = TypeVar("M", bound=RawMessage)


class Deserializing(Generic[M]):
    """Applies a consumer's deserializers as messages are delivered, in order, holding back failures.

    With ``value_sees_message`` the value deserializer is called as ``value_deserializer(data, message)``;
    a ``DeserializationError`` it raises itself (a subclass with more to say) is held as it is.

    A message whose deserializer raises is kept first in line with the messages taken after it, and every
    delivery raises ``DeserializationError`` for it until ``skip(message)``: nothing is lost or skipped
    unless the application says so. The consumer takes held messages (``take_held``) before new ones.
    """

    __slots__ = ("_held", "_key", "_position", "_value", "_value_sees_message")

    def __init__(
        self,
        key_deserializer: Callable[[bytes], Any] | None,
        value_deserializer: Callable[..., Any] | None,
        position: Callable[[M], object],
        *,
        value_sees_message: bool = False,
    ) -> None:
        self._key = check_serializer("key_deserializer", key_deserializer)
        self._value = check_serializer("value_deserializer", value_deserializer)
        # A schema-aware value deserializer is called with the message too (its writer's schema version).
        self._value_sees_message = value_sees_message
        self._position = position
        self._held: deque[M] = deque()

    @property
    def active(self) -> bool:
        """Whether messages need to pass through the gate at all (deserializers set, or messages held)."""
        return self._key is not None or self._value is not None or bool(self._held)

    @property
    def held(self) -> int:
        """Messages taken from the consumer but not yet delivered."""
        return len(self._held)

    def take_held(self, limit: int | None = None) -> list[M]:
        """Held messages to deliver before any new one, at most ``limit``."""
        count = len(self._held) if limit is None else min(limit, len(self._held))
        return [self._held.popleft() for _ in range(count)]

    def one(self, message: M) -> M:
        """``message`` deserialized; raises ``DeserializationError`` and holds it when a deserializer fails."""
        try:
            self._apply(message)
        except DeserializationError:
            self._held.appendleft(message)
            raise
        return message

    def many(self, messages: Sequence[M]) -> list[M]:
        """The messages deserialized up to the first failure; that one and the rest are held.

        Raises ``DeserializationError`` only when the first message fails, so what was good is delivered first.
        """
        if self._key is None and self._value is None:
            return list(messages)
        for index, message in enumerate(messages):
            try:
                self._apply(message)
            except DeserializationError:
                self._held.extendleft(reversed(messages[index:]))
                if index == 0:
                    raise
                return list(messages[:index])
        return list(messages)

    def hold_back(self, messages: Sequence[M]) -> None:
        """Put ``messages`` (taken but not delivered) first in line again, in order."""
        self._held.extendleft(reversed(messages))

    def skip(self, message: M) -> None:
        """Drop the held message that failed, so delivery goes on with the next one."""
        if not self._held or self._held[0] is not message:
            raise ValueError("skip() takes the message of the last DeserializationError (error.message)")
        self._held.popleft()

    def discard(self, keep: Callable[[M], bool]) -> None:
        """Forget held messages that ``keep`` rejects (after a seek or a lost partition)."""
        self._held = deque(m for m in self._held if keep(m))

    def _apply(self, message: M) -> None:
        # Both are computed before either is assigned, so a failure leaves the message as received.
        key, value = message.key, message.value
        if self._key is not None and key is not None:
            key = self._call(self._key, key, "key", message)
        if self._value is not None and value is not None:
            value = self._call(self._value, value, "value", message)
        message.key, message.value = key, value

    def _call(self, deserializer: Callable[..., Any], data: Any, field: Field, message: M) -> Any:
        try:
            if field == "value" and self._value_sees_message:
                return deserializer(data, message)
            return deserializer(data)
        except DeserializationError:
            raise
        except Exception as exc:
            raise DeserializationError(
                message, field=field, topic=message.topic, partition=message.partition,
                position=self._position(message),
            ) from exc
