"""Errors raised by the launcher."""

from __future__ import annotations


class BrokerError(RuntimeError):
    """A broker could not be started, reached or stopped."""


class BrokerStartError(BrokerError):
    """A broker died or did not become ready in time; the message ends with its log tail."""


class PortTakenError(BrokerStartError):
    """A fresh broker found a port chosen for it taken by another process before it could bind it."""
