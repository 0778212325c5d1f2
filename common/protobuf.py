"""Checks the protobuf parser leaves out for proto2 messages."""

from __future__ import annotations

import functools

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message


@functools.cache
def holds_strings(descriptor: Descriptor) -> bool:
    """Whether a message of this type can hold a string field anywhere inside it.

    Types without one (a fetched message is ids, a checksum and bytes) are not walked: a batch has
    thousands of them, and walking each would cost more than decoding it.
    """
    return _search(descriptor, set())


def _search(descriptor: Descriptor, seen: set[str]) -> bool:
    if descriptor.full_name in seen:
        return False  # a recursive type: already being searched further up
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            return True
        inner = field.message_type
        if field.type == FieldDescriptor.TYPE_MESSAGE and inner is not None and _search(inner, seen):
            return True
    return False


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
        elif field.type == FieldDescriptor.TYPE_MESSAGE and (
            field.message_type is None or holds_strings(field.message_type)
        ):
            for item in value if field.is_repeated else (value,):
                inner = invalid_string_field(item)
                if inner is not None:
                    return f"{field.name}.{inner}"
    return None
