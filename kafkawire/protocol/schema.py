"""The declarative schema: every Kafka message is declared once, as a class, for all of its versions.

A declaration looks like this::

    class MetadataRequestTopic(Struct):
        topic_id: uuid.UUID = field(UUID, "10+")
        name: str | None = field(STRING, nullable="10+")

    class MetadataRequest(Request, api_key=3, versions="0-13", flexible="9+"):
        topics: list[MetadataRequestTopic] | None = field(Array(MetadataRequestTopic), nullable="1+")
        allow_auto_topic_creation: bool = field(BOOL, "4+", default=True)

The annotation is the Python type users see; ``field`` carries the wire facts: type, the versions the field
exists in, the versions it may be null in, and for KIP-482 tagged fields the tag. Field order is wire order.
The class gets ``__slots__``, a keyword-only ``__init__`` with the defaults, ``__eq__`` and ``__repr__``;
encoders and decoders per version are compiled on first use by ``codegen``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any, ClassVar, dataclass_transform

# Upper bound standing in for "and every later version".
LATEST = 0x7FFF

VersionRange = tuple[int, int]

_RANGE = re.compile(r"^(\d+)(?:(\+)|-(\d+))?$")


def parse_versions(spec: str | VersionRange | None) -> VersionRange | None:
    """``"3+"``, ``"0-2"``, ``"5"``, ``"none"`` or a tuple, as an inclusive range (None for "none")."""
    if spec is None or spec == "none":
        return None
    if isinstance(spec, tuple):
        return spec
    match = _RANGE.match(spec)
    if match is None:
        raise ValueError(f"bad version range {spec!r}")
    low = int(match.group(1))
    if match.group(2):
        return low, LATEST
    return low, int(match.group(3)) if match.group(3) else low


def in_range(version: int, versions: VersionRange | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


class WireType:
    """A Kafka field type. Primitive types are the module constants below; see also Array and Struct."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Primitive(WireType):
    """A scalar type. ``code`` is its struct format character when it has a fixed width."""

    __slots__ = ("code", "default", "min_size", "nullable_ok")

    def __init__(self, name: str, code: str | None, min_size: int, default: Any, *, nullable_ok: bool) -> None:
        super().__init__(name)
        self.code = code
        self.min_size = min_size
        self.default = default
        self.nullable_ok = nullable_ok


BOOL = Primitive("bool", "?", 1, False, nullable_ok=False)
INT8 = Primitive("int8", "b", 1, 0, nullable_ok=False)
INT16 = Primitive("int16", "h", 2, 0, nullable_ok=False)
UINT16 = Primitive("uint16", "H", 2, 0, nullable_ok=False)
INT32 = Primitive("int32", "i", 4, 0, nullable_ok=False)
UINT32 = Primitive("uint32", "I", 4, 0, nullable_ok=False)
INT64 = Primitive("int64", "q", 8, 0, nullable_ok=False)
FLOAT64 = Primitive("float64", "d", 8, 0.0, nullable_ok=False)
UUID = Primitive("uuid", None, 16, uuid.UUID(int=0), nullable_ok=False)
STRING = Primitive("string", None, 1, "", nullable_ok=True)
BYTES = Primitive("bytes", None, 1, b"", nullable_ok=True)
# A record set: bytes on the wire, decoded separately by kafkawire.protocol.records.
RECORDS = Primitive("records", None, 1, None, nullable_ok=True)


class Array(WireType):
    """``[]element``: a primitive type or a Struct subclass."""

    __slots__ = ("element",)

    def __init__(self, element: Primitive | type[Struct]) -> None:
        super().__init__(f"[]{element.name if isinstance(element, Primitive) else element.__name__}")
        self.element = element


FieldType = Primitive | Array | type["Struct"]

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING"})()


class FieldSpec:
    """The wire facts of one field. ``name`` is filled in from the attribute it is assigned to."""

    __slots__ = ("default", "name", "nullable", "tag", "tagged", "type", "versions")

    def __init__(
        self,
        type_: FieldType,
        versions: VersionRange,
        nullable: VersionRange | None,
        tag: int | None,
        tagged: VersionRange | None,
        default: Any,
    ) -> None:
        self.name = ""
        self.type = type_
        self.versions = versions
        self.nullable = nullable
        self.tag = tag
        self.tagged = tagged
        self.default = default

    def present(self, version: int) -> bool:
        """Whether the field is on the wire (as a regular field) in ``version``."""
        return self.versions[0] <= version <= self.versions[1] and not in_range(version, self.tagged)

    def tagged_in(self, version: int) -> bool:
        return (
            self.tagged is not None
            and self.versions[0] <= version <= self.versions[1]
            and in_range(version, self.tagged)
        )

    def nullable_in(self, version: int) -> bool:
        return in_range(version, self.nullable)

    def make_default(self) -> Any:
        """A fresh default value (lists and structs are never shared between instances)."""
        if self.default is _MISSING:
            if isinstance(self.type, Array):
                return []
            if isinstance(self.type, type):
                return self.type()
        return self.default


def field(
    type_: FieldType,
    versions: str | VersionRange = "0+",
    *,
    nullable: str | VersionRange | None = None,
    tag: int | None = None,
    tagged: str | VersionRange | None = None,
    default: Any = _MISSING,
) -> Any:
    """Declare a field; see the module docstring. ``tagged`` defaults to ``versions`` when a tag is given."""
    field_versions = parse_versions(versions)
    if field_versions is None:
        raise ValueError("a field needs at least one version")
    nullable_versions = parse_versions(nullable)
    if nullable_versions is not None and isinstance(type_, Primitive) and not type_.nullable_ok:
        raise ValueError(f"{type_.name} cannot be nullable")
    tagged_versions = parse_versions(tagged) if tagged is not None else (field_versions if tag is not None else None)
    if tagged_versions is not None and tag is None:
        raise ValueError("tagged versions without a tag")
    if default is _MISSING and isinstance(type_, Primitive):
        default = type_.default
    if default is None and nullable_versions is None and type_ is not RECORDS:
        raise ValueError("only a nullable field can default to None")
    return FieldSpec(type_, field_versions, nullable_versions, tag, tagged_versions, default)


class _Base:
    """Holds the slot for tagged fields this code does not know, kept so a decoded message re-encodes as read."""

    __slots__ = ("_unknown_tags",)
    _unknown_tags: list[tuple[int, bytes]] | None


@dataclass_transform(kw_only_default=True)
class StructMeta(type):
    """Turns the ``field(...)`` assignments of a class body into slots and a generated ``__init__``."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> StructMeta:
        specs: list[FieldSpec] = []
        for attribute, value in list(namespace.items()):
            if isinstance(value, FieldSpec):
                value.name = attribute
                specs.append(value)
                del namespace[attribute]
        namespace["__slots__"] = tuple(spec.name for spec in specs)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        # A subclass (say, one adding helper methods) keeps the wire layout of its base and adds its own fields.
        inherited: tuple[FieldSpec, ...] = next((base._fields for base in bases if hasattr(base, "_fields")), ())
        fields = (*inherited, *specs)
        cls._fields = fields  # type: ignore[attr-defined]
        cls._codecs = {}  # type: ignore[attr-defined]
        if "__init__" not in namespace:
            cls.__init__ = _make_init(cls, fields)  # type: ignore[misc]
        return cls


def _make_init(cls: type, specs: tuple[FieldSpec, ...]) -> Callable[..., None]:
    """Compile ``__init__`` so construction costs one call, not a loop over the field list."""
    env: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for index, spec in enumerate(specs):
        fresh = spec.default is _MISSING
        env[f"_d{index}"] = spec
        params.append(f"{spec.name}=_MISSING" if fresh else f"{spec.name}=_d{index}.default")
        if fresh:
            body.append(f"self.{spec.name} = _d{index}.make_default() if {spec.name} is _MISSING else {spec.name}")
        else:
            body.append(f"self.{spec.name} = {spec.name}")
    body.append("self._unknown_tags = None")
    signature = ", ".join(["self", "*", *params]) if params else "self"
    source = f"def __init__({signature}):\n    " + "\n    ".join(body) + "\n"
    exec(compile(source, f"<{cls.__name__}.__init__>", "exec"), env)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    return init


class Struct(_Base, metaclass=StructMeta):
    """A group of fields: the body of a message, or an element of an array."""

    __slots__ = ()
    _fields: ClassVar[tuple[FieldSpec, ...]]
    _codecs: ClassVar[dict[tuple[int, bool], tuple[Any, Any]]]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, spec.name) == getattr(other, spec.name) for spec in self._fields) and (
            self._unknown_tags or None
        ) == (other._unknown_tags or None)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        inner = ", ".join(f"{spec.name}={getattr(self, spec.name)!r}" for spec in self._fields)
        return f"{type(self).__name__}({inner})"


class Message(Struct):
    """A top-level request or response body of one API."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    # First flexible (KIP-482) version; flexibility always extends to every later version.
    FLEXIBLE_VERSION: ClassVar[int]

    def __init_subclass__(cls, *, api_key: int = -1, versions: str = "", flexible: str = "none") -> None:
        super().__init_subclass__()
        if api_key < 0:
            return
        valid = parse_versions(versions)
        if valid is None:
            raise ValueError(f"{cls.__name__}: no valid versions")
        flexible_range = parse_versions(flexible)
        cls.API_KEY = api_key
        cls.MIN_VERSION, cls.MAX_VERSION = valid
        cls.FLEXIBLE_VERSION = LATEST + 1 if flexible_range is None else flexible_range[0]


class Request(Message):
    """Base of request bodies."""

    __slots__ = ()


class Response(Message):
    """Base of response bodies."""

    __slots__ = ()
