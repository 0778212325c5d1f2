"""The schemas a producer or consumer declares: each knows its ``SchemaInfo`` and encodes and decodes values.

Sans-IO: bytes in, objects out. A producer given ``schema=`` sends ``schema.info`` with its PRODUCER command
and uses ``schema.encode`` as its value serializer; a consumer or reader sends it with SUBSCRIBE and uses
``schema.decode`` as its value deserializer.
"""

from __future__ import annotations

import base64
import io
import json
import struct
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pulsarwire.errors import SchemaMismatchError
from pulsarwire.schema.info import SchemaInfo, SchemaType
from pulsarwire.schema.records import avro_definition, from_dict, to_dict

if TYPE_CHECKING:
    from google.protobuf.message import Message as ProtobufMessage

__all__ = [
    "AvroSchema",
    "BytesSchema",
    "JsonSchema",
    "KeyValueSchema",
    "ProtobufNativeSchema",
    "ProtobufSchema",
    "Schema",
    "StringSchema",
]

T = TypeVar("T")


class Schema(ABC, Generic[T]):
    """A schema: ``info`` goes to the broker, ``encode`` and ``decode`` turn values into payloads and back."""

    info: SchemaInfo

    @abstractmethod
    def encode(self, value: T) -> bytes:
        """The payload of ``value``."""

    @abstractmethod
    def decode(self, data: bytes) -> T:
        """The value of payload ``data``; raises on bytes this schema cannot read."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.info.name!r})"


class BytesSchema(Schema[bytes]):
    """Payloads as they are: what a producer without a schema sends."""

    def __init__(self) -> None:
        self.info = SchemaInfo("BYTES", SchemaType.BYTES)

    def encode(self, value: bytes) -> bytes:
        """``value`` itself (bytes-like values are copied to bytes)."""
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"BytesSchema encodes bytes, not {type(value).__name__}")
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        """``data`` itself."""
        return bytes(data)


class StringSchema(Schema[str]):
    """Text in UTF-8 (type STRING)."""

    def __init__(self) -> None:
        self.info = SchemaInfo("STRING", SchemaType.STRING)

    def encode(self, value: str) -> bytes:
        """``value`` in UTF-8."""
        if not isinstance(value, str):
            raise TypeError(f"StringSchema encodes str, not {type(value).__name__}")
        return value.encode()

    def decode(self, data: bytes) -> str:
        """``data`` read as UTF-8 (invalid UTF-8 raises UnicodeDecodeError)."""
        return bytes(data).decode()


class _RecordSchema(Schema[T]):
    """A dataclass record with an Avro-shaped definition (the AVRO and JSON types)."""

    def __init__(
        self, record: type[T], kind: SchemaType, namespace: str | None, definition: dict[str, Any] | None
    ) -> None:
        self.record = record
        self.definition = avro_definition(record, namespace) if definition is None else definition
        # Compact JSON: the broker stores the text and compares the schema's hash to find its version.
        data = json.dumps(self.definition, separators=(",", ":")).encode()
        self.info = SchemaInfo(kind.name, kind, data)

    def _check(self, value: object) -> None:
        if not isinstance(value, self.record):
            raise TypeError(f"{type(self).__name__} of {self.record.__name__} cannot encode a {type(value).__name__}")


class AvroSchema(_RecordSchema[T]):
    """Records as Avro binary (type AVRO), written and read by fastavro (``pip install 'mqwire[avro]'``).

    ``record`` is a dataclass (see :mod:`pulsarwire.schema.records` for the type mapping), ``namespace`` the
    Avro namespace of its definition, and ``definition`` an Avro record definition to use instead of the one
    derived from the class (its field names must be the dataclass's).
    """

    def __init__(self, record: type[T], *, namespace: str | None = None, definition: dict[str, Any] | None = None):
        super().__init__(record, SchemaType.AVRO, namespace, definition)
        fastavro = _fastavro()
        self._parsed = fastavro.parse_schema(self.definition)
        # Writers' schemas met by decode_with, parsed once each (a topic has few versions).
        self._writers: dict[bytes, Any] = {}

    def encode(self, value: T) -> bytes:
        """``value`` as Avro binary, without a header (as Pulsar stores it)."""
        self._check(value)
        out = io.BytesIO()
        _fastavro().schemaless_writer(out, self._parsed, to_dict(value))
        return out.getvalue()

    def decode(self, data: bytes) -> T:
        """The record in Avro binary ``data`` written with this definition (as a consumer with this schema reads).

        A message written with another version of the topic's schema (``message.schema_version``) is read with
        :meth:`decode_with` and that version's schema from ``client.get_schema(topic, version)``.
        """
        decoded = _fastavro().schemaless_reader(io.BytesIO(data), self._parsed, None)
        result: T = from_dict(self.record, decoded)
        return result

    def decode_with(self, data: bytes, writer: SchemaInfo) -> T:
        """The record in ``data`` written with schema ``writer``, resolved into this definition by Avro's rules
        (fields the writer lacks take their defaults, fields this record lacks are dropped, aliases name renamed
        fields, int and float widen). Raises SchemaMismatchError where the rules cannot resolve them."""
        if writer.type is not SchemaType.AVRO:
            raise SchemaMismatchError(f"an AVRO reader cannot read what a {writer.type.name} schema wrote")
        fastavro = _fastavro()
        parsed = self._writers.get(writer.data)
        if parsed is None:
            try:
                definition = json.loads(writer.data)
                if isinstance(definition, dict) and definition.get("type") == "record":
                    # The record's own name does not take part, as pulsar-client and the Java client resolve.
                    definition = {**definition, "name": self.definition.get("name"),
                                  "namespace": self.definition.get("namespace", "")}
                parsed = fastavro.parse_schema(definition)
            except Exception as exc:
                raise SchemaMismatchError(f"the writer's AVRO definition does not parse: {exc}") from exc
            self._writers[writer.data] = parsed
        try:
            decoded = fastavro.schemaless_reader(io.BytesIO(data), parsed, self._parsed)
        except fastavro.read.SchemaResolutionError as exc:
            raise SchemaMismatchError(str(exc)) from exc
        result: T = from_dict(self.record, decoded)
        return result


class JsonSchema(_RecordSchema[T]):
    """Records as JSON objects (type JSON); the definition the broker checks is the Avro-shaped one.

    This is how pulsar-client's ``JsonSchema(Record)`` and the Java client's ``Schema.JSON(Pojo.class)`` declare
    it, so a topic is compatible with both. ``record``, ``namespace`` and ``definition`` as for AvroSchema.

    Enums are written by member name, as the Java client's Jackson mapper writes them; they are read by name
    or by value, since pulsar-client's ``JsonSchema`` writes the member's value (``"color": 2``).
    """

    def __init__(self, record: type[T], *, namespace: str | None = None, definition: dict[str, Any] | None = None):
        super().__init__(record, SchemaType.JSON, namespace, definition)
        # Per writer's definition: the fields this record needs that it lacks.
        self._missing: dict[bytes, list[str]] = {}

    def encode(self, value: T) -> bytes:
        """``value`` as a JSON object in UTF-8."""
        self._check(value)
        return json.dumps(to_dict(value), default=_json_default).encode()

    def decode(self, data: bytes) -> T:
        """The record in JSON ``data``; unknown members are ignored, missing ones keep the field's default."""
        result: T = from_dict(self.record, json.loads(data))
        return result

    def decode_with(self, data: bytes, writer: SchemaInfo) -> T:
        """The record in JSON ``data`` written with schema ``writer``, resolved by field name: fields the writer
        lacks take their defaults, fields this record lacks are dropped. A field this record needs (it has no
        default) that the writer's definition lacks raises SchemaMismatchError."""
        if writer.type is not SchemaType.JSON:
            raise SchemaMismatchError(f"a JSON reader cannot read what a {writer.type.name} schema wrote")
        missing = self._missing.get(writer.data)
        if missing is None:
            missing = self._missing[writer.data] = self._required_missing_from(writer)
        if missing:
            raise SchemaMismatchError(f"the writer's schema has no field {', '.join(missing)} and this record"
                                      " gives it no default")
        return self.decode(data)

    def _required_missing_from(self, writer: SchemaInfo) -> list[str]:
        try:
            definition = json.loads(writer.data)
            written = {f["name"] for f in definition["fields"]}
        except Exception as exc:
            raise SchemaMismatchError(f"the writer's JSON definition is not a record: {exc}") from exc
        return [f["name"] for f in self.definition["fields"] if "default" not in f and f["name"] not in written]


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("AvroSchema needs fastavro: pip install 'mqwire[avro]'") from None
    return fastavro


P = TypeVar("P", bound="ProtobufMessage")


class _ProtobufBase(Schema[P]):
    def __init__(self, message: type[P], kind: SchemaType, definition: dict[str, Any]) -> None:
        from google.protobuf.message import Message

        if not (isinstance(message, type) and issubclass(message, Message)):
            raise TypeError(f"a protobuf schema needs a generated message class, not {message!r}")
        self.message = message
        self.info = SchemaInfo(kind.name, kind, json.dumps(definition, separators=(",", ":")).encode())

    def encode(self, value: P) -> bytes:
        """``value`` in protobuf's binary encoding."""
        if not isinstance(value, self.message):
            raise TypeError(f"{type(self).__name__} of {self.message.__name__} cannot encode a {type(value).__name__}")
        return value.SerializeToString()

    def decode(self, data: bytes) -> P:
        """The message in protobuf-encoded ``data``."""
        return self.message.FromString(bytes(data))

    def decode_with(self, data: bytes, writer: SchemaInfo) -> P:
        """The message in ``data`` written with schema ``writer``: protobuf resolves by field number by design
        (fields this message lacks are kept as unknown, fields the writer lacks read as their defaults)."""
        if writer.type is not self.info.type:
            raise SchemaMismatchError(f"a {self.info.type.name} reader cannot read what a {writer.type.name}"
                                      " schema wrote")
        return self.decode(data)


class ProtobufNativeSchema(_ProtobufBase[P]):
    """Protobuf messages (type PROTOBUF_NATIVE): the definition is the message's file descriptors.

    The definition has the shape the Java client's ``ProtobufNativeSchema`` and pulsar-client's give it
    (``fileDescriptorSet`` in base64, ``rootMessageTypeName``, ``rootFileDescriptorName``), so the broker can
    check compatibility of protobuf changes themselves.
    """

    def __init__(self, message: type[P]) -> None:
        descriptor = message.DESCRIPTOR
        super().__init__(
            message,
            SchemaType.PROTOBUF_NATIVE,
            {
                "fileDescriptorSet": base64.b64encode(_file_descriptor_set(descriptor)).decode(),
                "rootMessageTypeName": descriptor.full_name,
                "rootFileDescriptorName": descriptor.file.name,
            },
        )


class ProtobufSchema(_ProtobufBase[P]):
    """Protobuf messages (type PROTOBUF): the definition is an Avro-shaped record made from the descriptor.

    Pulsar checks PROTOBUF schemas by that Avro shape (as the Java client's ``Schema.PROTOBUF`` declares
    them); PROTOBUF_NATIVE (:class:`ProtobufNativeSchema`) is the type that carries the descriptors.
    """

    def __init__(self, message: type[P]) -> None:
        super().__init__(message, SchemaType.PROTOBUF, _protobuf_record(message.DESCRIPTOR, set()))


def _file_descriptor_set(descriptor: Any) -> bytes:
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: Any) -> None:
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)  # dependencies first, as descriptor pools want them
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        files.file.append(proto)

    add(descriptor.file)
    return files.SerializeToString()


# Protobuf scalar types (FieldDescriptor.TYPE_*) as Avro types.
_PROTOBUF_SCALARS = {
    1: "double",
    2: "float",
    3: "long",
    4: "long",
    5: "int",
    6: "long",
    7: "int",
    8: "boolean",
    9: "string",
    12: "bytes",
    13: "int",
    15: "int",
    16: "long",
    17: "int",
    18: "long",
}
_PROTOBUF_DEFAULTS = {"double": 0.0, "float": 0.0, "long": 0, "int": 0, "boolean": False, "string": "", "bytes": ""}


def _protobuf_record(descriptor: Any, defined: set[str]) -> Any:
    full = descriptor.full_name
    if full in defined:
        return full
    defined.add(full)
    record: dict[str, Any] = {"type": "record", "name": descriptor.name}
    namespace = full.rpartition(".")[0]  # the package and any enclosing messages
    if namespace:
        record["namespace"] = namespace
    record["fields"] = [_protobuf_field(field, defined) for field in descriptor.fields]
    return record


def _protobuf_field(field: Any, defined: set[str]) -> dict[str, Any]:
    kind: Any
    default: Any = None
    if field.message_type is not None:
        kind, default = ["null", _protobuf_record(field.message_type, defined)], None
    elif field.enum_type is not None:
        enum_type = field.enum_type
        kind = {"type": "enum", "name": enum_type.name, "symbols": [v.name for v in enum_type.values]}
        default = enum_type.values[0].name
    else:
        kind = _PROTOBUF_SCALARS.get(field.type)
        if kind is None:
            raise TypeError(f"no Avro type for protobuf field {field.full_name}")
        default = _PROTOBUF_DEFAULTS[kind]
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        repeated = field.label == field.LABEL_REPEATED
    if repeated:
        return {"name": field.name, "type": {"type": "array", "items": kind}, "default": []}
    return {"name": field.name, "type": kind, "default": default}


K = TypeVar("K")
V = TypeVar("V")
_LENGTH = struct.Struct(">i")


class KeyValueSchema(Schema[tuple[K, V]]):
    """A key and a value in one payload (type KEY_VALUE, INLINE encoding): values are ``(key, value)`` tuples.

    The payload is the key's length (4 bytes, big-endian), its bytes, then the value's length and bytes; -1
    marks a None. The definition holds both schemas, as the Java client's ``Schema.KeyValue`` writes it.
    """

    def __init__(self, key: Schema[K], value: Schema[V], *, encoding: Literal["INLINE"] = "INLINE") -> None:
        if encoding != "INLINE":
            raise ValueError("KeyValueSchema supports encoding INLINE only")
        self.key, self.value = key, value
        data = b"".join(_LENGTH.pack(len(s.info.data)) + s.info.data for s in (key, value))
        properties: dict[str, str] = {"kv.encoding.type": encoding}
        for side, schema in (("key", key), ("value", value)):
            properties[f"{side}.schema.name"] = schema.info.name
            properties[f"{side}.schema.type"] = schema.info.type.name
            properties[f"{side}.schema.properties"] = json.dumps(dict(schema.info.properties))
        self.info = SchemaInfo("KeyValue", SchemaType.KEY_VALUE, data, properties)

    def encode(self, value: tuple[K, V]) -> bytes:
        """The INLINE payload of the ``(key, value)`` pair."""
        key, val = value
        parts = []
        for schema, item in ((self.key, key), (self.value, val)):
            if item is None:
                parts.append(_LENGTH.pack(-1))
            else:
                encoded = schema.encode(item)  # type: ignore[arg-type]  # each side's own type
                parts.append(_LENGTH.pack(len(encoded)) + encoded)
        return b"".join(parts)

    def decode(self, data: bytes) -> tuple[K, V]:
        """The ``(key, value)`` pair of an INLINE payload; a truncated one raises ValueError."""
        return self._decode(data, self.key.decode, self.value.decode)

    def decode_with(self, data: bytes, writer: SchemaInfo) -> tuple[K, V]:
        """The pair in ``data`` written with KEY_VALUE schema ``writer``: each part resolved to this schema's part
        (by its ``decode_with``) where the writer's part differs."""
        if writer.type is not SchemaType.KEY_VALUE:
            raise SchemaMismatchError(f"a KEY_VALUE reader cannot read what a {writer.type.name} schema wrote")
        key_info, value_info = _key_value_parts(writer)
        return self._decode(data, _resolver(self.key, key_info), _resolver(self.value, value_info))

    def _decode(self, data: bytes, key: Any, value: Any) -> tuple[K, V]:
        view = memoryview(data)
        out: list[Any] = []
        offset = 0
        for decode in (key, value):
            if len(view) < offset + 4:
                raise ValueError("KEY_VALUE payload ends inside a length")
            (length,) = _LENGTH.unpack_from(view, offset)
            offset += 4
            if length < 0:
                out.append(None)
                continue
            if len(view) < offset + length:
                raise ValueError("KEY_VALUE payload ends inside a part")
            out.append(decode(bytes(view[offset : offset + length])))
            offset += length
        if offset != len(view):
            raise ValueError("KEY_VALUE payload has bytes after its value")
        return out[0], out[1]


def _key_value_parts(writer: SchemaInfo) -> tuple[SchemaInfo, SchemaInfo]:
    """The key's and the value's schemas inside a KEY_VALUE schema's definition and properties."""
    data, parts, offset = writer.data, [], 0
    try:
        for side in ("key", "value"):
            (length,) = _LENGTH.unpack_from(data, offset)
            offset += 4
            part = data[offset : offset + max(length, 0)]
            offset += max(length, 0)
            kind = SchemaType[writer.properties.get(f"{side}.schema.type", "BYTES")]
            name = writer.properties.get(f"{side}.schema.name", kind.name)
            parts.append(SchemaInfo(name, kind, part))
    except (struct.error, KeyError) as exc:
        raise SchemaMismatchError(f"the writer's KEY_VALUE definition cannot be read: {exc!r}") from exc
    return parts[0], parts[1]


def _resolver(reader: Schema[Any], writer: SchemaInfo) -> Any:
    """How to read one part: as it is when the writer's part is the reader's, else resolved to it."""
    resolve = getattr(reader, "decode_with", None)
    if resolve is None or (writer.type is reader.info.type and writer.data == reader.info.data):
        return reader.decode
    return lambda data: resolve(data, writer)
