"""Subject naming strategies: which registry subject a topic's keys or values are registered under.

Each is a callable ``(topic, field, record_name) -> subject``, ``field`` being ``"key"`` or ``"value"`` and
``record_name`` the schema's full record name (Avro ``namespace.name``, the Protobuf message's full name,
a JSON Schema's ``title``).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["SubjectNameStrategy", "record_name", "topic_name", "topic_record_name"]

SubjectNameStrategy = Callable[[str | None, str, str | None], str]


def topic_name(topic: str | None, field: str, record_name: str | None) -> str:
    """``<topic>-key`` / ``<topic>-value``: one schema history per topic (the registry's default)."""
    if topic is None:
        raise ValueError("the TopicName strategy needs option topic")
    return f"{topic}-{field}"


def record_name(topic: str | None, field: str, record_name: str | None) -> str:
    """The record's full name: one history per record type, whatever the topic."""
    if not record_name:
        raise ValueError("the RecordName strategy needs a schema with a record name")
    return record_name


def topic_record_name(topic: str | None, field: str, record_name: str | None) -> str:
    """``<topic>-<record name>``: one history per record type and topic."""
    if topic is None or not record_name:
        raise ValueError("the TopicRecordName strategy needs option topic and a schema with a record name")
    return f"{topic}-{record_name}"
