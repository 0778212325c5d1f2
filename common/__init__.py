"""Protocol-agnostic asyncio machinery shared by kafkawire, pulsarwire and tubemqwire."""

from common.channel import Channel
from common.correlation import CorrelationTable
from common.errors import (
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
from common.framing import FrameSplitter, LengthPrefixedSplitter
from common.policy import AddressRotation, Backoff
from common.pool import ConnectionPool
from common.transport import Connection
from common.urls import ServiceUrl, parse_service_url

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
