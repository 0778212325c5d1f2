"""What each subcommand does, against any of the three systems."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Mapping
from typing import IO

import kafkawire
from kafkawire import TopicPartition
from mqwire.cli.formats import InputRecord, Template, read_records
from mqwire.cli.progress import Meter
from mqwire.cli.stats_view import write_stats
from mqwire.cli.systems import (
    ConsumerReceiver,
    UnsupportedError,
    connect,
    open_consumer,
    options_for,
    system_of,
    url_for,
)
from mqwire.common.contract import Producer, Receipt

# Exit codes (documented in --help).
OK, FAILED, USAGE, UNSUPPORTED, INCOMPLETE = 0, 1, 2, 3, 4


async def produce(
    url: str,
    topic: str,
    source: IO[bytes],
    fmt: str,
    key: bytes | None,
    headers: Mapping[str, bytes],
    rate: float | None,
    quiet: bool,
    stats: bool = False,
) -> int:
    started = time.monotonic()
    async with connect(url) as client, client.producer(topic) as producer:
        futures: list[Awaitable[Receipt]] = []
        with Meter(f"produce {topic}") as meter:
            for record in read_records(source, fmt, key, headers):
                futures.append(await _enqueue(producer, record))
                meter.add(1, len(record.value))
                if rate:
                    ahead = meter.count / rate - (time.monotonic() - started)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
            await producer.flush()
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
        if stats:
            write_stats(producer.stats(), sys.stderr)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    if not quiet:
        meter.summary(
            f"produced to {topic}", acknowledged=f"{len(outcomes) - len(failed):,}", failed=f"{len(failed):,}"
        )
    if failed:
        print(f"mqwire: {len(failed)} messages failed, first: {failed[0]}", file=sys.stderr)
        return FAILED
    return OK


async def _enqueue(producer: Producer, record: InputRecord) -> Awaitable[Receipt]:
    return await producer.enqueue(record.value, key=record.key, headers=record.headers or None)


async def consume(
    url: str,
    topic: str,
    group: str | None,
    start: str,
    count: int | None,
    follow: bool,
    template: Template,
    idle_timeout: float,
    out: IO[str],
    quiet: bool,
    stats: bool = False,
) -> int:
    system = system_of(url)
    async with connect(url) as client, open_consumer(client, system, topic, group, start) as consumer:
        receiver = ConsumerReceiver(consumer)
        with Meter(f"consume {topic}", count) as meter:
            while count is None or meter.count < count:
                wanted = None if count is None else count - meter.count
                row = await receiver.next(1.0 if follow else idle_timeout, wanted)
                if row is None:
                    if follow:
                        continue
                    break  # nothing more within the idle timeout: the end of what is there
                out.write(template.render(row) + "\n")
                meter.add(1, len(row.value or b""))
                if group is not None:
                    await receiver.ack()
            out.flush()
        if stats:
            await _consumer_stats(consumer)
    if not quiet:
        meter.summary(f"consumed from {topic}")
    if count is not None and meter.count < count:
        print(f"mqwire: only {meter.count} of {count} messages arrived", file=sys.stderr)
        return INCOMPLETE
    return OK


async def _consumer_stats(consumer: object) -> None:
    refresh = getattr(consumer, "refresh_lag", None)  # Pulsar asks the broker for the backlog
    if refresh is not None:
        await refresh()
    read = getattr(consumer, "stats", None)
    if read is None:
        raise UnsupportedError(f"--stats: {type(consumer).__name__} has no statistics")
    write_stats(read(), sys.stderr)


async def topics(url: str, action: str, names: list[str], partitions: int, admin_url: str | None, out: IO[str]) -> int:
    system = system_of(url)
    if system == "kafka":
        async with kafkawire.connect(url_for(url), **options_for("kafka")) as client, client.admin() as admin:
            if action == "list":
                for name in sorted(await admin.list_topics()):
                    out.write(name + "\n")
            elif action == "create":
                for name in names:
                    await admin.create_topic(name, partitions=partitions)
            elif action == "delete":
                await admin.delete_topics(names)
            else:
                for topic in await admin.describe_topics(names or None):
                    out.write(
                        json.dumps(
                            {
                                "topic": topic.name,
                                "partitions": [
                                    {"partition": p.partition, "leader": p.leader, "replicas": p.replicas, "isr": p.isr}
                                    for p in topic.partitions
                                ],
                            }
                        )
                        + "\n"
                    )
        return OK
    if system == "pulsar":
        return await _pulsar_topics(url, action, names, partitions, admin_url, out)
    raise UnsupportedError(
        "TubeMQ topics are managed through the master's web console; `topics` covers Kafka and Pulsar"
    )


async def _pulsar_topics(
    url: str, action: str, names: list[str], partitions: int, admin_url: str | None, out: IO[str]
) -> int:
    import pulsarwire  # the admin REST API of the broker (port 8080 by default)

    if admin_url is None:
        raise UnsupportedError("Pulsar topics need the broker's admin URL: --admin-url http://host:8080")
    # Only the admin API is used: the client is not connected to the binary port.
    client = pulsarwire.connect(url, admin_url=admin_url, **options_for("pulsar"))
    try:
        async with client.admin() as admin:
            if action == "list":
                for name in await admin.list_topics():
                    out.write(name + "\n")
            elif action == "create":
                for name in names:
                    await admin.create_topic(name, partitions, exist_ok=True)
            elif action == "delete":
                for name in names:
                    await admin.delete_topic(name, force=True)
            else:
                for name in names:
                    out.write(json.dumps({"topic": name, "partitions": await admin.partitions(name)}) + "\n")
    finally:
        await client.close()
    return OK


async def groups(url: str, action: str, names: list[str], topic_names: list[str], out: IO[str]) -> int:
    if system_of(url) != "kafka":
        raise UnsupportedError("`groups` covers Kafka consumer groups and share groups")
    async with kafkawire.connect(url_for(url), **options_for("kafka")) as client, client.admin() as admin:
        if action == "list":
            for group in await admin.list_groups():
                out.write(f"{group.group_id}\t{group.state}\t{group.group_type}\n")
        elif action == "describe":
            # Share groups (KIP-932) have a describe API of their own; consumer groups the classic one.
            types = {group.group_id: group.group_type for group in await admin.list_groups()}
            shared = [name for name in names if types.get(name) == "share"]
            for share_group in await admin.describe_share_groups(shared) if shared else []:
                share_members = [
                    {
                        "member": m.member_id,
                        "client": m.client_id,
                        "host": m.client_host,
                        "partitions": sorted(f"{tp.topic}-{tp.partition}" for tp in m.assignment),
                    }
                    for m in share_group.members
                ]
                record = {
                    "group": share_group.group_id,
                    "type": "share",
                    "state": share_group.state,
                    "coordinator": share_group.coordinator,
                }
                out.write(json.dumps({**record, "members": share_members}) + "\n")
            for described in await admin.describe_groups([name for name in names if name not in shared]):
                members = [
                    {"member": m.member_id, "client": m.client_id, "host": m.client_host} for m in described.members
                ]
                out.write(
                    json.dumps(
                        {
                            "group": described.group_id,
                            "state": described.state,
                            "protocol": described.protocol,
                            "coordinator": described.coordinator,
                            "members": members,
                        }
                    )
                    + "\n"
                )
        else:
            # Every partition of the given topics (default: all topics); rows where the group committed.
            topics_described = await admin.describe_topics(topic_names or None)
            partitions = [TopicPartition(t.name, p.partition) for t in topics_described for p in t.partitions]
            ends = await admin.list_offsets({tp: "latest" for tp in partitions}) if partitions else {}
            types = {group.group_id: group.group_type for group in await admin.list_groups()}
            for name in names:
                if types.get(name) == "share":
                    # A share group's position is its start offset: records before it are settled.
                    wanted: dict[str, list[int]] = {}
                    for tp in partitions:
                        wanted.setdefault(tp.topic, []).append(tp.partition)
                    committed = await admin.list_share_group_offsets(name, wanted)
                else:
                    committed = await admin.list_consumer_group_offsets(name, partitions)
                for tp in sorted(tp for tp, offset in committed.items() if offset is not None):
                    offset = committed[tp]
                    assert offset is not None
                    end = ends[tp].offset
                    out.write(f"{name}\t{tp.topic}\t{tp.partition}\t{offset}\t{end}\t{end - offset}\n")
    return OK


async def bench(url: str, phase: str, topic: str, count: int, size: int) -> int:
    system = system_of(url)
    value = os.urandom(size)
    async with connect(url) as client:
        if phase == "produce":
            async with client.producer(topic) as producer:
                with Meter(f"bench produce {topic}", count) as meter:
                    futures = []
                    for i in range(count):
                        futures.append(await producer.enqueue(value))
                        if i % 1000 == 999:
                            meter.add(1000, 1000 * size)
                    await producer.flush()
                    await asyncio.gather(*futures)
                    meter.add(count - meter.count, (count - meter.count) * size)
        else:
            async with open_consumer(client, system, topic, None, "earliest") as consumer:
                receiver = ConsumerReceiver(consumer)
                with Meter(f"bench consume {topic}", count) as meter:
                    while meter.count < count:
                        row = await receiver.next(10.0, count - meter.count)
                        if row is None:
                            break
                        meter.add(1, len(row.value or b""))
    meter.summary(f"bench {phase} {system}")
    return OK if meter.count >= count else INCOMPLETE
