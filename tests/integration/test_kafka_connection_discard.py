"""Dropping a failed connection: what still waits on it fails as lost (retriable), and a fresh connection the
pool already holds to the same broker is left alone (a late failure on an older one must not close it)."""

from __future__ import annotations

import asyncio

import pytest

import kafkawire
from kafkawire.protocol.messages.api_versions import ApiVersionsRequest
from mqwire.common.errors import ConnectionLostError, RequestTimeoutError
from mqwire.testing.endpoints import KafkaBroker

pytestmark = pytest.mark.integration


async def test_a_late_failure_on_an_old_connection_leaves_the_fresh_one_open(kafka_broker: KafkaBroker) -> None:
    async with kafkawire.connect(kafka_broker.url) as client:
        session = client._session
        await session.refresh_metadata([])
        node = next(iter(session.metadata.brokers))
        old = await session.connection(node)
        waiting = asyncio.ensure_future(old.request(ApiVersionsRequest(), version=0))
        await asyncio.sleep(0)  # written; its answer has not been read yet
        session.discard(old, RequestTimeoutError("another request timed out"))
        with pytest.raises(ConnectionLostError):
            await waiting

        fresh = await session.connection(node)
        assert fresh is not old and not fresh.closed
        session.discard(old, ConnectionLostError("the old connection failed late"))
        assert not fresh.closed
        assert await session.connection(node) is fresh
        reply = await fresh.request(ApiVersionsRequest(), version=0)
        assert reply.error_code == 0
