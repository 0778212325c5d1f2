"""Our message declarations against Kafka's own JSON definitions, version by version.

For every declared API and every version we declare, the fields on the wire must match Kafka's: names (in
snake_case), types, order, nullability, tagged fields with their tags, defaults, and nested structs. Our
version range must be exactly the range Kafka declares valid (from the Kafka 4 floor up to the newest stable
version of the pinned broker), and the flexible versions must agree.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka_definitions import (
    PRIMITIVES,
    Definition,
    clients_jar,
    contains,
    definitions,
    first_flexible,
    jdk,
    parse_range,
    pinned_kafka_version,
    snake_case,
    stable_versions,
)
from unit.test_kafka_protocol_roundtrip import populate

from kafkawire.protocol import encode_body, messages
from kafkawire.protocol.schema import _MISSING, LATEST, Array, FieldSpec, Message, Primitive, Struct

Layout = list[tuple[Any, ...]]

_TYPE_DEFAULTS: dict[str, Any] = {
    "bool": False,
    "string": "",
    "bytes": b"",
    "uuid": uuid.UUID(int=0),
    "records": None,
    "float64": 0.0,
}

# Constructor defaults we choose differently from Kafka on purpose. Such a field exists in every version and is
# not tagged, so its default never decides what goes on the wire.
DELIBERATE_DEFAULTS: dict[tuple[str, str], Any] = {
    # Kafka's generated default is 0, a broker id; a client must send -1 ("not a replica").
    ("ListOffsetsRequest", "replica_id"): -1,
}

CLASSES: list[type[Message]] = [cls for pair in messages.APIS for cls in pair]
CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for cls in CLASSES
    for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
]


def _kafka_default(field: dict[str, Any], type_name: str) -> Any:
    if type_name.startswith("[]"):
        return None if field.get("default") == "null" else "[]"
    if type_name not in PRIMITIVES:
        return None if field.get("default") == "null" else "struct"
    if "default" not in field:
        return _TYPE_DEFAULTS.get(type_name, 0)
    raw = str(field["default"])
    if raw == "null":
        return None
    if type_name == "bool":
        return raw.lower() == "true"
    if type_name == "float64":
        return float(raw)
    if type_name in ("string", "bytes", "uuid", "records"):
        return raw
    return int(raw, 0)


def kafka_layout(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]], version: int) -> Layout:
    """The fields of a Kafka definition that are on the wire at ``version``, regular ones then tagged."""
    regular: Layout = []
    tagged: Layout = []
    for field in fields:
        if not contains(field["versions"], version):
            continue
        type_name: str = field["type"]
        element = type_name.removeprefix("[]")
        nested = None
        kind = type_name
        if element not in PRIMITIVES:
            nested = kafka_layout(field.get("fields") or common[element], common, version)
            kind = "[]struct" if type_name.startswith("[]") else "struct"
        entry = (
            snake_case(field["name"]),
            kind,
            contains(field.get("nullableVersions"), version),
            _kafka_default(field, type_name),
            nested,
        )
        if contains(field.get("taggedVersions"), version):
            tagged.append((field["tag"], *entry))
        else:
            regular.append(entry)
    return regular + sorted(tagged, key=lambda entry: entry[0])


def _our_kind(spec: FieldSpec) -> tuple[str, type[Struct] | None]:
    if isinstance(spec.type, Primitive):
        return spec.type.name, None
    if isinstance(spec.type, Array):
        element = spec.type.element
        if isinstance(element, Primitive):
            return f"[]{element.name}", None
        return "[]struct", element
    return "struct", spec.type


def _our_default(spec: FieldSpec, kind: str) -> Any:
    if kind in ("[]struct", "struct") or kind.startswith("[]"):
        if spec.default is _MISSING:
            return "[]" if kind.startswith("[]") else "struct"
        return spec.default
    return spec.default


def our_layout(cls: type[Struct], version: int) -> Layout:
    regular: Layout = []
    tagged: Layout = []
    for spec in cls._fields:
        kind, nested_cls = _our_kind(spec)
        nested = None if nested_cls is None else our_layout(nested_cls, version)
        entry = (spec.name, kind, spec.nullable_in(version), _our_default(spec, kind), nested)
        if spec.tagged_in(version):
            tagged.append((spec.tag, *entry))
        elif spec.present(version):
            regular.append(entry)
    return regular + sorted(tagged, key=lambda entry: entry[0])


def _definition(cls: type[Message]) -> Definition:
    found = definitions().get(cls.__name__)
    assert found is not None, f"Kafka has no definition named {cls.__name__}"
    return found


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_version_ranges(cls: type[Message]) -> None:
    definition = _definition(cls)
    assert definition["apiKey"] == cls.API_KEY
    assert definition["type"] == ("request" if cls.__name__.endswith("Request") else "response")
    request = definitions().get(cls.__name__.removesuffix("Response") + "Request")
    assert stable_versions(definition, request) == (cls.MIN_VERSION, cls.MAX_VERSION)
    flexible = first_flexible(definition)
    assert (LATEST + 1 if flexible is None else flexible) == cls.FLEXIBLE_VERSION


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_field_layout(cls: type[Message], version: int) -> None:
    definition = _definition(cls)
    common = {struct["name"]: struct["fields"] for struct in definition.get("commonStructs", [])}
    expected = kafka_layout(definition["fields"], common, version)
    for index, entry in enumerate(expected):
        deliberate = DELIBERATE_DEFAULTS.get((cls.__name__, entry[0]))
        if deliberate is not None:
            expected[index] = (*entry[:3], deliberate, *entry[4:])
    assert our_layout(cls, version) == expected


def test_every_declared_api_pairs_request_and_response() -> None:
    keys = [request.API_KEY for request, _ in messages.APIS]
    assert len(keys) == len(set(keys))
    for request, response in messages.APIS:
        assert request.API_KEY == response.API_KEY
        assert (request.MIN_VERSION, request.MAX_VERSION) == (response.MIN_VERSION, response.MAX_VERSION)


def test_required_apis_declared() -> None:
    required = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 24, 25, 26, 28, 32, 36, 37}
    required |= {60, 68}
    required |= {42, 76, 77, 78, 79, 90, 91, 92}  # DeleteGroups and the share group APIs (KIP-932)
    assert required <= {request.API_KEY for request, _ in messages.APIS}


def test_pinned_version_range_parsing() -> None:
    assert parse_range("3+") == (3, 0x7FFF)
    assert parse_range("0-2") == (0, 2)
    assert parse_range("none") is None


# Reads each body with Kafka's generated message classes, writes it back, and reports any difference: the
# bytes we produce must be exactly the bytes Kafka itself would produce for the same values.
_JAVA_CHECK = """
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.*;

public class RewriteCheck {
  public static void main(String[] args) throws Exception {
    int failures = 0;
    for (String line : Files.readAllLines(Paths.get(args[0]))) {
      String[] p = line.split(" ");
      short key = Short.parseShort(p[0]);
      short version = Short.parseShort(p[2]);
      byte[] ours = p.length > 4 ? HexFormat.of().parseHex(p[4]) : new byte[0];
      ApiMessageType type = ApiMessageType.fromApiKey(key);
      ApiMessage message = p[1].equals("request") ? type.newRequest() : type.newResponse();
      try {
        ByteBuffer in = ByteBuffer.wrap(ours);
        message.read(new ByteBufferAccessor(in), version);
        if (in.hasRemaining()) throw new IllegalStateException(in.remaining() + " bytes not read");
        ByteBuffer out = MessageUtil.toByteBufferAccessor(message, version).buffer();
        byte[] theirs = new byte[out.remaining()];
        out.get(theirs);
        if (!Arrays.equals(theirs, ours)) {
          failures++;
          System.out.println(line + " -> kafka writes " + HexFormat.of().formatHex(theirs));
        }
      } catch (RuntimeException e) {
        failures++;
        System.out.println(line + " -> " + e);
      }
    }
    System.exit(failures == 0 ? 0 : 1);
  }
}
"""


def test_kafka_reads_and_rewrites_our_bytes(tmp_path: Path) -> None:
    java, javac = jdk("the conformance check")
    lines = []
    for cls in CLASSES:
        kind = "request" if cls.__name__.endswith("Request") else "response"
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            for variant, message in (
                ("default", cls()),
                ("full", populate(cls, version, nulls=False)),
                ("nulls", populate(cls, version, nulls=True)),
            ):
                lines.append(f"{cls.API_KEY} {kind} {version} {variant} {encode_body(message, version).hex()}")
    (tmp_path / "cases.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "RewriteCheck.java").write_text(_JAVA_CHECK)
    jar = str(clients_jar(pinned_kafka_version()))
    subprocess.run([javac, "-cp", jar, "-d", str(tmp_path), str(tmp_path / "RewriteCheck.java")], check=True)
    result = subprocess.run(
        [java, "-cp", f"{jar}:{tmp_path}", "RewriteCheck", str(tmp_path / "cases.txt")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
