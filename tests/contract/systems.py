"""The three systems as the contract tests see them: a package, a URL, fresh topics and groups."""

from __future__ import annotations

import asyncio
import os
import secrets
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

import kafkawire
import kafkawire.sync
import pulsarwire
import pulsarwire.sync
import tubemqwire
import tubemqwire.sync
from mqwire.common.contract import Client
from tests.contract.blocking_facade import ClientFacade

# TubeMQ topics cannot be made on the fly quickly: these are deployed when the test broker starts
# (pyproject's mqwire_tubemq_topics). Every other system gets a fresh topic per test.
TUBEMQ_TOPICS = ("readme", "idle", "serde", "bad", "seek", "close", "group", "str")
# Runs of the suite at the same time on one broker (the runtime matrix) each take topics of their own, named
# with this suffix: a TubeMQ batch is confirmed whole, so another run's messages in it would hold it back.
TUBEMQ_SUFFIX = os.environ.get("MQWIRE_CONTRACT_TUBEMQ_SUFFIX", "")


def tubemq_topic(purpose: str, *, blocking: bool = False) -> str:
    """The deployed TubeMQ topic of a contract test; on uvloop another one (``_uv``), and through the blocking API
    a third (``_sync``), so that a test run three ways in one session never finds another run's messages
    (``contract_<purpose>_uv`` and ``contract_<purpose>_sync`` are deployed too)."""
    assert purpose in TUBEMQ_TOPICS, f"add contract_{purpose} to mqwire_tubemq_topics"
    # The run's suffix comes last: the runtime matrix deploys each listed topic with its step's suffix appended.
    if blocking:
        return f"contract_{purpose}_sync{TUBEMQ_SUFFIX}"
    return f"contract_{purpose}{TUBEMQ_SUFFIX}{_loop_suffix()}"


def _loop_suffix() -> str:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return ""
    return "_uv" if type(loop).__module__.startswith("uvloop") else ""


@dataclass(frozen=True)
class System:
    """One system under test: its package and the URL of its real broker. With ``blocking`` the package is the
    blocking one (``kafkawire.sync``...) and ``connect`` gives its client in the async contract's shape."""

    name: str
    package: ModuleType
    url: str
    blocking: bool = False

    def connect(self) -> Client[Any]:
        if self.blocking:
            return cast(Client[Any], ClientFacade(self.package.connect(self.url)))
        client: Client[Any] = self.package.connect(self.url)
        return client

    def topic(self, purpose: str) -> str:
        """A topic no other test uses."""
        if self.name == "tubemq":
            return tubemq_topic(purpose, blocking=self.blocking)
        return f"contract-{purpose}-{secrets.token_hex(4)}"

    @staticmethod
    def group(purpose: str) -> str:
        return f"contract_{purpose}_{secrets.token_hex(4)}"

    @property
    def receive_timeout(self) -> float:
        """How long a first message may take: a TubeMQ consumer waits for the master's balancing round."""
        return 60.0 if self.name == "tubemq" else 20.0


PACKAGES = {"kafka": kafkawire, "pulsar": pulsarwire, "tubemq": tubemqwire}
BLOCKING_PACKAGES = {"kafka": kafkawire.sync, "pulsar": pulsarwire.sync, "tubemq": tubemqwire.sync}
