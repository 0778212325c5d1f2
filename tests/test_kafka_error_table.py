"""kafkawire's error table against Kafka's own list, and the classes made from it.

Kafka's list is the ``Errors`` enum of the pinned kafka-clients jar: a small Java program prints every code with
its name and whether its exception is a ``RetriableException`` / an ``InvalidMetadataException``. Every code
Kafka lists must have a row with the same name and traits; a row Kafka does not list must be one of
``NOT_IN_PINNED_KAFKA``. The classes must follow the table (bases, docstring, module, flags), the type checker's
declarations in errors.py must be the ones the table writes, and every error must survive pickling.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from kafka_definitions import M2, clients_jar, jdk, pinned_kafka_version

from kafkawire import errors
from kafkawire.error_table import NOT_IN_PINNED_KAFKA, TABLE, ErrorCode, Trait, declarations

ERRORS_PY = Path(errors.__file__)

_JAVA_LIST = """
import org.apache.kafka.common.errors.InvalidMetadataException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class ErrorList {
  public static void main(String[] args) {
    for (Errors error : Errors.values()) {
      if (error == Errors.NONE) continue;
      Throwable exception = error.exception();
      System.out.println(error.code() + " " + error.name() + " " + (exception instanceof RetriableException)
          + " " + (exception instanceof InvalidMetadataException));
    }
  }
}
"""


class KafkaCode(NamedTuple):
    """One row of Kafka's ``Errors`` enum."""

    code: int
    name: str
    retriable: bool
    refresh_metadata: bool


def _slf4j_jar(version: str) -> Path:
    """The slf4j-api jar kafka-clients declares (``Errors`` logs through it), from ~/.m2 or fetched by Maven."""
    pom = clients_jar(version).with_suffix(".pom")
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    found = None
    for dependency in ElementTree.parse(pom).getroot().iterfind(".//m:dependency", namespace):
        if dependency.findtext("m:artifactId", namespaces=namespace) == "slf4j-api":
            found = dependency.findtext("m:version", namespaces=namespace)
    if not found:
        pytest.fail(f"{pom} declares no slf4j-api")
    jar = M2 / "org" / "slf4j" / "slf4j-api" / found / f"slf4j-api-{found}.jar"
    if not jar.is_file():
        mvn = shutil.which("mvn")
        if mvn is None:
            pytest.fail(f"{jar} is missing and Maven (mvn) is not installed to fetch it")
        artifact = f"-Dartifact=org.slf4j:slf4j-api:{found}"
        subprocess.run([mvn, "-B", "-q", "dependency:get", artifact, "-Dtransitive=false"], check=True, timeout=600)
    return jar


@pytest.fixture(scope="module")
def kafka_codes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, KafkaCode]:
    """Every error code of the pinned kafka-clients but NONE, as its ``Errors`` enum gives it."""
    java, javac = jdk("reading Kafka's error list")
    version = pinned_kafka_version()
    classpath = f"{clients_jar(version)}:{_slf4j_jar(version)}"
    build = tmp_path_factory.mktemp("kafka-errors")
    source = build / "ErrorList.java"
    source.write_text(_JAVA_LIST)
    subprocess.run([javac, "-cp", classpath, "-d", str(build), str(source)], check=True, timeout=120)
    run = subprocess.run(
        [java, "-cp", f"{classpath}:{build}", "ErrorList"], capture_output=True, text=True, check=True, timeout=120
    )
    codes = {}
    for line in run.stdout.splitlines():
        code, name, retriable, refresh_metadata = line.split()
        codes[int(code)] = KafkaCode(int(code), name, retriable == "true", refresh_metadata == "true")
    return codes


def differences(table: tuple[ErrorCode, ...], kafka: dict[int, KafkaCode]) -> list[str]:
    """What the table gets wrong against Kafka's list; empty when they agree."""
    problems = []
    rows = {row.code: row for row in table}
    if len(rows) != len(table):
        problems.append("a code has more than one row")
    for code, theirs in sorted(kafka.items()):
        row = rows.get(code)
        if row is None:
            problems.append(f"Kafka's {code} {theirs.name} has no row")
            continue
        ours = KafkaCode(row.code, row.name, row.retriable, row.refresh_metadata)
        if ours != theirs:
            problems.append(f"row {ours} is {theirs} in Kafka")
    beyond = {code for code in rows if code not in kafka}
    if beyond != NOT_IN_PINNED_KAFKA:
        problems.append(f"codes Kafka does not list: {sorted(beyond)}; declared: {sorted(NOT_IN_PINNED_KAFKA)}")
    if beyond and kafka and min(beyond) <= max(kafka):
        problems.append(f"codes {sorted(beyond)} are not all newer than Kafka's highest, {max(kafka)}")
    return problems


def test_the_table_is_kafkas_list(kafka_codes: dict[int, KafkaCode]) -> None:
    assert len(kafka_codes) > 130, "the Java program printed too little of Kafka's list"
    assert differences(TABLE, kafka_codes) == []


def _with(which: int, **changes: Any) -> tuple[ErrorCode, ...]:
    return tuple(row._replace(**changes) if row.code == which else row for row in TABLE)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        pytest.param(_with(6, name="NOT_LEADER_FOR_PARTITION"), "in Kafka", id="wrong-name"),
        pytest.param(_with(6, traits=Trait.REFRESH_METADATA), "in Kafka", id="wrong-retriable"),
        pytest.param(_with(6, traits=Trait.RETRIABLE), "in Kafka", id="wrong-refresh-metadata"),
        pytest.param(_with(133, code=137), "has no row", id="wrong-code"),
        pytest.param(tuple(row for row in TABLE if row.code != 100), "has no row", id="missing-code"),
    ],
)
def test_the_check_catches_a_wrong_row(
    table: tuple[ErrorCode, ...], expected: str, kafka_codes: dict[int, KafkaCode]
) -> None:
    problems = differences(table, kafka_codes)
    assert problems and any(expected in problem for problem in problems), problems


def test_the_type_checkers_declarations_are_the_tables() -> None:
    text = ERRORS_PY.read_text()
    begin, end = "    # BEGIN DECLARATIONS\n", "    # END DECLARATIONS\n"
    written = text[text.index(begin) + len(begin) : text.index(end)]
    assert written == declarations(), "run `python kafkawire/error_table.py` and put its output in errors.py"


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.name)
def test_each_class_follows_its_row(row: ErrorCode) -> None:
    cls = getattr(errors, row.class_name)
    assert errors.ERRORS[row.code] is cls
    assert row.class_name in errors.__all__
    assert cls.__module__ == "kafkawire.errors" and cls.__qualname__ == cls.__name__ == row.class_name
    assert cls.__doc__ == row.description
    assert tuple(base.__name__ for base in cls.__bases__) == row.base_names()
    assert cls.error_code == row.code
    assert cls.retriable == row.retriable
    assert isinstance(cls(), errors.RetriableBrokerError if row.retriable else errors.FatalBrokerError)
    assert cls.refresh_metadata == row.refresh_metadata
    assert cls.refresh_coordinator == row.refresh_coordinator


def test_the_table_lists_each_code_and_class_once() -> None:
    assert len({row.code for row in TABLE}) == len(TABLE)
    assert len({row.class_name for row in TABLE}) == len(TABLE)
    assert len(errors.ERRORS) == len(TABLE)


def _samples() -> list[BaseException]:
    made: list[BaseException] = [errors.error_for(code, f"broker says {code}") for code in errors.ERRORS]
    made += [errors.error_for(code) for code in (3, 22, 58)]
    made += [errors.UnknownKafkaError(31000, "newer broker"), errors.UnknownKafkaError(31001)]
    return made


@pytest.mark.parametrize("error", _samples(), ids=lambda error: type(error).__name__)
def test_errors_survive_pickling(error: BaseException) -> None:
    error.add_note("seen by the sender")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert copy.args == error.args and str(copy) == str(error)
    assert vars(copy) == vars(error)
