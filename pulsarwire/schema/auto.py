"""AUTO_CONSUME: a consumer without a record class reads each value with its own writer's schema.

Sans-IO: ``decode_with(data, writer)`` turns a payload into a generic value by the writer's schema (the
consumer fetches it by the message's schema version). As the Java client's ``Schema.AUTO_CONSUME()``.
"""

from __future__ import annotations

import io
import json
import struct
from typing import Any

from pulsarwire.errors import SchemaMismatchError
from pulsarwire.schema.info import SchemaInfo, SchemaType
from pulsarwire.schema.schemas import Schema, _fastavro, _key_value_parts

__all__ = ["AutoConsumeSchema"]

# Pulsar's primitive schemas: big-endian, fixed width.
_PRIMITIVES: dict[SchemaType, struct.Struct] = {
    SchemaType.BOOLEAN: struct.Struct(">?"),
    SchemaType.INT8: struct.Struct(">b"),
    SchemaType.INT16: struct.Struct(">h"),
    SchemaType.INT32: struct.Struct(">i"),
    SchemaType.INT64: struct.Struct(">q"),
    SchemaType.FLOAT: struct.Struct(">f"),
    SchemaType.DOUBLE: struct.Struct(">d"),
}
_LENGTH = struct.Struct(">i")


class AutoConsumeSchema(Schema[Any]):
    """Values decoded with each message's own writer's schema, without a record class (type AUTO_CONSUME).

    AVRO and JSON records are dicts (Avro enums by symbol name), STRING is str, the primitive types their
    Python values, PROTOBUF_NATIVE a message of a class made from the writer's descriptors, KEY_VALUE a
    ``(key, value)`` tuple of those, and a message without a schema its bytes. The broker checks nothing
    against an AUTO_CONSUME subscription.
    """

    def __init__(self) -> None:
        self.info = SchemaInfo("AUTO_CONSUME", SchemaType.AUTO_CONSUME)
        self._avro: dict[bytes, Any] = {}
        self._protobuf: dict[bytes, Any] = {}

    def encode(self, value: Any) -> bytes:
        """AUTO_CONSUME only reads."""
        raise TypeError("AutoConsumeSchema reads only; a producer declares the schema it writes")

    def decode(self, data: bytes) -> Any:
        """A payload without a schema version: its bytes."""
        return bytes(data)

    def decode_with(self, data: bytes, writer: SchemaInfo) -> Any:
        """The value of ``data`` read with ``writer``, its writer's schema."""
        kind = writer.type
        if kind is SchemaType.AVRO:
            return _fastavro().schemaless_reader(io.BytesIO(data), self._avro_schema(writer), None)
        if kind is SchemaType.JSON:
            return json.loads(data)
        if kind is SchemaType.STRING:
            return bytes(data).decode()
        if kind is SchemaType.BYTES:
            return bytes(data)
        if kind in _PRIMITIVES:
            (value,) = _PRIMITIVES[kind].unpack(data)
            return value
        if kind is SchemaType.PROTOBUF_NATIVE:
            return self._protobuf_class(writer).FromString(bytes(data))
        if kind is SchemaType.KEY_VALUE:
            return self._key_value(data, writer)
        raise SchemaMismatchError(f"AUTO_CONSUME cannot read values of schema type {kind.name}")

    def _avro_schema(self, writer: SchemaInfo) -> Any:
        parsed = self._avro.get(writer.data)
        if parsed is None:
            try:
                parsed = _fastavro().parse_schema(json.loads(writer.data))
            except Exception as exc:
                raise SchemaMismatchError(f"the writer's AVRO definition does not parse: {exc}") from exc
            self._avro[writer.data] = parsed
        return parsed

    def _protobuf_class(self, writer: SchemaInfo) -> Any:
        made = self._protobuf.get(writer.data)
        if made is None:
            import base64

            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

            try:
                definition = json.loads(writer.data)
                files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(definition["fileDescriptorSet"]))
                pool = descriptor_pool.DescriptorPool()
                for file in files.file:
                    pool.Add(file)
                made = message_factory.GetMessageClass(pool.FindMessageTypeByName(definition["rootMessageTypeName"]))
            except Exception as exc:
                raise SchemaMismatchError(f"the writer's PROTOBUF_NATIVE definition cannot be read: {exc}") from exc
            self._protobuf[writer.data] = made
        return made

    def _key_value(self, data: bytes, writer: SchemaInfo) -> tuple[Any, Any]:
        parts = _key_value_parts(writer)
        out: list[Any] = []
        offset = 0
        for part in parts:
            if len(data) < offset + 4:
                raise ValueError("KEY_VALUE payload ends inside a length")
            (length,) = _LENGTH.unpack_from(data, offset)
            offset += 4
            if length < 0:
                out.append(None)
                continue
            if len(data) < offset + length:
                raise ValueError("KEY_VALUE payload ends inside a part")
            out.append(self.decode_with(bytes(data[offset : offset + length]), part))
            offset += length
        return out[0], out[1]
