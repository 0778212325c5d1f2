"""client.admin() against the broker's real admin REST API: list, create, describe and delete topics."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import pulsarwire
from mqwire.common.errors import ClosedError, ConnectError
from mqwire.testing.endpoints import PulsarBroker
from pulsarwire.errors import TopicAlreadyExistsError

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def test_topic_administration(pulsar_broker: PulsarBroker) -> None:
    plain, parted = unique("admin-plain"), unique("admin-parted")
    full_plain, full_parted = f"persistent://public/default/{plain}", f"persistent://public/default/{parted}"
    async with (
        pulsarwire.connect(pulsar_broker.url, admin_url=pulsar_broker.admin_url) as client,
        client.admin() as admin,
    ):
        assert await admin.create_topic(plain) == full_plain
        assert await admin.create_topic(parted, partitions=3) == full_parted
        with pytest.raises(TopicAlreadyExistsError, match=parted):
            await admin.create_topic(parted, partitions=3)
        await admin.create_topic(parted, partitions=3, exist_ok=True)
        assert await admin.partitions(plain) == 0
        assert await admin.partitions(parted) == 3
        topics = await admin.list_topics()
        assert full_plain in topics
        assert {f"{full_parted}-partition-{i}" for i in range(3)} <= set(topics)
        assert full_parted in await admin.list_partitioned_topics("public/default")
        # The client sees the same partitions through the binary protocol.
        async with client.producer(parted) as producer:
            assert producer.partitions == 3
            receipt = await producer.send(b"x", key=b"k")
            assert receipt.topic == full_parted
        await admin.delete_topic(parted, force=True)
        await admin.delete_topic(plain, force=True)
        topics = await admin.list_topics()
        assert full_plain not in topics and not any(t.startswith(full_parted) for t in topics)
        assert full_parted not in await admin.list_partitioned_topics()
        with pytest.raises(pulsarwire.TopicNotFoundError):
            await admin.delete_topic(plain)
    with pytest.raises(ClosedError):
        await admin.list_topics()


async def test_admin_needs_a_url_and_reports_an_unreachable_one(pulsar_broker: PulsarBroker) -> None:
    async with pulsarwire.connect(pulsar_broker.url) as client:
        with pytest.raises(ValueError, match="admin_url"):
            client.admin()
        with pytest.raises(ValueError, match="admin_url"):
            client.admin(admin_url="ftp://example")
        with pytest.raises(TypeError, match="admin_timout"):
            client.admin(admin_url=pulsar_broker.admin_url, admin_timout=1)  # type: ignore[call-arg]
        # A port nothing listens on: refused at once.
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with client.admin(admin_url=f"http://127.0.0.1:{port}", admin_timeout=5) as admin:
            with pytest.raises(ConnectError):
                await admin.list_topics()
