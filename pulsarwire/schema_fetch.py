"""GetSchema: a topic's registered schema, asked of the broker at the service URL."""

from __future__ import annotations

from pulsarwire import errors
from pulsarwire.protocol import commands
from pulsarwire.protocol.pulsar_api_pb2 import ServerError
from pulsarwire.schema.info import SchemaInfo, TopicSchema
from pulsarwire.session import Session

__all__ = ["fetch_schema"]


async def fetch_schema(session: Session, topic: str, version: int | None) -> TopicSchema | None:
    """The schema of ``topic`` (a complete name) at ``version`` (None: the latest), or None without one."""
    connection = await session.service_connection()
    request_id = connection.next_request_id()
    raw_version = None if version is None else TopicSchema.version_bytes(version)
    frame = await connection.request(
        commands.get_schema(request_id, topic, raw_version), request_id, session.operation_timeout
    )
    answer = frame.command.getSchemaResponse
    if answer.HasField("error_code"):
        # The broker answers TopicNotFound for a topic without a schema (or without that version).
        if answer.error_code == ServerError.TopicNotFound:
            return None
        raise errors.error_for(answer.error_code, answer.error_message)
    return TopicSchema(SchemaInfo.from_proto(answer.schema), TopicSchema.version_number(answer.schema_version))
