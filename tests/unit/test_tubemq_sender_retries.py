"""A send that finds no partition (retriable ``TopicNoPartitionError``) takes the producer's retries first."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from tubemqwire.errors import TopicNoPartitionError
from tubemqwire.protocol.metadata import PartitionInfo
from tubemqwire.routing import PartitionRouter
from tubemqwire.sender import Outgoing, Sender


async def test_no_partition_is_retried_before_the_send_fails() -> None:
    lookups: list[str] = []

    def partitions(topic: str) -> tuple[PartitionInfo, ...]:
        lookups.append(topic)
        return ()

    sender = Sender(
        client_id="test",
        sent_addr=0,
        brokers=cast(Any, None),  # never reached: there is no partition to connect to
        credentials=cast(Any, None),
        partitions=partitions,
        router=PartitionRouter(),
        retries=3,
        retry_backoff=0.001,
        spawn=asyncio.create_task,
    )
    future = sender.send(Outgoing("t", None, b"v", 0, 0, None, None))
    with pytest.raises(TopicNoPartitionError):
        await asyncio.wait_for(future, 5)
    assert lookups == ["t"] * 4  # the first try and three retries
