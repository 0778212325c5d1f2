"""Dataclasses as Avro-shaped record definitions, and records to and from plain dicts.

Pulsar's AVRO and JSON schemas both declare their records with an Avro schema definition (pulsar-client's
``Record.schema()``, the Java client's reflection), so one mapping from Python types serves both:

=======================  ============================================
Python annotation        Avro type
=======================  ============================================
``str``                  ``"string"``
``bytes``                ``"bytes"``
``bool``                 ``"boolean"``
``int``                  ``"long"`` (``Int32`` for ``"int"``)
``float``                ``"double"`` (``Float32`` for ``"float"``)
``X | None``             ``["null", X]``
``list[X]``              ``{"type": "array", "items": X}``
``dict[str, X]``         ``{"type": "map", "values": X}``
an ``enum.Enum``         ``{"type": "enum", "symbols": [member names]}``
a dataclass              a nested ``record``
=======================  ============================================

A field with a default keeps it in the definition, so readers with a newer record can read older data.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Annotated, Any, Union

__all__ = ["Float32", "Int32", "avro_definition", "from_dict", "to_dict"]


class _AvroName(str):
    """An Avro primitive named in ``Annotated[...]``, for the narrower types Python has no name for."""


Int32 = Annotated[int, _AvroName("int")]
"""An ``int`` field written as Avro ``"int"`` (32 bits), as pulsar-client's ``Integer()`` and Java's ``int``."""

Float32 = Annotated[float, _AvroName("float")]
"""A ``float`` field written as Avro ``"float"`` (32 bits), as pulsar-client's ``Float()`` and Java's ``float``."""

_PRIMITIVES: dict[Any, str] = {str: "string", bytes: "bytes", bool: "boolean", int: "long", float: "double"}


def _check_record(cls: object) -> type[Any]:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"a schema record must be a dataclass, not {cls!r}")
    return cls


def _hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _optional_of(hint: Any) -> Any | None:
    """``X`` for ``X | None`` (and ``Optional[X]``), else None."""
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
        raise TypeError(f"only X | None unions map to Avro here, not {hint!r}")
    return None


def avro_definition(cls: type[Any], namespace: str | None = None) -> dict[str, Any]:
    """The Avro record definition of dataclass ``cls`` (named by the class, in ``namespace`` if given)."""
    definition: dict[str, Any] = _record(_check_record(cls), namespace, set())
    return definition


def _record(cls: type[Any], namespace: str | None, defined: set[str]) -> Any:
    full = f"{namespace}.{cls.__name__}" if namespace else cls.__name__
    if full in defined:
        return full  # a record used twice is named the second time, as Avro requires
    defined.add(full)
    hints = _hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        entry: dict[str, Any] = {"name": f.name, "type": _type(hints[f.name], namespace, defined)}
        if f.default is not dataclasses.MISSING:
            entry["default"] = f.default.name if isinstance(f.default, enum.Enum) else f.default
        fields.append(entry)
    definition: dict[str, Any] = {"type": "record", "name": cls.__name__}
    if namespace:
        definition["namespace"] = namespace
    definition["fields"] = fields
    return definition


def _type(hint: Any, namespace: str | None, defined: set[str]) -> Any:
    if typing.get_origin(hint) is Annotated:
        base, *extra = typing.get_args(hint)
        named = [e for e in extra if isinstance(e, _AvroName)]
        return str(named[0]) if named else _type(base, namespace, defined)
    inner = _optional_of(hint)
    if inner is not None:
        return ["null", _type(inner, namespace, defined)]
    if hint in _PRIMITIVES:
        return _PRIMITIVES[hint]
    origin = typing.get_origin(hint)
    if origin is list:
        return {"type": "array", "items": _type(typing.get_args(hint)[0], namespace, defined)}
    if origin is dict:
        key, value = typing.get_args(hint)
        if key is not str:
            raise TypeError(f"Avro maps have str keys, not {key!r}")
        return {"type": "map", "values": _type(value, namespace, defined)}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        full = f"{namespace}.{hint.__name__}" if namespace else hint.__name__
        if full in defined:
            return full
        defined.add(full)
        return {"type": "enum", "name": hint.__name__, "symbols": [m.name for m in hint]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record(hint, namespace, defined)
    raise TypeError(f"no Avro type for the annotation {hint!r}")


def to_dict(record: object) -> dict[str, Any]:
    """``record`` (a dataclass instance) as a dict of plain values: enums by name, nested records as dicts."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"expected a dataclass instance, not {type(record).__name__}")
    return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def from_dict(cls: type[Any], data: object) -> Any:
    """An instance of dataclass ``cls`` from ``data`` as decoded (fields it lacks keep their defaults)."""
    if not isinstance(data, dict):
        raise TypeError(f"a {cls.__name__} record must be an object, not {type(data).__name__}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{name: _typed(hints[name], value) for name, value in data.items() if name in names})


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if typing.get_origin(hint) is Annotated:
        return _typed(typing.get_args(hint)[0], value)
    inner = _optional_of(hint)
    if inner is not None:
        return _typed(inner, value)
    origin = typing.get_origin(hint)
    if origin is list:
        return [_typed(typing.get_args(hint)[0], v) for v in value]
    if origin is dict:
        return {k: _typed(typing.get_args(hint)[1], v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        # By name (Avro, the Java client's JSON) or by value (pulsar-client's JSON writes the member's value).
        if isinstance(value, str) and value in hint.__members__:
            return hint[value]
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_dict(hint, value)
    if hint is bytes and isinstance(value, str):
        return value.encode("latin-1")  # JSON carries bytes as a string of code points 0-255
    return value
