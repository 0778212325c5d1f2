"""Registry-backed serializers and deserializers for Avro, JSON Schema and Protobuf values.

The clients call ``value_serializer`` / ``value_deserializer`` synchronously (``mqwire.common.serde``), while the
registry is asked over HTTP. So each object talks to the registry in an awaited step of its own, and then
encodes and decodes from its cache without I/O:

- a serializer registers (or looks up) its schema once in ``await serializer.prepare()``; calling it before
  raises SerializationError through the producer;
- a deserializer loads the schemas it will meet in ``await deserializer.prepare()`` (every version of its topic's
  subject) and any other id with ``await deserializer.load(schema_id)``. A payload naming an id not loaded raises
  UnknownSchemaIdError, which the consumer reports as DeserializationError (with the message's topic,
  partition and offset) and holds the message: load the id and receive again to get it.

A deserializer with a ``reader_schema`` reads each payload with its writer's schema (by the id in the payload)
resolved to the reader's, as confluent-kafka's deserializers do: Avro by Avro's resolution rules (defaults,
removed fields, aliases, promotions), JSON Schema by validating the decoded value against the reader schema,
Protobuf by field number (the message class is the reader). A writer's schema that cannot be resolved raises
SchemaResolutionError naming both ids; a payload that ends early or does not parse raises WireFormatError.
"""

from __future__ import annotations

import io
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from mqwire.registry.client import RegisteredSchema, RegistryClient, SchemaType
from mqwire.registry.errors import SchemaNotFoundError, SchemaResolutionError, UnknownSchemaIdError, WireFormatError
from mqwire.registry.naming import SubjectNameStrategy, topic_name
from mqwire.registry.wire import decode_indexes, encode_indexes, frame, unframe

__all__ = [
    "AvroDeserializer",
    "AvroSerializer",
    "DeserializerOptions",
    "JsonSchemaDeserializer",
    "JsonSchemaSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegistryDeserializer",
    "RegistrySerializer",
    "SerializerOptions",
]

T = TypeVar("T")


class SerializerOptions(TypedDict, total=False):
    """The options every registry serializer takes (see :class:`RegistrySerializer`)."""

    topic: str | None
    field: str
    subject_name_strategy: SubjectNameStrategy
    auto_register: bool
    use_latest_version: bool


class DeserializerOptions(TypedDict, total=False):
    """The options every registry deserializer takes (see :class:`RegistryDeserializer`)."""

    topic: str | None
    field: str
    subject_name_strategy: SubjectNameStrategy


def _check_field(field: str) -> str:
    if field not in ("key", "value"):
        raise ValueError(f"option field must be 'key' or 'value', not {field!r}")
    return field


class RegistrySerializer(ABC, Generic[T]):
    """A serializer whose schema is registered in ``prepare()``; then ``serializer(value)`` gives the payload.

    ``topic`` and ``field`` (``"value"`` or ``"key"``) name the subject through ``subject_name_strategy``
    (default :func:`mqwire.registry.naming.topic_name`). ``auto_register`` registers the schema if the subject
    lacks it (else it must be there already); ``use_latest_version`` writes with the id of the subject's latest
    version instead of looking the schema up.
    """

    schema_type: SchemaType

    def __init__(
        self,
        registry: RegistryClient,
        *,
        topic: str | None = None,
        field: str = "value",
        subject_name_strategy: SubjectNameStrategy = topic_name,
        auto_register: bool = True,
        use_latest_version: bool = False,
    ) -> None:
        if not isinstance(registry, RegistryClient):
            raise TypeError(f"option registry must be a RegistryClient, not {type(registry).__name__}")
        if not callable(subject_name_strategy):
            raise TypeError("option subject_name_strategy must be callable (topic, field, record_name) -> subject")
        self.registry = registry
        self.topic = topic
        self.field = _check_field(field)
        self.subject = subject_name_strategy(topic, field, self.record_name)
        self.auto_register = auto_register
        self.use_latest_version = use_latest_version
        self.schema_id: int | None = None

    @property
    @abstractmethod
    def schema_text(self) -> str:
        """The schema as registered."""

    @property
    @abstractmethod
    def record_name(self) -> str | None:
        """The full name of the record type, for the record-name strategies."""

    @abstractmethod
    def payload(self, value: T) -> bytes:
        """``value`` encoded, without the wire format's header."""

    def header(self, schema_id: int) -> bytes:
        """What precedes the payload (the magic byte and the id; Protobuf adds the message indexes)."""
        return frame(schema_id, b"")

    async def prepare(self) -> int:
        """Register (or look up) the schema under the subject once; returns its id, used from then on."""
        if self.schema_id is None:
            registered: RegisteredSchema
            if self.use_latest_version:
                registered = await self.registry.latest(self.subject)
            elif self.auto_register:
                registered = await self.registry.register(self.subject, self.schema_text, self.schema_type)
            else:
                registered = await self.registry.lookup(self.subject, self.schema_text, self.schema_type)
            self.schema_id = registered.schema_id
            self._header = self.header(registered.schema_id)
        return self.schema_id

    def __call__(self, value: T) -> bytes:
        if self.schema_id is None:
            raise RuntimeError(f"{type(self).__name__} for subject {self.subject}: await prepare() before use")
        return self._header + self.payload(value)


class _Unresolvable(Exception):
    """Raised by ``decode`` when the writer's schema does not resolve to the reader's; ids are added above."""


class RegistryDeserializer(ABC, Generic[T]):
    """A deserializer that decodes payloads whose schema ids it has loaded (``prepare()``, ``load()``).

    ``topic``, ``field`` and ``subject_name_strategy`` name the subject whose versions ``prepare()`` loads;
    without a topic (or with a record-name strategy), ``prepare()`` loads nothing and ids come by ``load()``.
    ``reader_schema_id`` is the registry's id of the reader schema, looked up under that subject by
    ``prepare()`` (None without a reader schema or when it is not registered); resolution errors name it.
    """

    schema_type: SchemaType
    reader_schema_id: int | None = None
    #: The reader schema as text (None: each payload decodes with its writer's schema).
    reader_text: str | None = None

    def __init__(
        self,
        registry: RegistryClient,
        *,
        topic: str | None = None,
        field: str = "value",
        subject_name_strategy: SubjectNameStrategy = topic_name,
    ) -> None:
        if not isinstance(registry, RegistryClient):
            raise TypeError(f"option registry must be a RegistryClient, not {type(registry).__name__}")
        self.registry = registry
        self.topic = topic
        self.field = _check_field(field)
        self._strategy = subject_name_strategy
        self._loaded: dict[int, Any] = {}

    async def prepare(self) -> list[int]:
        """Load every version of the topic's subject; returns the ids loaded (none for an unknown subject)."""
        if self.topic is None or self._strategy is not topic_name:
            return list(self._loaded)
        subject = topic_name(self.topic, self.field, None)
        try:
            versions = await self.registry.versions(subject)
        except SchemaNotFoundError:
            return list(self._loaded)
        for number in versions:
            found = await self.registry.version(subject, number)
            await self.load(found.schema_id)
        if self.reader_text is not None:
            try:
                registered = await self.registry.lookup(subject, self.reader_text, self.schema_type)
            except SchemaNotFoundError:
                pass
            else:
                self.reader_schema_id = registered.schema_id
        return list(self._loaded)

    async def load(self, schema_id: int) -> None:
        """Fetch schema ``schema_id`` from the registry (SchemaNotFoundError if it has none) and keep it."""
        if schema_id not in self._loaded:
            found = await self.registry.schema(schema_id)
            if found.schema_type != self.schema_type:
                raise WireFormatError(f"schema id {schema_id} is a {found.schema_type} schema, not {self.schema_type}")
            self._loaded[schema_id] = self.compile(found)

    def compile(self, schema: RegisteredSchema) -> Any:
        """What decoding needs of a writer's schema (parsed once per id)."""
        return schema

    @abstractmethod
    def decode(self, writer: Any, body: memoryview) -> T:
        """The value of ``body``, written with schema ``writer`` (what ``compile`` made)."""

    def __call__(self, data: bytes) -> T:
        schema_id, body = unframe(data)
        writer = self._loaded.get(schema_id)
        if writer is None:
            raise UnknownSchemaIdError(schema_id)
        try:
            return self.decode(writer, body)
        except _Unresolvable as err:
            raise SchemaResolutionError(schema_id, self.reader_schema_id, str(err)) from None


# ------------------------------------------------------------------------------------------------------- Avro
def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("the Avro serializers need fastavro: pip install 'mqwire[avro]'") from None
    return fastavro


def _schema_text(schema: str | dict[str, Any]) -> str:
    if isinstance(schema, dict):
        return json.dumps(schema)
    if isinstance(schema, str):
        return schema
    raise TypeError(f"option schema must be a str or a dict, not {type(schema).__name__}")


class AvroSerializer(RegistrySerializer[Any]):
    """Values as Avro binary, with ``schema`` (Avro JSON text or a dict) registered for the subject.

    Values are dicts, or anything ``to_dict`` turns into one (``dataclasses.asdict`` for dataclasses).
    The other options are those of :class:`RegistrySerializer`.
    """

    schema_type: SchemaType = "AVRO"

    def __init__(
        self,
        registry: RegistryClient,
        schema: str | dict[str, Any],
        *,
        to_dict: Callable[[Any], Any] | None = None,
        **options: Unpack[SerializerOptions],
    ) -> None:
        self._text = _schema_text(schema)
        self._parsed = _fastavro().parse_schema(json.loads(self._text))
        self._to_dict = to_dict
        super().__init__(registry, **options)

    @property
    def schema_text(self) -> str:
        """The Avro schema as registered."""
        return self._text

    @property
    def record_name(self) -> str | None:
        """The record's full name (``namespace.name``)."""
        parsed = self._parsed
        return parsed.get("name") if isinstance(parsed, dict) else None

    def payload(self, value: Any) -> bytes:
        """``value`` as Avro binary."""
        out = io.BytesIO()
        _fastavro().schemaless_writer(out, self._parsed, value if self._to_dict is None else self._to_dict(value))
        return out.getvalue()


class AvroDeserializer(RegistryDeserializer[Any]):
    """Avro payloads read with the writer's schema (by id) into ``reader_schema`` if given, as dicts.

    ``from_dict`` turns each dict into the application's type (``lambda d: Order(**d)``).
    """

    schema_type: SchemaType = "AVRO"

    def __init__(
        self,
        registry: RegistryClient,
        reader_schema: str | dict[str, Any] | None = None,
        *,
        from_dict: Callable[[Any], Any] | None = None,
        **options: Unpack[DeserializerOptions],
    ) -> None:
        fastavro = _fastavro()
        self.reader_text = None if reader_schema is None else _schema_text(reader_schema)
        self._reader = None if self.reader_text is None else fastavro.parse_schema(json.loads(self.reader_text))
        self._from_dict = from_dict
        super().__init__(registry, **options)

    def compile(self, schema: RegisteredSchema) -> Any:
        """The writer's schema parsed by fastavro."""
        return _fastavro().parse_schema(json.loads(schema.schema))

    def decode(self, writer: Any, body: memoryview) -> Any:
        """The record in ``body``, resolved to the reader schema if there is one."""
        from fastavro.read import SchemaResolutionError as Unresolved

        try:
            record = _fastavro().schemaless_reader(io.BytesIO(body), writer, self._reader)
        except Unresolved as err:
            raise _Unresolvable(str(err)) from None
        except EOFError:
            raise WireFormatError(f"the Avro payload ends early ({len(body)} bytes)") from None
        except (ValueError, IndexError, UnicodeDecodeError) as err:
            # a union index out of range, a negative length, bytes that are not UTF-8: not this schema's record
            raise WireFormatError(f"the Avro payload does not match its writer's schema: {err}") from None
        return record if self._from_dict is None else self._from_dict(record)


# ------------------------------------------------------------------------------------------------ JSON Schema
class JsonSchemaSerializer(RegistrySerializer[Any]):
    """Values as JSON text, with the JSON Schema ``schema`` (text or a dict) registered for the subject.

    The values are not validated against the schema here. ``to_dict`` as for AvroSerializer; the record name
    of the record-name strategies is the schema's ``title``.
    """

    schema_type: SchemaType = "JSON"

    def __init__(
        self,
        registry: RegistryClient,
        schema: str | dict[str, Any],
        *,
        to_dict: Callable[[Any], Any] | None = None,
        **options: Unpack[SerializerOptions],
    ) -> None:
        self._text = _schema_text(schema)
        self._definition = json.loads(self._text)
        self._to_dict = to_dict
        super().__init__(registry, **options)

    @property
    def schema_text(self) -> str:
        """The JSON Schema as registered."""
        return self._text

    @property
    def record_name(self) -> str | None:
        """The schema's ``title``."""
        title = self._definition.get("title") if isinstance(self._definition, dict) else None
        return title if isinstance(title, str) else None

    def payload(self, value: Any) -> bytes:
        """``value`` as compact JSON in UTF-8."""
        return json.dumps(value if self._to_dict is None else self._to_dict(value), separators=(",", ":")).encode()


def _json_validator(schema_text: str) -> Any:
    import importlib

    try:
        jsonschema: Any = importlib.import_module("jsonschema")  # untyped: no stubs installed
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError(
            "JsonSchemaDeserializer(reader_schema=) needs jsonschema: pip install 'mqwire[json]'"
        ) from None
    definition = json.loads(schema_text)
    return jsonschema.validators.validator_for(definition)(definition)


class JsonSchemaDeserializer(RegistryDeserializer[Any]):
    """JSON payloads of a known schema id, parsed; ``from_dict`` turns each object into the application's type.

    With ``reader_schema`` (a JSON Schema, text or a dict), each value is validated against it, as
    confluent-kafka's JSONDeserializer does; a value it refuses raises SchemaResolutionError. JSON carries its
    field names, so the value is kept as written: no defaults are filled in and no field is renamed (nor does
    confluent-kafka's). Without one, values are not validated.
    """

    schema_type: SchemaType = "JSON"

    def __init__(
        self,
        registry: RegistryClient,
        reader_schema: str | dict[str, Any] | None = None,
        *,
        from_dict: Callable[[Any], Any] | None = None,
        **options: Unpack[DeserializerOptions],
    ) -> None:
        self.reader_text = None if reader_schema is None else _schema_text(reader_schema)
        self._validator = None if self.reader_text is None else _json_validator(self.reader_text)
        self._from_dict = from_dict
        super().__init__(registry, **options)

    def decode(self, writer: Any, body: memoryview) -> Any:
        """The JSON value in ``body``, validated against the reader schema if there is one."""
        try:
            value = json.loads(bytes(body))
        except (ValueError, RecursionError) as err:
            raise WireFormatError(f"the payload is not JSON: {err}") from None
        if self._validator is not None:
            failure = next(iter(self._validator.iter_errors(value)), None)
            if failure is not None:
                raise _Unresolvable(failure.message)
        return value if self._from_dict is None else self._from_dict(value)


# --------------------------------------------------------------------------------------------------- Protobuf
def _message_class(message_type: object) -> Any:
    from google.protobuf.message import Message

    if not (isinstance(message_type, type) and issubclass(message_type, Message)):
        raise TypeError(f"option message_type must be a generated protobuf message class, not {message_type!r}")
    return message_type


def _index_path(descriptor: Any) -> list[int]:
    """Where the message is declared: its index among its parent's messages, from the file down."""
    path = []
    while descriptor is not None:
        parent = descriptor.containing_type
        siblings = parent.nested_types if parent is not None else list(descriptor.file.message_types_by_name.values())
        path.append([s.full_name for s in siblings].index(descriptor.full_name))
        descriptor = parent
    return path[::-1]


class ProtobufSerializer(RegistrySerializer[Any]):
    """Protobuf messages of ``message_type``; its file's descriptor is registered (base64 of the serialized
    ``FileDescriptorProto``, as confluent-kafka's ProtobufSerializer registers it).

    Files that import other files are not supported (their references would need registering first).
    """

    schema_type: SchemaType = "PROTOBUF"

    def __init__(
        self, registry: RegistryClient, message_type: type[Any], **options: Unpack[SerializerOptions]
    ) -> None:
        import base64

        from google.protobuf import descriptor_pb2

        self.message_type = _message_class(message_type)
        descriptor = self.message_type.DESCRIPTOR
        if descriptor.file.dependencies:
            raise ValueError(f"{descriptor.file.name} imports other files: schema references are not supported")
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor.file.CopyToProto(proto)
        self._text = base64.b64encode(proto.SerializeToString()).decode()
        self._indexes = encode_indexes(_index_path(descriptor))
        super().__init__(registry, **options)

    @property
    def schema_text(self) -> str:
        """The file descriptor as registered."""
        return self._text

    @property
    def record_name(self) -> str | None:
        """The message's full name."""
        name: str = self.message_type.DESCRIPTOR.full_name
        return name

    def header(self, schema_id: int) -> bytes:
        """The magic byte, the id and the message-index path."""
        return frame(schema_id, self._indexes)

    def payload(self, value: Any) -> bytes:
        """``value`` in protobuf's binary encoding."""
        if not isinstance(value, self.message_type):
            raise TypeError(f"ProtobufSerializer of {self.message_type.__name__} cannot encode {type(value).__name__}")
        encoded: bytes = value.SerializeToString()
        return encoded


class ProtobufDeserializer(RegistryDeserializer[Any]):
    """Protobuf payloads of a known schema id parsed as ``message_type``."""

    schema_type: SchemaType = "PROTOBUF"

    def __init__(
        self, registry: RegistryClient, message_type: type[Any], **options: Unpack[DeserializerOptions]
    ) -> None:
        self.message_type = _message_class(message_type)
        super().__init__(registry, **options)

    def decode(self, writer: Any, body: memoryview) -> Any:
        """The message after the index path in ``body``; fields are matched by number, unknown ones kept."""
        from google.protobuf.message import DecodeError

        _, payload = decode_indexes(body)
        try:
            return self.message_type.FromString(bytes(payload))
        except DecodeError as err:
            name = self.message_type.__name__
            raise WireFormatError(f"the Protobuf payload does not parse as {name}: {err}") from None
