"""Kafka's own message definitions, read from the kafka-clients jar of the pinned broker version.

The JSON files under ``common/message/`` in that jar are the reference our declarations are tested against.
The jar is resolved with Maven into ~/.m2 (skipped when it is already there); nothing else is downloaded.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KAFKA_POM = ROOT / "brokers" / "maven" / "kafka" / "pom.xml"
M2 = Path.home() / ".m2" / "repository"
PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes"}
PRIMITIVES |= {"records"}

Definition = dict[str, Any]


def pinned_kafka_version() -> str:
    """The ``kafka_2.13`` version that brokers/ runs."""
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.parse(KAFKA_POM).getroot()
    for dependency in root.iterfind(".//m:dependency", namespace):
        if dependency.findtext("m:artifactId", namespaces=namespace) == "kafka_2.13":
            version = dependency.findtext("m:version", namespaces=namespace)
            if version:
                return version.strip()
    raise LookupError(f"no kafka_2.13 dependency in {KAFKA_POM}")


def clients_jar(version: str) -> Path:
    """The kafka-clients jar of ``version``, fetched with Maven unless it is already in ~/.m2."""
    jar = M2 / "org" / "apache" / "kafka" / "kafka-clients" / version / f"kafka-clients-{version}.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(f"{jar} is missing and Maven (mvn) is not installed to fetch it")
    artifact = f"-Dartifact=org.apache.kafka:kafka-clients:{version}"
    subprocess.run(
        [mvn, "-B", "-q", "dependency:get", artifact, "-Dtransitive=false"],
        check=True,
        timeout=600,
    )
    if not jar.is_file():
        raise RuntimeError(f"Maven finished but {jar} does not exist")
    return jar


def _strip_comments(text: str) -> str:
    # The files are JSON plus whole-line // comments.
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


@functools.cache
def definitions(version: str | None = None) -> dict[str, Definition]:
    """Every message definition in the jar, by name (``MetadataRequest``, ``RequestHeader``, ...)."""
    jar = clients_jar(version or pinned_kafka_version())
    found: dict[str, Definition] = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                definition = json.loads(_strip_comments(archive.read(name).decode()))
                found[definition["name"]] = definition
    return found


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``, ``V3AndBelowTopics`` -> ``v3_and_below_topics``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def parse_range(spec: str | None) -> tuple[int, int] | None:
    """A Kafka version range (``"3+"``, ``"0-2"``, ``"5"``, ``"none"``) as an inclusive pair."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def contains(spec: str | None, version: int) -> bool:
    bounds = parse_range(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]


def stable_versions(definition: Definition, request: Definition | None = None) -> tuple[int, int]:
    """validVersions without a last version that Kafka marks unstable (brokers do not offer it).

    Only requests carry the mark; pass a response's request as ``request``.
    """
    bounds = parse_range(definition["validVersions"])
    assert bounds is not None
    low, high = bounds
    if (request or definition).get("latestVersionUnstable"):
        high -= 1
    return low, high


def first_flexible(definition: Definition) -> int | None:
    bounds = parse_range(definition.get("flexibleVersions"))
    return None if bounds is None else bounds[0]


def jdk(purpose: str) -> tuple[str, str]:
    """``java`` and ``javac`` of the JDK the Kafka broker runs on; a JRE without ``javac`` fails the test
    (``purpose`` says what needed it), as a missing broker does."""
    import pytest

    from mqwire.testing.java import find_java

    java = Path(find_java("kafka").executable)
    beside = java.with_name("javac")
    javac = str(beside) if beside.is_file() else shutil.which("javac")
    if javac is None:
        pytest.fail(f"no javac next to {java} or on PATH: {purpose} needs a JDK, not only a JRE")
    return str(java), javac
