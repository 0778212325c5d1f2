"""Group administration on a Kafka broker that has just started: its group coordinator answers NOT_COORDINATOR
until it has loaded (twice in a row in 2 of 2 tries by hand, 2.7 s in all), and the admin calls ask again, as
the Java admin client does, instead of failing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import kafkawire
from kafkawire.metadata import TopicPartition
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.launcher import Launcher

pytestmark = pytest.mark.integration


@pytest.fixture
def fresh_kafka(tmp_path: Path) -> Iterator[KafkaBroker]:
    launcher = Launcher(state_dir=tmp_path / "state", work_root=tmp_path / "work", owned=True)
    status = launcher.start("kafka")
    try:
        assert isinstance(status.endpoint, KafkaBroker)
        yield status.endpoint
    finally:
        launcher.stop("kafka")


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_share_group_administration_right_after_the_broker_started(fresh_kafka: KafkaBroker) -> None:
    async with kafkawire.connect(fresh_kafka.url) as client, client.admin() as admin:
        await admin.create_topic("fresh", partitions=2)
        await admin.alter_share_group_offsets("fresh-share", {("fresh", 0): 0, ("fresh", 1): 0})
        assert await admin.list_share_group_offsets("fresh-share") == {
            TopicPartition("fresh", 0): 0,
            TopicPartition("fresh", 1): 0,
        }
        (described,) = await admin.describe_share_groups(["fresh-share"])
        assert (described.group_id, described.members) == ("fresh-share", [])
        await admin.delete_groups(["fresh-share"])
        assert [g.group_id for g in await admin.list_groups()] == []
