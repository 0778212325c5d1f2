"""Values decoded with the schema they were written with, resolved to the consumer's schema.

A message carries the version of its topic's schema its producer wrote it with. The consumer fetches that
version from the broker (GetSchema) once per topic and version, however many messages wait for it, and its
schema's ``decode_with`` resolves the writer's schema to its own (Avro's rules for AVRO, field names for JSON,
field numbers for protobuf). What cannot be resolved raises ``SchemaResolutionError``, never a wrong value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from mqwire.common.errors import MqwireError, SchemaResolutionError
from mqwire.common.lifecycle import OwnedTasks
from pulsarwire.errors import SchemaMismatchError
from pulsarwire.message import Message
from pulsarwire.schema import Schema, SchemaInfo, SchemaType, TopicSchema
from pulsarwire.schema_fetch import fetch_schema
from pulsarwire.session import Session
from pulsarwire.topics import PARTITION_SUFFIX, partition_of

__all__ = ["WriterSchemas"]

_Key = tuple[str, int]


def schema_topic(topic_name: str) -> str:
    """The topic whose schema a partition's messages use: the partitioned topic itself."""
    if partition_of(topic_name) >= 0:
        return topic_name[: topic_name.rindex(PARTITION_SUFFIX)]
    return topic_name


class WriterSchemas:
    """The writers' schemas of one consumer's topics, and its value deserializer that uses them.

    ``prepare(messages)`` fetches the versions the messages need and are not known yet; ``decode(data,
    message)`` then decodes without I/O. A version the broker does not know, or a fetch that failed, makes
    ``decode`` raise SchemaResolutionError; a failed fetch is tried again by the next ``prepare``.
    """

    def __init__(self, session: Session, reader: Schema[Any]) -> None:
        self._session = session
        self._reader = reader
        self._resolve = getattr(reader, "decode_with", None)
        # (topic, version) -> the schema, or None when the broker does not know that version.
        self._known: dict[_Key, TopicSchema | None] = {}
        self._failures: dict[_Key, str] = {}
        self._fetching: dict[_Key, asyncio.Task[None]] = {}
        # Per topic: the version of the reader's own schema there (None: the topic does not hold it).
        self._reader_versions: dict[str, int | None] = {}
        self._finding: dict[str, asyncio.Task[None]] = {}
        self._count = 0
        self._tasks = OwnedTasks("writers' schemas")

    @property
    def fetches(self) -> int:
        """GetSchema requests made so far (versions fetched, known or not)."""
        return self._count

    def missing(self, messages: Iterable[Message]) -> bool:
        """Whether any of ``messages`` needs a schema not fetched yet (the fast path asks this first)."""
        known = self._known
        return any(
            m.schema_version is not None and (schema_topic(m.topic_name), m.schema_version) not in known
            for m in messages
        )

    async def prepare(self, messages: Iterable[Message]) -> None:
        """Fetch the writers' schemas ``messages`` need; fetch failures are kept for ``decode`` to report."""
        keys = {
            (schema_topic(m.topic_name), m.schema_version) for m in messages if m.schema_version is not None
        }
        waits = [self._fetch(key) for key in keys if key not in self._known]
        if waits:
            await asyncio.gather(*waits)
        if self._reader.info.type is SchemaType.AUTO_CONSUME:
            return  # every writer's schema is its own reader's: there is no reader's version to name
        topics = {topic for topic, version in keys if self._differs(self._known.get((topic, version)))}
        finds = [self._find_reader_version(topic) for topic in topics if topic not in self._reader_versions]
        if finds:
            await asyncio.gather(*finds)

    def _differs(self, writer: TopicSchema | None) -> bool:
        return writer is not None and not self._same(writer.info)

    def _same(self, info: SchemaInfo) -> bool:
        return info.type is self._reader.info.type and info.data == self._reader.info.data

    async def _fetch(self, key: _Key) -> None:
        task = self._fetching.get(key)
        if task is None:
            task = self._fetching[key] = self._tasks.spawn(self._fetch_once(key), name="fetch", awaited=True)
            task.add_done_callback(lambda _: self._fetching.pop(key, None))
        # Shielded: one waiter cancelled does not cancel the fetch the others wait for.
        await asyncio.shield(task)

    async def _fetch_once(self, key: _Key) -> None:
        topic, version = key
        self._count += 1
        try:
            self._known[key] = await fetch_schema(self._session, topic, version)
            self._failures.pop(key, None)
        except (MqwireError, ValueError) as exc:
            self._failures[key] = f"fetching it from the broker failed: {type(exc).__name__}: {exc}"

    async def _find_reader_version(self, topic: str) -> None:
        task = self._finding.get(topic)
        if task is None:
            task = self._finding[topic] = self._tasks.spawn(self._find_once(topic), name="find", awaited=True)
            task.add_done_callback(lambda _: self._finding.pop(topic, None))
        await asyncio.shield(task)

    async def _find_once(self, topic: str) -> None:
        """The version of the reader's schema on ``topic``: the newest version with the same definition."""
        for key, schema in self._known.items():
            if key[0] == topic and schema is not None and self._same(schema.info):
                self._reader_versions[topic] = schema.version
                return
        try:
            self._count += 1
            latest = await fetch_schema(self._session, topic, None)
            version = -1 if latest is None else latest.version
            while version >= 0:
                key = (topic, version)
                if key not in self._known:
                    self._count += 1
                    self._known[key] = await fetch_schema(self._session, topic, version)
                found = self._known[key]
                if found is not None and self._same(found.info):
                    self._reader_versions[topic] = version
                    return
                version -= 1
        except (MqwireError, ValueError):
            return  # the version is only for the error's text: asked again next time
        self._reader_versions[topic] = None

    def decode(self, data: bytes, message: Message) -> Any:
        """The value of ``message`` (its payload ``data``) read with its writer's schema resolved to the reader's."""
        version = message.schema_version
        reader = self._reader
        if version is None:
            return reader.decode(data)
        topic = schema_topic(message.topic_name)
        key = (topic, version)
        try:
            writer = self._known[key]
        except KeyError:
            raise self._error(message, topic, version, self._failures.get(key, "its schema was not fetched")) from None
        if writer is None:
            raise self._error(message, topic, version, f"the broker knows no schema version {version} of {topic}")
        if self._resolve is None or self._same(writer.info):
            return reader.decode(data)
        try:
            return self._resolve(data, writer.info)
        except SchemaMismatchError as exc:
            raise self._error(message, topic, version, str(exc)) from exc

    def _error(self, message: Message, topic: str, version: int, reason: str) -> SchemaResolutionError:
        return SchemaResolutionError(
            message,
            topic=message.topic,
            partition=message.partition,
            position=message.message_id,
            writer_version=version,
            reader_version=self._reader_versions.get(topic),
            reason=reason,
        )
