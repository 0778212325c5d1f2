"""Checks the protobuf parser leaves out for proto2 messages."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


def invalid_string_field(message: Message) -> str | None:
    """The path of the first string field that is not valid UTF-8, searching nested messages, or None.

    A proto2 parser keeps such a field and hands it out as bytes where str is promised; code further on
    would fail with a TypeError instead of the ProtocolError the bytes deserve.
    """
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_STRING:
            values = value if field.is_repeated else (value,)
            if not all(isinstance(item, str) for item in values):
                return field.name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if field.is_repeated else (value,):
                inner = invalid_string_field(item)
                if inner is not None:
                    return f"{field.name}.{inner}"
    return None
