"""The registry's errors, in the clients' one hierarchy (``mqwire.common.errors``)."""

from __future__ import annotations

from mqwire.common.errors import ConnectError, FatalError

__all__ = [
    "RegistryError",
    "RegistryUnreachableError",
    "SchemaNotFoundError",
    "SchemaResolutionError",
    "UnknownSchemaIdError",
    "WireFormatError",
]


class RegistryError(FatalError):
    """The registry refused a request; ``status`` and ``code`` are its HTTP status and ``error_code``."""

    def __init__(self, message: str, *, status: int = 0, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class SchemaNotFoundError(RegistryError):
    """The subject, version or schema asked for is not registered (and was not to be registered)."""


class RegistryUnreachableError(ConnectError):
    """No answer from the registry: the message names its URL, never the credentials."""


class UnknownSchemaIdError(RegistryError):
    """A payload names a schema id this deserializer has not loaded (``await deserializer.load(error.schema_id)``)."""

    def __init__(self, schema_id: int) -> None:
        super().__init__(f"schema id {schema_id} is not loaded: await deserializer.load({schema_id}) and receive again")
        self.schema_id = schema_id


class WireFormatError(FatalError, ValueError):
    """A payload is not in the registry's wire format (too short, or a magic byte other than 0)."""


class SchemaResolutionError(FatalError, ValueError):
    """A payload's writer's schema cannot be resolved to the deserializer's reader schema.

    ``writer_id`` is the id in the payload; ``reader_id`` the registry's id of the reader schema, or None when
    the reader schema is not registered under the deserializer's subject (or no subject was named).
    """

    def __init__(self, writer_id: int, reader_id: int | None, reason: str) -> None:
        reader = "the reader schema (not registered)" if reader_id is None else f"reader schema id {reader_id}"
        super().__init__(f"writer schema id {writer_id} cannot be resolved to {reader}: {reason}")
        self.writer_id = writer_id
        self.reader_id = reader_id
