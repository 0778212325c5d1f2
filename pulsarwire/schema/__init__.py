"""Pulsar schemas: declared by producers and consumers, registered and checked by the broker.

For example::

    from dataclasses import dataclass
    from pulsarwire.schema import AvroSchema

    @dataclass
    class Order:
        id: str
        amount: float

    async with client.producer("orders", schema=AvroSchema(Order)) as producer:
        await producer.send(Order("o-1", 9.5))

The modules here are sans-IO: definitions and the encoding of values. ``Client.get_schema`` asks the broker
for a topic's schema.
"""

from pulsarwire.errors import SchemaMismatchError
from pulsarwire.schema.auto import AutoConsumeSchema
from pulsarwire.schema.info import SchemaInfo, SchemaType, TopicSchema
from pulsarwire.schema.records import Float32, Int32, avro_definition
from pulsarwire.schema.schemas import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    KeyValueSchema,
    ProtobufNativeSchema,
    ProtobufSchema,
    Schema,
    StringSchema,
)

__all__ = [
    "AutoConsumeSchema",
    "AvroSchema",
    "BytesSchema",
    "Float32",
    "Int32",
    "JsonSchema",
    "KeyValueSchema",
    "ProtobufNativeSchema",
    "ProtobufSchema",
    "Schema",
    "SchemaInfo",
    "SchemaMismatchError",
    "SchemaType",
    "StringSchema",
    "TopicSchema",
    "avro_definition",
]
