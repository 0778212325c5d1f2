"""One error hierarchy for the three clients.

Every error says whether retrying can help (``retriable``). Protocol packages subclass these for their
broker error codes and re-export the whole hierarchy, so ``except mqwire_pkg.ConnectionLostError`` works
the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The hierarchy: what each package's errors module re-exports whole (ErrorCodes is the packages' own tool).
__all__ = [
    "AuthenticationError",
    "BrokerError",
    "ChecksumError",
    "ClosedError",
    "ConfigurationError",
    "ConnectError",
    "ConnectionLostError",
    "DeserializationError",
    "FatalBrokerError",
    "FatalError",
    "ForkedClientError",
    "FrameTooLargeError",
    "MqwireError",
    "OptionTypeError",
    "ProtocolError",
    "ReceiveTimeoutError",
    "RequestTimeoutError",
    "RetriableBrokerError",
    "RetriableError",
    "SchemaResolutionError",
    "SerializationError",
    "UnknownOptionError",
    "UnsupportedRuntimeError",
    "UnsupportedVersionError",
    "WrongLoopError",
]


class MqwireError(Exception):
    """Base of every error raised by the clients."""

    retriable: bool = False


class RetriableError(MqwireError):
    """A later attempt may succeed (connection trouble, leader moves, timeouts)."""

    retriable = True


class FatalError(MqwireError):
    """Retrying the same operation cannot help."""

    retriable = False


class ProtocolError(FatalError):
    """The peer sent bytes that do not follow the protocol; the connection that carried them is closed."""


class FrameTooLargeError(ProtocolError):
    """A length field claims more than the configured maximum; nothing of that size was allocated."""

    def __init__(self, claimed: int, maximum: int) -> None:
        super().__init__(f"frame of {claimed} bytes exceeds the maximum of {maximum} bytes")
        self.claimed = claimed
        self.maximum = maximum


class ChecksumError(ProtocolError):
    """A checksum carried on the wire does not match the data."""


class UnsupportedVersionError(FatalError):
    """Client and broker share no version of a request."""


class AuthenticationError(FatalError):
    """Credentials were refused or the handshake failed. Never carries the secret itself."""


class ConfigurationError(FatalError, ValueError):
    """An option is wrong; raised when the object is built, never deep in the network code."""


class OptionTypeError(ConfigurationError, TypeError):
    """An option or argument of the wrong type (a number where a name goes); also a ``TypeError``, as Python's own
    calls raise for one."""


class UnknownOptionError(OptionTypeError):
    """An option name the factory does not know, named with the closest known one; a ``TypeError``, as Python's
    own for an unexpected keyword."""


class ClosedError(FatalError):
    """The client, producer, consumer or connection was closed by the application."""


class ForkedClientError(FatalError, RuntimeError):
    """A client made before ``os.fork()`` was used in the child; its connections belong to the parent.

    Raised at the first use in the child (gunicorn ``--preload``, multiprocessing's ``fork`` start method):
    connect a new client in the child. Closing the parent's client there sends nothing and leaves the
    parent's connections open.
    """


class WrongLoopError(FatalError, RuntimeError):
    """A client, producer or consumer was used from an event loop or thread other than the one it belongs to.

    A client belongs to the loop it was made on (or first used on, when made outside a running loop); the
    message names that loop and thread and the ones it was used from.
    """


class UnsupportedRuntimeError(ConfigurationError, RuntimeError):
    """The clients cannot run where they were used: no asyncio event loop is running (trio, a bare coroutine),
    or the running loop lacks what the connections need (``create_connection`` with buffered protocols).

    Raised at ``connect`` / ``start`` and at the first use of a client; the message names what is running and
    what would work instead (asyncio's own loop or uvloop; under trio, trio-asyncio or anyio's asyncio backend).
    """


class ConnectError(RetriableError):
    """A TCP or TLS connection could not be established (refused, unreachable, timed out)."""


class ConnectionLostError(RetriableError):
    """The connection dropped; every request pending on it fails with this error."""


class RequestTimeoutError(RetriableError, TimeoutError):
    """No response arrived within the request timeout."""


class BrokerError(MqwireError):
    """An error code returned by a broker. Protocol packages map each code to a named subclass."""

    def __init__(self, message: str, *, code: int | str | None = None) -> None:
        super().__init__(message)
        self.code = code


class RetriableBrokerError(BrokerError, RetriableError):
    """A broker error that a later attempt may not see (e.g. leader not available)."""


class FatalBrokerError(BrokerError, FatalError):
    """A broker error that retrying will not fix (e.g. authorization failed)."""


class ReceiveTimeoutError(RetriableError, TimeoutError):
    """``receive(timeout=...)`` ended without a message. The same class in the three clients."""


class SerializationError(FatalError, TypeError):
    """A key or value cannot become bytes: it is not bytes and no serializer was given, or the serializer failed.

    The message names the option that would fix it (``key_serializer`` or ``value_serializer``).
    """


class DeserializationError(FatalError):
    """A consumer's ``key_deserializer`` or ``value_deserializer`` raised on a message.

    The message stays first in line: every ``receive`` / ``getmany`` raises this error again until the
    application calls ``consumer.skip(error.message)``, so nothing is skipped without the application saying so.
    ``message`` is the message as received (bytes), ``field`` is ``"key"`` or ``"value"``, ``position`` is where it
    is stored (the Kafka offset, the Pulsar message id, the TubeMQ message id), and ``__cause__`` the
    deserializer's exception.
    """

    def __init__(self, message: Any, *, field: str, topic: str, partition: int, position: object) -> None:
        super().__init__(
            f"{field}_deserializer failed on the message at {position} of {topic} partition {partition}"
            f" (consumer.skip(error.message) goes on with the next one)"
        )
        self.message: Any = message  # the consumer's own message class, as received
        self.field = field
        self.topic = topic
        self.partition = partition
        self.position = position


class SchemaResolutionError(DeserializationError):
    """A message's writer's schema cannot be resolved to the consumer's (reader's) schema, or is unknown.

    Raised instead of a value that might be wrong, and held like any ``DeserializationError`` until
    ``consumer.skip(error.message)``. ``writer_version`` is the schema version the message was written with,
    ``reader_version`` the version of the consumer's own schema on the topic (None when the topic does not hold
    it), and ``__cause__`` says why (the resolution's error, or the broker not knowing the version).
    """

    def __init__(
        self,
        message: Any,
        *,
        topic: str,
        partition: int,
        position: object,
        writer_version: object,
        reader_version: object,
        reason: str,
    ) -> None:
        super().__init__(message, field="value", topic=topic, partition=partition, position=position)
        self.args = (
            f"the message at {position} of {topic} partition {partition} was written with schema version"
            f" {writer_version}, which cannot be read as version {reader_version}: {reason}"
            f" (consumer.skip(error.message) goes on with the next one)",
        )
        self.writer_version = writer_version
        self.reader_version = reader_version
        self.reason = reason


class ErrorCodes:
    """A broker's numeric error codes and the named exception of each; a code not listed gets ``unknown``.

    ``error_for`` builds the exception with the broker's message (``"<fallback> <code>"`` when it sent none)
    and keeps the number in ``code``.
    """

    def __init__(self, by_code: Mapping[int, type[BrokerError]], *, unknown: type[BrokerError], fallback: str) -> None:
        self._by_code = dict(by_code)
        self._unknown = unknown
        self._fallback = fallback

    def error_class(self, code: int) -> type[BrokerError]:
        """The exception class of ``code``."""
        return self._by_code.get(code, self._unknown)

    def error_for(self, code: int, message: str) -> BrokerError:
        """The exception of ``code`` carrying the broker's ``message``."""
        return self.error_class(code)(message or f"{self._fallback} {code}", code=code)
