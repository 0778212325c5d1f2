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
    the reader schema is not registered under the deserializer's subject (or no subject was named); ``reason``
    says why. A deserializer sees the payload only, not where it is stored: a consumer reports this as the
    ``__cause__`` of its DeserializationError, which has the position, and holds the message until ``skip``.
    ``writer_version`` and ``reader_version`` are the ids again, under the names of
    ``mqwire.common.errors.SchemaResolutionError`` (Pulsar's, which the consumer raises itself), so one
    handler reads either.
    """

    def __init__(self, writer_id: int, reader_id: int | None, reason: str) -> None:
        reader = "the reader schema (not registered)" if reader_id is None else f"reader schema id {reader_id}"
        super().__init__(f"writer schema id {writer_id} cannot be resolved to {reader}: {reason}")
        self.writer_id = writer_id
        self.reader_id = reader_id
        self.reason = reason

    @property
    def writer_version(self) -> int:
        """The writer's schema id (the name Pulsar's SchemaResolutionError gives it)."""
        return self.writer_id

    @property
    def reader_version(self) -> int | None:
        """The reader's schema id, None when not registered (the name Pulsar's SchemaResolutionError gives it)."""
        return self.reader_id
