"""What a schema is on the wire: its type, name, definition bytes and properties (Pulsar's ``SchemaInfo``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from pulsarwire.protocol.pulsar_api_pb2 import Schema as SchemaProto

__all__ = ["SchemaInfo", "SchemaType", "TopicSchema"]


class SchemaType(enum.IntEnum):
    """The schema types of Pulsar's protocol (the values of ``Schema.Type`` in ``CommandProducer``).

    BYTES is the protocol's ``None``: a topic without a schema.
    """

    BYTES = 0
    STRING = 1
    JSON = 2
    PROTOBUF = 3
    AVRO = 4
    BOOLEAN = 5
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FLOAT = 10
    DOUBLE = 11
    KEY_VALUE = 15
    PROTOBUF_NATIVE = 20
    AUTO_CONSUME = 21


@dataclass(frozen=True)
class SchemaInfo:
    """A schema as the broker stores it: ``data`` is the definition (JSON for AVRO, JSON and PROTOBUF)."""

    name: str
    type: SchemaType
    data: bytes = b""
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_proto(self) -> SchemaProto:
        """The ``Schema`` message of the open commands."""
        proto = SchemaProto(name=self.name, schema_data=self.data, type=int(self.type))  # type: ignore[arg-type]
        for key, value in sorted(self.properties.items()):
            proto.properties.add(key=key, value=value)
        return proto

    @classmethod
    def from_proto(cls, proto: SchemaProto) -> SchemaInfo:
        """The schema of a ``GetSchemaResponse``; an unknown type code raises ValueError."""
        return cls(
            name=proto.name,
            type=SchemaType(proto.type),
            data=proto.schema_data,
            properties={kv.key: kv.value for kv in proto.properties},
        )


@dataclass(frozen=True)
class TopicSchema:
    """A schema as registered on a topic: its ``info`` and its ``version`` there (0 for the first)."""

    info: SchemaInfo
    version: int

    @staticmethod
    def version_bytes(version: int) -> bytes:
        """A version number as the protocol carries it (8 bytes, big-endian)."""
        return version.to_bytes(8, "big", signed=True)

    @staticmethod
    def version_number(data: bytes) -> int:
        """The number of a version as the protocol carries it."""
        return int.from_bytes(data, "big", signed=True)
