"""The TubeMQ broker's memory store (``enableMemStore=true``, the server's default) loses acknowledged
messages when the broker process is SIGKILLed: they were in the broker's memory, not yet in its files.

The test counts the loss; it fails if a crash ever stops losing anything, since then docs/guarantees.md's statement
about this setting would be wrong.
"""

from __future__ import annotations

import asyncio

import pytest

from mqwire.testing.cluster import RunningCluster
from tests.cluster.test_tubemq_cluster import crash_a_broker_under_traffic, endpoint_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


async def test_memory_store_on_loses_acknowledged_messages_in_a_broker_crash(
    tubemq_cluster_mem_store: RunningCluster,
) -> None:
    await asyncio.to_thread(tubemq_cluster_mem_store.ensure_all_up)
    assert endpoint_of(tubemq_cluster_mem_store).mem_store is True
    lost, sent = await crash_a_broker_under_traffic(tubemq_cluster_mem_store, "cluster_durable")
    assert lost, f"none of {len(sent.acknowledged)} acknowledged messages lost with the memory store on"
