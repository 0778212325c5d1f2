"""Protocol-agnostic asyncio machinery shared by kafkawire, pulsarwire and tubemqwire."""

from mqwire.common.channel import Channel
from mqwire.common.correlation import CorrelationTable
from mqwire.common.errors import (
    AuthenticationError,
    BrokerError,
    ChecksumError,
    ClosedError,
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    DeserializationError,
    FatalBrokerError,
    FatalError,
    ForkedClientError,
    FrameTooLargeError,
    MqwireError,
    OptionTypeError,
    ProtocolError,
    ReceiveTimeoutError,
    RequestTimeoutError,
    RetriableBrokerError,
    RetriableError,
    SchemaResolutionError,
    SerializationError,
    UnsupportedRuntimeError,
    UnsupportedVersionError,
    WrongLoopError,
)
from mqwire.common.framing import FrameSplitter, LengthPrefixedSplitter
from mqwire.common.policy import AddressRotation, Backoff
from mqwire.common.pool import ConnectionPool
from mqwire.common.transport import Connection
from mqwire.common.urls import ServiceUrl, parse_service_url

__all__ = [
    "AddressRotation",
    "AuthenticationError",
    "Backoff",
    "BrokerError",
    "Channel",
    "ChecksumError",
    "ClosedError",
    "ConfigurationError",
    "ConnectError",
    "Connection",
    "ConnectionLostError",
    "ConnectionPool",
    "CorrelationTable",
    "DeserializationError",
    "FatalBrokerError",
    "FatalError",
    "ForkedClientError",
    "FrameSplitter",
    "FrameTooLargeError",
    "LengthPrefixedSplitter",
    "MqwireError",
    "OptionTypeError",
    "ProtocolError",
    "ReceiveTimeoutError",
    "RequestTimeoutError",
    "RetriableBrokerError",
    "RetriableError",
    "SchemaResolutionError",
    "SerializationError",
    "ServiceUrl",
    "UnsupportedRuntimeError",
    "UnsupportedVersionError",
    "WrongLoopError",
    "parse_service_url",
]
