"""Protocol-agnostic asyncio machinery shared by kafkawire, pulsarwire and tubemqwire."""

from mqwire.common.channel import Channel
from mqwire.common.correlation import CorrelationTable
from mqwire.common.errors import *  # noqa: F403 - the whole error hierarchy
from mqwire.common.errors import __all__ as __all__  # the hierarchy's names, extended below
from mqwire.common.framing import FrameSplitter, LengthPrefixedSplitter
from mqwire.common.policy import AddressRotation, Backoff
from mqwire.common.pool import ConnectionPool
from mqwire.common.transport import Connection
from mqwire.common.urls import ServiceUrl, parse_service_url

__all__ = [
    *__all__,
    "AddressRotation",
    "Backoff",
    "Channel",
    "Connection",
    "ConnectionPool",
    "CorrelationTable",
    "FrameSplitter",
    "LengthPrefixedSplitter",
    "ServiceUrl",
    "parse_service_url",
]
