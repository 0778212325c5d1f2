"""Errors the Pulsar client raises on its own, without a broker error code behind them."""

from __future__ import annotations

from mqwire.common.errors import (
    ClosedError,
    DeserializationError,
    FatalError,
    ReceiveTimeoutError,
    RequestTimeoutError,
    RetriableError,
    SchemaResolutionError,
    SerializationError,
)


class SendTimeoutError(RequestTimeoutError):
    """The broker did not confirm a message within ``send_timeout_ms``."""


class ProducerQueueIsFullError(RetriableError):
    """``max_pending_messages`` messages are waiting and ``block_if_queue_full`` is off."""


class MessageTooBigError(FatalError, ValueError):
    """A message exceeds the broker's maximum message size and chunking is off."""


class TooManyRedirectsError(RetriableError):
    """A topic lookup was redirected more often than the limit."""


class LookupFailedError(RetriableError):
    """A lookup answered neither a broker nor a known error."""


class ProducerClosedError(ClosedError):
    """The producer is closed."""


class ConsumerClosedError(ClosedError):
    """The consumer (or reader) is closed."""


__all__ = [
    "ConsumerClosedError",
    "DeserializationError",
    "LookupFailedError",
    "MessageTooBigError",
    "ProducerClosedError",
    "ProducerQueueIsFullError",
    "ReceiveTimeoutError",
    "SchemaResolutionError",
    "SendTimeoutError",
    "SerializationError",
    "TooManyRedirectsError",
]
