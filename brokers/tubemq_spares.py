"""Spare TubeMQ topics: deployed while the broker starts, then handed out to the tests that need fresh ones.

A topic added to a running TubeMQ broker waits about 30 s before producers may use it: the master walks the
broker through its configuration steps (load, subscribe, publish), and the delays between those steps are
constants of the server, not settings. A topic deployed before the broker's first heartbeat goes live with
the broker. So a test session deploys a stock of spare topics at start (``mqwire_tubemq_spare_topics``, as
``PARTITIONS:COUNT,...``) and :class:`FreshTopics` hands each out once. When the stock of a partition count
runs out, or the broker was not started here, the topics asked for are created on the spot, together.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from mqwire.testing.endpoints import TubeMQBroker
from mqwire.testing.tubemq import create_topics


def parse_spares(text: str | None) -> dict[int, int]:
    """``"1:4,3:2"`` (partitions:count) into ``{1: 4, 3: 2}``."""
    spares: dict[int, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        partitions, sep, count = item.partition(":")
        if not sep or not partitions.strip().isdigit() or not count.strip().isdigit() or int(partitions) < 1:
            raise ValueError(f"spare TubeMQ topics: {item!r} is not PARTITIONS:COUNT")
        spares[int(partitions)] = spares.get(int(partitions), 0) + int(count)
    return spares


def spare_topic_names(spares: Mapping[int, int]) -> dict[str, int]:
    """The spare topics' names with their partition counts: ``spare2p_07`` is the eighth of two partitions."""
    return {f"spare{partitions}p_{i:02d}": partitions for partitions, count in spares.items() for i in range(count)}


class FreshTopics:
    """Topics no other test has used, from the spares deployed at start where there are any left."""

    def __init__(self, broker: TubeMQBroker, spares: Mapping[str, int]) -> None:
        self._broker = broker
        self._free: dict[int, list[str]] = {}
        for name, partitions in spares.items():
            self._free.setdefault(partitions, []).append(name)

    def take(self, partitions: Mapping[str, int]) -> dict[str, str]:
        """A fresh topic for each role in ``partitions`` (role: partition count), as role: topic name.

        Spares come back at once; any others are deployed together, so they share one ~30 s wait."""
        names: dict[str, str] = {}
        for role, count in partitions.items():
            free = self._free.get(count)
            names[role] = free.pop(0) if free else f"fresh{secrets.token_hex(3)}_{role}"
        # Deploying a spare again is a no-op that finds it publishable: this also checks it is there.
        create_topics(self._broker, {names[role]: partitions[role] for role in partitions})
        return names

    def left(self, partitions: int) -> int:
        """How many spares of ``partitions`` partitions are still free."""
        return len(self._free.get(partitions, ()))


__all__ = ["FreshTopics", "parse_spares", "spare_topic_names"]
