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
    FatalBrokerError,
    FatalError,
    FrameTooLargeError,
    MqwireError,
    ProtocolError,
    RequestTimeoutError,
    RetriableBrokerError,
    RetriableError,
    UnsupportedVersionError,
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
    "FatalBrokerError",
    "FatalError",
    "FrameSplitter",
    "FrameTooLargeError",
    "LengthPrefixedSplitter",
    "MqwireError",
    "ProtocolError",
    "RequestTimeoutError",
    "RetriableBrokerError",
    "RetriableError",
    "ServiceUrl",
    "UnsupportedVersionError",
    "parse_service_url",
]
