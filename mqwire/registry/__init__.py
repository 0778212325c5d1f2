"""Schema registry serializers: Avro, JSON Schema and Protobuf values in the registry's wire format.

    registry = RegistryClient("http://localhost:8081")
    serializer = AvroSerializer(registry, ORDER_SCHEMA, topic="orders", to_dict=dataclasses.asdict)
    await serializer.prepare()                      # registers the schema once
    producer = client.producer(value_serializer=serializer)

The wire format is a magic byte 0, the schema id (4 bytes, big-endian) and the payload (Protobuf adds its
message indexes), as written and read by the registry's own serializers. Only HTTP and that format are known
here, no messaging protocol: the serializers fit any client's ``value_serializer`` / ``value_deserializer``.
"""

from mqwire.registry.client import RegisteredSchema, RegistryClient
from mqwire.registry.errors import (
    RegistryError,
    RegistryUnreachableError,
    SchemaNotFoundError,
    SchemaResolutionError,
    UnknownSchemaIdError,
    WireFormatError,
)
from mqwire.registry.naming import record_name, topic_name, topic_record_name
from mqwire.registry.serde import (
    AvroDeserializer,
    AvroSerializer,
    DeserializerOptions,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryDeserializer,
    RegistrySerializer,
    SerializerOptions,
)

__all__ = [
    "AvroDeserializer",
    "AvroSerializer",
    "DeserializerOptions",
    "JsonSchemaDeserializer",
    "JsonSchemaSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegisteredSchema",
    "RegistryClient",
    "RegistryDeserializer",
    "RegistryError",
    "RegistrySerializer",
    "RegistryUnreachableError",
    "SchemaNotFoundError",
    "SchemaResolutionError",
    "SerializerOptions",
    "UnknownSchemaIdError",
    "WireFormatError",
    "record_name",
    "topic_name",
    "topic_record_name",
]
