"""Compiles one encoder and one decoder per (struct, version, flexible) from the declared fields.

Each pair is Python source generated for exactly one version, so the hot path has no version tests, no
loops over field lists and no per-field dispatch: consecutive fixed-width fields become one
``struct.unpack_from``, compact lengths read their one-byte varint inline, and nested structs call their
own compiled functions. The sources are built once per version on first use and cached on the class.

Encoders have the signature ``encode(obj, out: bytearray) -> None``; decoders
``decode(buf: memoryview, pos: int) -> (obj, pos)`` and may raise the errors in
``primitives.DECODE_ERRORS``, which ``decode_from`` maps to ProtocolError.
"""

from __future__ import annotations

import linecache
import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kafkawire.protocol import primitives as p
from kafkawire.protocol.schema import (
    _MISSING,
    BOOL,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    Array,
    FieldSpec,
    FieldType,
    Primitive,
    Struct,
)
from mqwire.common.errors import ProtocolError

Encoder = Callable[[Any, bytearray], None]
Decoder = Callable[[memoryview, int], tuple[Any, int]]
S = TypeVar("S", bound=Struct)

_NULL_INT16 = p.INT16.pack(-1)
_NULL_INT32 = p.INT32.pack(-1)
_SINGLE = {code: struct.Struct(">" + code) for code in "?bhHiIqd"}
_FIXED = {kind.name: kind for kind in (BOOL, INT8, INT16, UINT16, INT32, UINT32, INT64, FLOAT64)}


def _null_error(what: str) -> ValueError:
    return ValueError(f"{what} is not nullable in this version but is None")


def _bad_null(what: str) -> ProtocolError:
    return ProtocolError(f"{what} is null but not nullable in this version")


def _tag_size_mismatch(what: str) -> ProtocolError:
    return ProtocolError(f"tagged field {what} does not fill its declared size")


def _uuid_from(data: memoryview) -> uuid.UUID:
    return uuid.UUID(int=int.from_bytes(data, "big"))


def _pack_array(code: str, values: list[Any]) -> bytes:
    return struct.pack(f">{len(values)}{code}", *values)


def _unpack_array(code: str, count: int, buf: memoryview, pos: int) -> list[Any]:
    return list(struct.unpack_from(f">{count}{code}", buf, pos))


def write_tags(out: bytearray, tags: list[tuple[int, bytes | bytearray]]) -> None:
    """The KIP-482 tag buffer: count, then tag, size and value of each field, in ascending tag order."""
    if len(tags) > 1:
        tags.sort(key=lambda item: item[0])
    out += p.uvarint(len(tags))
    for tag, value in tags:
        out += p.uvarint(tag)
        out += p.uvarint(len(value))
        out += value


# A record set this large is left out of a PiecedBuffer and sent as a piece of its own.
SEPARATE_RECORDS_FROM = 32 * 1024


class PiecedBuffer(bytearray):
    """An encoding buffer that leaves large record sets out: each is noted with the place it belongs at
    (``separated``) and is sent as it is, rather than copied in (see ``framing.encode_request_pieces``)."""

    __slots__ = ("separated",)

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)
        self.separated: list[tuple[int, bytes | bytearray]] = []


def _put_records(out: bytearray, records: bytes | bytearray | memoryview) -> None:
    """A record set's bytes after its length: copied in, or noted by a PiecedBuffer when large."""
    if type(out) is PiecedBuffer and len(records) >= SEPARATE_RECORDS_FROM and type(records) is not memoryview:
        out.separated.append((len(out), records))
    else:
        out += records


_ENV: dict[str, Any] = {
    "_new": object.__new__,
    "_put_records": _put_records,
    "_uv": p.uvarint,
    "_ruv": p.read_uvarint,
    "_trunc": p.truncated,
    "_null_error": _null_error,
    "_bad_null": _bad_null,
    "_tag_size": _tag_size_mismatch,
    "_uuid_from": _uuid_from,
    "_pack_array": _pack_array,
    "_unpack_array": _unpack_array,
    "_write_tags": write_tags,
    "_I8": p.INT8,
    "_I16": p.INT16,
    "_I32": p.INT32,
    **{f"_S_{name}": _SINGLE[kind.code] for name, kind in _FIXED.items() if kind.code},
}


class _Source:
    """Lines of one generated function plus the objects its names refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = dict(_ENV)
        self._count = 0

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def tmp(self, hint: str) -> str:
        self._count += 1
        return f"_{hint}{self._count}"

    def ref(self, obj: Any, hint: str) -> str:
        name = self.tmp(hint)
        self.env[name] = obj
        return name

    def build(self, name: str, filename: str) -> Any:
        source = "\n".join(self.lines) + "\n"
        # Registered with linecache so that tracebacks through generated code show its lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        exec(compile(source, filename, "exec"), self.env)
        return self.env[name]


def _fixed(type_: FieldType) -> bool:
    return isinstance(type_, Primitive) and type_.code is not None


def _run_struct(run: list[FieldSpec]) -> struct.Struct:
    """One struct for consecutive fixed-width fields: one call reads or writes them all."""
    return struct.Struct(">" + "".join(spec.type.code or "" for spec in run if isinstance(spec.type, Primitive)))


def _min_size(type_: FieldType, flexible: bool) -> int:
    """A lower bound of the encoded size, to reject counts the remaining bytes cannot hold."""
    if isinstance(type_, Primitive):
        return type_.min_size if type_.code is not None or type_ is UUID or flexible else (2 if type_ is STRING else 4)
    return 1


def _default_expr(src: _Source, spec: FieldSpec) -> str:
    if spec.default is _MISSING:
        if isinstance(spec.type, Array):
            return "[]"
        return src.ref(spec.type, "C") + "()"
    if isinstance(spec.default, list | dict):
        raise TypeError(f"{spec.name}: mutable default")
    return src.ref(spec.default, "d")


# ---------------------------------------------------------------------------------------------- encoding


def _enc_length(src: _Source, ind: int, out: str, length: str, flexible: bool, wide: bool) -> None:
    if flexible:
        src.emit(ind, f"{out} += _uv({length} + 1)")
    else:
        src.emit(ind, f"{out} += {'_I32' if wide else '_I16'}.pack({length})")


def _enc_null(src: _Source, ind: int, out: str, flexible: bool, wide: bool, nullable: bool, what: str) -> None:
    if not nullable:
        src.emit(ind, f"raise _null_error({what!r})")
    elif flexible:
        src.emit(ind, f"{out}.append(0)")
    else:
        marker = _NULL_INT32 if wide else _NULL_INT16
        src.emit(ind, f"{out} += {marker!r}")


def _enc_value(
    src: _Source,
    ind: int,
    out: str,
    expr: str,
    type_: FieldType,
    version: int,
    flexible: bool,
    nullable: bool,
    what: str,
) -> None:
    if isinstance(type_, Primitive):
        if type_.code is not None:
            src.emit(ind, f"{out} += _S_{type_.name}.pack({expr})")
        elif type_ is UUID:
            src.emit(ind, f"{out} += {expr}.bytes")
        else:
            value = src.tmp("v")
            src.emit(ind, f"{value} = {expr}")
            src.emit(ind, f"if {value} is None:")
            _enc_null(src, ind + 1, out, flexible, type_ is not STRING, nullable, what)
            src.emit(ind, "else:")
            if type_ is STRING:
                src.emit(ind + 1, f"{value} = {value}.encode()")
            _enc_length(src, ind + 1, out, f"len({value})", flexible, type_ is not STRING)
            if type_ is RECORDS:
                src.emit(ind + 1, f"_put_records({out}, {value})")
            else:
                src.emit(ind + 1, f"{out} += {value}")
    elif isinstance(type_, Array):
        items = src.tmp("a")
        src.emit(ind, f"{items} = {expr}")
        src.emit(ind, f"if {items} is None:")
        _enc_null(src, ind + 1, out, flexible, True, nullable, what)
        src.emit(ind, "else:")
        _enc_length(src, ind + 1, out, f"len({items})", flexible, True)
        element = type_.element
        if _fixed(element):
            assert isinstance(element, Primitive)
            src.emit(ind + 1, f"{out} += _pack_array({element.code!r}, {items})")
        else:
            item = src.tmp("e")
            src.emit(ind + 1, f"for {item} in {items}:")
            _enc_value(src, ind + 2, out, item, element, version, flexible, False, what + "[]")
    else:
        encode = src.ref(encoder(type_, version, flexible), "E")
        if not nullable:
            src.emit(ind, f"{encode}({expr}, {out})")
            return
        value = src.tmp("v")
        src.emit(ind, f"{value} = {expr}")
        src.emit(ind, f"if {value} is None:")
        src.emit(ind + 1, f"{out}.append(255)")
        src.emit(ind, "else:")
        src.emit(ind + 1, f"{out}.append(1)")
        src.emit(ind + 1, f"{encode}({value}, {out})")


def _compile_encoder(cls: type[Struct], version: int, flexible: bool) -> Encoder:
    src = _Source()
    src.emit(0, "def encode(o, out):")
    regular = [spec for spec in cls._fields if spec.present(version)]
    index = 0
    while index < len(regular):
        run = []
        while index < len(regular) and _fixed(regular[index].type):
            run.append(regular[index])
            index += 1
        if len(run) > 1:
            packer = src.ref(_run_struct(run), "P")
            src.emit(1, f"out += {packer}.pack({', '.join('o.' + spec.name for spec in run)})")
            continue
        if not run:
            run.append(regular[index])
            index += 1
        spec = run[0]
        what = f"{cls.__name__}.{spec.name}"
        _enc_value(src, 1, "out", f"o.{spec.name}", spec.type, version, flexible, spec.nullable_in(version), what)
    if flexible:
        tagged = sorted((spec for spec in cls._fields if spec.tagged_in(version)), key=lambda spec: spec.tag or 0)
        src.emit(1, "_t = None")
        for spec in tagged:
            value = src.tmp("v")
            default = src.ref(spec.make_default(), "d")
            src.emit(1, f"{value} = o.{spec.name}")
            src.emit(1, f"if {value} != {default}:")
            buffer = src.tmp("b")
            src.emit(2, f"{buffer} = bytearray()")
            what = f"{cls.__name__}.{spec.name}"
            _enc_value(src, 2, buffer, value, spec.type, version, flexible, spec.nullable_in(version), what)
            src.emit(2, f"_t = [({spec.tag}, {buffer})] if _t is None else [*_t, ({spec.tag}, {buffer})]")
        src.emit(1, "if o._unknown_tags:")
        src.emit(2, "_t = [*(_t or ()), *o._unknown_tags]")
        src.emit(1, "if _t is None:")
        src.emit(2, "out.append(0)")
        src.emit(1, "else:")
        src.emit(2, "_write_tags(out, _t)")
    elif len(src.lines) == 1:
        src.emit(1, "pass")
    encode: Encoder = src.build("encode", f"<encode {cls.__name__} v{version}>")
    return encode


# ---------------------------------------------------------------------------------------------- decoding


def _dec_uvarint(src: _Source, ind: int, name: str) -> None:
    """Read an unsigned varint into ``name``, the one-byte case inline."""
    src.emit(ind, f"{name} = buf[pos]")
    src.emit(ind, f"if {name} < 128:")
    src.emit(ind + 1, "pos += 1")
    src.emit(ind, "else:")
    src.emit(ind + 1, f"{name}, pos = _ruv(buf, pos)")


def _dec_length(src: _Source, ind: int, name: str, flexible: bool, wide: bool) -> None:
    """Read a length or count into ``name``; null is any negative value."""
    if flexible:
        _dec_uvarint(src, ind, name)
        src.emit(ind, f"{name} -= 1")
    else:
        src.emit(ind, f"{name}, = {'_I32' if wide else '_I16'}.unpack_from(buf, pos)")
        src.emit(ind, f"pos += {4 if wide else 2}")


def _dec_null(src: _Source, ind: int, target: str, nullable: bool, what: str) -> None:
    if nullable:
        src.emit(ind, f"{target} = None")
    else:
        src.emit(ind, f"raise _bad_null({what!r})")


def _dec_value(
    src: _Source, ind: int, target: str, type_: FieldType, version: int, flexible: bool, nullable: bool, what: str
) -> None:
    if isinstance(type_, Primitive):
        if type_.code is not None:
            src.emit(ind, f"{target}, = _S_{type_.name}.unpack_from(buf, pos)")
            src.emit(ind, f"pos += {type_.min_size}")
            return
        end = src.tmp("end")
        if type_ is UUID:
            src.emit(ind, f"{end} = pos + 16")
            src.emit(ind, f"if {end} > blen:")
            src.emit(ind + 1, f"raise _trunc({what!r}, 16, blen - pos)")
            src.emit(ind, f"{target} = _uuid_from(buf[pos:{end}])")
            src.emit(ind, f"pos = {end}")
            return
        length = src.tmp("n")
        _dec_length(src, ind, length, flexible, type_ is not STRING)
        src.emit(ind, f"if {length} < 0:")
        _dec_null(src, ind + 1, target, nullable, what)
        src.emit(ind, "else:")
        src.emit(ind + 1, f"{end} = pos + {length}")
        src.emit(ind + 1, f"if {end} > blen:")
        src.emit(ind + 2, f"raise _trunc({what!r}, {length}, blen - pos)")
        if type_ is STRING:
            src.emit(ind + 1, f"{target} = str(buf[pos:{end}], 'utf-8')")
        elif type_ is RECORDS:
            # A view, not a copy: a fetch response is mostly its record sets, decoded straight from the frame.
            src.emit(ind + 1, f"{target} = buf[pos:{end}]")
        else:
            src.emit(ind + 1, f"{target} = bytes(buf[pos:{end}])")
        src.emit(ind + 1, f"pos = {end}")
    elif isinstance(type_, Array):
        count = src.tmp("n")
        _dec_length(src, ind, count, flexible, True)
        src.emit(ind, f"if {count} < 0:")
        _dec_null(src, ind + 1, target, nullable, what)
        src.emit(ind, "else:")
        element = type_.element
        size = _min_size(element, flexible)
        src.emit(ind + 1, f"if {count} * {size} > blen - pos:")
        src.emit(ind + 2, f"raise _trunc({what!r}, {count} * {size}, blen - pos)")
        if _fixed(element):
            assert isinstance(element, Primitive)
            src.emit(ind + 1, f"{target} = _unpack_array({element.code!r}, {count}, buf, pos)")
            src.emit(ind + 1, f"pos += {count} * {size}")
            return
        items, item = src.tmp("a"), src.tmp("x")
        src.emit(ind + 1, f"{items} = []")
        src.emit(ind + 1, f"for _ in range({count}):")
        if isinstance(element, Primitive):
            _dec_value(src, ind + 2, item, element, version, flexible, False, what + "[]")
        else:
            decode = src.ref(decoder(element, version, flexible), "D")
            src.emit(ind + 2, f"{item}, pos = {decode}(buf, pos)")
        src.emit(ind + 2, f"{items}.append({item})")
        src.emit(ind + 1, f"{target} = {items}")
    else:
        decode = src.ref(decoder(type_, version, flexible), "D")
        if nullable:
            flag = src.tmp("f")
            src.emit(ind, f"{flag}, = _I8.unpack_from(buf, pos)")
            src.emit(ind, "pos += 1")
            src.emit(ind, f"if {flag} < 0:")
            src.emit(ind + 1, f"{target} = None")
            src.emit(ind, "else:")
            src.emit(ind + 1, f"{target}, pos = {decode}(buf, pos)")
        else:
            src.emit(ind, f"{target}, pos = {decode}(buf, pos)")


def _compile_decoder(cls: type[Struct], version: int, flexible: bool) -> Decoder:
    src = _Source()
    src.emit(0, "def decode(buf, pos):")
    src.emit(1, "blen = len(buf)")
    src.emit(1, f"o = _new({src.ref(cls, 'C')})")
    regular = [spec for spec in cls._fields if spec.present(version)]
    index = 0
    while index < len(regular):
        run = []
        while index < len(regular) and _fixed(regular[index].type):
            run.append(regular[index])
            index += 1
        if len(run) > 1:
            packer = _run_struct(run)
            targets = ", ".join("o." + spec.name for spec in run)
            src.emit(1, f"{targets} = {src.ref(packer, 'P')}.unpack_from(buf, pos)")
            src.emit(1, f"pos += {packer.size}")
            continue
        if not run:
            run.append(regular[index])
            index += 1
        spec = run[0]
        what = f"{cls.__name__}.{spec.name}"
        _dec_value(src, 1, f"o.{spec.name}", spec.type, version, flexible, spec.nullable_in(version), what)
    for spec in cls._fields:
        if not spec.present(version):
            src.emit(1, f"o.{spec.name} = {_default_expr(src, spec)}")
    if flexible:
        _dec_tags(src, cls, version)
    else:
        src.emit(1, "o._unknown_tags = None")
    src.emit(1, "return o, pos")
    decode: Decoder = src.build("decode", f"<decode {cls.__name__} v{version}>")
    return decode


def _dec_tags(src: _Source, cls: type[Struct], version: int) -> None:
    src.emit(1, "o._unknown_tags = None")
    _dec_uvarint(src, 1, "_nt")
    src.emit(1, "if _nt > blen - pos:")
    src.emit(2, "raise _trunc('tagged fields', _nt, blen - pos)")
    src.emit(1, "for _ in range(_nt):")
    _dec_uvarint(src, 2, "_tag")
    _dec_uvarint(src, 2, "_sz")
    src.emit(2, "_tend = pos + _sz")
    src.emit(2, "if _tend > blen:")
    src.emit(3, "raise _trunc('tagged field', _sz, blen - pos)")
    keyword = "if"
    for spec in sorted((spec for spec in cls._fields if spec.tagged_in(version)), key=lambda spec: spec.tag or 0):
        what = f"{cls.__name__}.{spec.name}"
        src.emit(2, f"{keyword} _tag == {spec.tag}:")
        _dec_value(src, 3, f"o.{spec.name}", spec.type, version, True, spec.nullable_in(version), what)
        src.emit(3, "if pos != _tend:")
        src.emit(4, f"raise _tag_size({what!r})")
        keyword = "elif"
    body = 2
    if keyword == "elif":
        src.emit(2, "else:")
        body = 3
    src.emit(body, "if o._unknown_tags is None:")
    src.emit(body + 1, "o._unknown_tags = []")
    src.emit(body, "o._unknown_tags.append((_tag, bytes(buf[pos:_tend])))")
    src.emit(body, "pos = _tend")


# ---------------------------------------------------------------------------------------------- entry points


def _codec(cls: type[Struct], version: int, flexible: bool) -> tuple[Encoder, Decoder]:
    key = (version, flexible)
    pair = cls._codecs.get(key)
    if pair is None:
        pair = (_compile_encoder(cls, version, flexible), _compile_decoder(cls, version, flexible))
        cls._codecs[key] = pair
    return pair


def encoder(cls: type[Struct], version: int, flexible: bool) -> Encoder:
    return _codec(cls, version, flexible)[0]


def decoder(cls: type[Struct], version: int, flexible: bool) -> Decoder:
    return _codec(cls, version, flexible)[1]


def encode_into(out: bytearray, obj: Struct, version: int, flexible: bool) -> None:
    """Append ``obj`` at ``version``; wrong Python values become TypeError or ValueError naming the struct."""
    try:
        encoder(type(obj), version, flexible)(obj, out)
    except (struct.error, OverflowError) as exc:
        raise ValueError(f"cannot encode {type(obj).__name__} v{version}: {exc}") from exc
    except (AttributeError, TypeError) as exc:
        raise TypeError(f"cannot encode {type(obj).__name__} v{version}: {exc}") from exc


def decode_from(cls: type[S], data: p.Buffer, pos: int, version: int, flexible: bool) -> S:
    """Decode ``cls`` from ``data[pos:]``, which it must fill exactly; malformed input is a ProtocolError."""
    buf = data if isinstance(data, memoryview) else memoryview(data)
    try:
        obj, end = decoder(cls, version, flexible)(buf, pos)
    except p.DECODE_ERRORS as exc:
        raise ProtocolError(f"malformed {cls.__name__} v{version}: {exc}") from exc
    if end != len(buf):
        raise ProtocolError(f"{len(buf) - end} unexpected bytes after {cls.__name__} v{version}")
    result: S = obj
    return result
